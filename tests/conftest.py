"""Shared test fixtures: paths to the optional conformance data, a CLI runner and one tiny demo per session.

Two targets run the suite (README, "Tests"):

- ``make test`` runs every test not marked ``long``, on two workers (pytest-xdist, ``-n 2 --dist loadfile``:
  a test file runs in one worker, so its module-scoped fixtures are built once); it must stay within
  4 minutes on an idle 2-core machine from a fresh clone (a cold Numba cache).
- ``make test-long`` runs the tests marked ``@pytest.mark.long``: the large fuzz, every docs example, the
  real-corpus conformance checks, and any test that takes more than about 5 s on its own.

A new test that takes more than about 5 s (``.venv/bin/python -m pytest --durations=20 tests/test_x.py`` shows
it) goes to the long target: decorate it with ``@pytest.mark.long`` (or set ``pytestmark = pytest.mark.long``
for a whole file of them). Never delete an assertion to make a test fast: make its data smaller, build what
several tests share once in a fixture (``scope="module"`` or ``"session"``, as :func:`tiny_demo` does), or move
it to the long target. A test that reads ``../shared/conformance`` (:func:`conformance_path`) is long too.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: ``../shared`` beside the checkout; ``RFBENCH_SHARED`` points elsewhere (e.g. from a second worktree).
SHARED = Path(os.environ.get("RFBENCH_SHARED") or ROOT.parent / "shared")
CONFORMANCE = SHARED / "conformance"


def conformance_path(*parts: str) -> Path:
    """Path under ../shared/conformance, or skip the test when the folder is absent (a plain clone)."""
    path = CONFORMANCE.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"conformance data not available: {path}")
    return path


@pytest.fixture
def runner():
    from typer.testing import CliRunner

    return CliRunner()


@pytest.fixture(scope="session")
def tiny_demo(tmp_path_factory) -> Path:
    """``rfbench demo --size tiny --out DIR/d`` run once per test session (per worker), returning ``DIR/d``.
    Read-only: a test that changes the demo's files works on a copy (``shutil.copytree``)."""
    import json

    from typer.testing import CliRunner

    from rfbench.cli import app

    home = tmp_path_factory.mktemp("tiny-demo")
    result = CliRunner().invoke(app, ["demo", "--size", "tiny", "--out", str(home / "d"), "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    json.loads(result.stdout)
    return home / "d"
