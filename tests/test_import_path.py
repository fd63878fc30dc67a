"""The current folder is never on rfbench's import path, and verify refuses a HOME or an import path entry in the
verify root.

Run from a report folder with an empty ``PYTHONPATH`` entry (``export PYTHONPATH=$PYTHONPATH:/opt/lib`` with
the variable unset leaves ``:/opt/lib``), the console script imported a ``typer.py`` shipped beside the report,
which printed a MATCH for a forged report. ``HOME`` in the report's folder made Matplotlib read a font cache
shipped with it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rfbench._entry import drop_current_folder
from rfbench.errors import ValidationError
from rfbench.report import verify as V

SCRIPT = Path(sys.executable).with_name("rfbench")


@pytest.mark.skipif(not SCRIPT.exists(), reason="the console script is not installed beside this interpreter")
@pytest.mark.parametrize("pythonpath", [":/nonexistent-lib", ".", "/nonexistent-lib::"])
def test_the_console_script_never_imports_from_the_current_folder(tmp_path, pythonpath):
    (tmp_path / "typer.py").write_text("import sys\nprint('PLANTED')\nsys.exit(0)\n")
    env = dict(os.environ, PYTHONPATH=pythonpath)
    done = subprocess.run([str(SCRIPT), "--version"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert "PLANTED" not in done.stdout, done.stdout
    assert done.returncode == 0 and done.stdout.startswith("rfbench "), (done.stdout, done.stderr)


def test_drop_current_folder_keeps_what_is_not_a_folder_here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    hook = "__editable__.rfbench-0.1.0.finder.__path_hook__"  # an editable install's entry: no folder
    path = ["", "sub", str(tmp_path), "/usr/lib/python3.11", hook, str(tmp_path / "sub")]
    assert drop_current_folder(path) == ["/usr/lib/python3.11", hook, str(tmp_path / "sub")]


def test_verify_refuses_a_home_in_the_reports_folder(tmp_path):
    folder = tmp_path / "report"
    (folder / "d").mkdir(parents=True)
    for home in (folder, folder / "d"):
        with pytest.raises(ValidationError, match="HOME"):
            V.check_loader_environment(tmp_path, {"HOME": str(home)}, path=[], folder=folder)
    V.check_loader_environment(tmp_path, {"HOME": str(tmp_path)}, path=[], folder=folder)
    V.check_loader_environment("/", {"HOME": str(tmp_path)}, path=[], folder=folder)  # a root of / holds every home


def test_verify_refuses_an_import_path_entry_in_the_reports_folder(tmp_path):
    folder = tmp_path / "report"
    (folder / "pp").mkdir(parents=True)
    with pytest.raises(ValidationError, match="import path"):
        V.check_loader_environment(tmp_path, {}, path=["/usr/lib/python3.11", str(folder / "pp")], folder=folder)
    V.check_loader_environment(tmp_path / "root", {}, path=["/usr/lib/python3.11", str(tmp_path)],
                               folder=tmp_path / "root" / "report")
    inside = [p for p in sys.path if p and os.path.isabs(p)]
    V.check_loader_environment("/", {}, path=inside, folder=sys.prefix)  # an environment there is the verifier's


def _run(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **env), capture_output=True, text=True,
                          timeout=300)


def test_a_numba_variable_numba_refuses_is_named_not_blamed_on_an_input():
    """NUMBA_NUM_THREADS=0 made numba's import raise ValueError, which verify reported as 'the report or a file
    of its chain is malformed'."""
    done = _run("from rfbench.errors import ValidationError\n"
                "try:\n    import rfbench._jit\nexcept ValidationError as exc:\n    print('REFUSED', exc)\n",
                NUMBA_NUM_THREADS="0")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("REFUSED numba refused the settings") and "NUMBA_NUM_THREADS" in done.stdout


def test_a_misspelt_matplotlib_backend_variable_does_not_stop_the_drawing():
    """rfbench draws with Agg into files: MPLBACKEND=nonexistent made `score --plots` a traceback."""
    pytest.importorskip("matplotlib")
    done = _run("from rfbench.report.plots import have_matplotlib, plot_engine\nprint(have_matplotlib(), "
                "plot_engine())", MPLBACKEND="nonexistent_backend")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("True matplotlib ")


def test_verify_refuses_an_import_path_entry_anywhere_in_the_verify_root(tmp_path):
    """The folder handed over is the verify root: a ``PYTHONPATH`` entry beside the report's folder (the root
    itself, or a sibling) reached a planted module as surely as one in it."""
    folder = tmp_path / "report"
    (tmp_path / "lib").mkdir()
    folder.mkdir()
    for entry in (tmp_path, tmp_path / "lib"):
        with pytest.raises(ValidationError, match="import path"):
            V.check_loader_environment(tmp_path, {}, path=[str(entry)], folder=folder)


@pytest.mark.parametrize("name", ["PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONPYCACHEPREFIX",
                                  "PYTHONSTARTUP"])
def test_verify_refuses_a_python_start_up_place_in_the_verify_root(tmp_path, monkeypatch, name):
    """A variable with which Python reads code as it starts (a sitecustomize.py on PYTHONPATH, a standard
    library, cached bytecode) naming a place of the verify root is refused by name, whatever the import path
    holds now (the console script has started again isolated, so it holds none of it)."""
    folder = tmp_path / "report"
    (tmp_path / "lib").mkdir()
    folder.mkdir()
    last = f"/usr/lib:{tmp_path}" if name == "PYTHONPATH" else str(tmp_path)
    for value in (str(tmp_path / "lib"), str(folder), last):
        with pytest.raises(ValidationError, match=f"the environment variable {name} names"):
            V.check_loader_environment(tmp_path, {name: value}, path=[], folder=folder)
    monkeypatch.chdir(folder)
    with pytest.raises(ValidationError, match=name):  # relative: from the current folder
        V.check_loader_environment(tmp_path, {name: "."}, path=[], folder=folder)
    V.check_loader_environment(tmp_path / "lib", {name: str(folder)}, path=[], folder=tmp_path / "lib")
    V.check_loader_environment(tmp_path, {name: "/usr/lib/python3"}, path=[], folder=folder)


def test_the_verify_command_refuses_a_pythonpath_beside_the_report(runner, tiny_demo, monkeypatch, tmp_path):
    import shutil

    from rfbench.cli import app

    demo = tmp_path / "d"
    shutil.copytree(tiny_demo, demo)
    (demo / "lib").mkdir()
    monkeypatch.setenv("PYTHONPATH", str(demo / "lib"))
    result = runner.invoke(app, ["verify", str(demo / "gesture" / "report.json"), "--root", str(demo)])
    assert result.exit_code == 2, result.output
    assert "the environment variable PYTHONPATH names" in " ".join(result.output.split())
