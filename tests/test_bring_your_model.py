"""docs/bring-your-model.md runs as written: the set-up, then each route — NumPy with rfbench's exporter,
scikit-learn with skl2onnx, PyTorch with torch.onnx.export — in a folder of its own, each only when its packages
are installed (the sklearn and torch extras are optional), each through predict, score --rows and verify."""

from __future__ import annotations

import importlib.util

import pytest

import readme_runner as rr

PAGE = rr.ROOT / "docs" / "bring-your-model.md"
ROUTES = {"NumPy": ("onnx", "onnxruntime"), "scikit-learn": ("sklearn", "skl2onnx", "onnxruntime"),
          "PyTorch": ("torch", "onnxscript", "onnxruntime")}


def _sections() -> tuple[str, dict[str, str]]:
    """The page before its first route, and each route's section by the first word of its heading."""
    text = PAGE.read_text(encoding="utf-8")
    parts = text.split("\n## ")
    setup = [parts[0]] + ["## " + p for p in parts[1:] if p.split()[0].rstrip(",") not in ROUTES]
    routes = {p.split()[0].rstrip(","): "## " + p for p in parts[1:] if p.split()[0].rstrip(",") in ROUTES}
    return "\n".join(setup), routes


def test_the_page_has_the_three_routes():
    _, routes = _sections()
    assert set(routes) == set(ROUTES)


@pytest.mark.long  # each route trains and exports a model, then predicts, scores and verifies (10-60 s)
@pytest.mark.filterwarnings("ignore:.*LeafSpec.*:FutureWarning")  # torch 2.13's exporter, about its own pytree API
@pytest.mark.filterwarnings("ignore::DeprecationWarning:torch.*")
@pytest.mark.filterwarnings("ignore::UserWarning:torch.*")
@pytest.mark.parametrize("route", list(ROUTES))
def test_each_route_runs_as_written(route, tmp_path):
    missing = [m for m in ROUTES[route] if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"the {route} route needs {', '.join(missing)} (an optional extra)")
    setup, routes = _sections()
    page = tmp_path / "page.md"
    page.write_text(setup + "\n" + routes[route], encoding="utf-8")
    (tmp_path / "run").mkdir()
    ran, failures = rr.run_file(page, rr.Session(tmp_path / "run"))
    assert ran >= 8
    assert not failures, "\n\n".join(failures)
