"""A ``PYTHONPATH`` (or another variable with which Python itself runs code from a place it names) is acted on
before rfbench's first line: a ``sitecustomize.py`` it reached was imported at start-up and installed an import
hook that replaced the command line, so ``rfbench verify`` printed a forged MATCH. The command now starts again at
once in Python's isolated mode, where nothing the first start imported is in effect."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from rfbench import _entry

#: installs an import hook replacing rfbench's command line with one that prints a forged verdict
SITECUSTOMIZE = '''
import importlib.util, sys

class Hook:
    def find_spec(self, name, path=None, target=None):
        if name != "rfbench.cli":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)

            def forged():
                print("FORGED MATCH")
                raise SystemExit(0)

            module.main = forged

        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, Hook())
'''


def _script() -> Path:
    script = Path(sys.executable).parent / "rfbench"
    if not script.is_file():
        pytest.skip("no rfbench console script beside this interpreter")
    return script


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _entry.CODE_ENV}
    env.update(extra)
    return env


@pytest.mark.parametrize("how", ["script", "-m"])
def test_a_sitecustomize_on_pythonpath_does_not_replace_the_command_line(tmp_path, how):
    (tmp_path / "sitecustomize.py").write_text(SITECUSTOMIZE)
    argv = [str(_script())] if how == "script" else [sys.executable, "-m", "rfbench"]
    clean = subprocess.run([*argv, "--version"], env=_env(), capture_output=True, text=True, cwd=tmp_path)
    assert clean.returncode == 0 and clean.stdout.startswith("rfbench ")
    planted = subprocess.run([*argv, "--version"], env=_env(PYTHONPATH=str(tmp_path)), capture_output=True,
                             text=True, cwd=tmp_path)
    assert "FORGED" not in planted.stdout
    assert planted.returncode == 0 and planted.stdout == clean.stdout


def test_a_command_started_again_keeps_its_name_arguments_and_exit_code(tmp_path):
    """Started again isolated, the console script is still ``rfbench`` in its messages, with the same
    arguments and exit code (here: an unknown command, exit 2)."""
    argv = [str(_script()), "no-such-command"]
    clean = subprocess.run(argv, env=_env(), capture_output=True, text=True, cwd=tmp_path)
    again = subprocess.run(argv, env=_env(PYTHONPYCACHEPREFIX=str(tmp_path / "pyc")), capture_output=True,
                           text=True, cwd=tmp_path)
    assert clean.returncode == again.returncode == 2
    assert "Try 'rfbench -h'" in again.stderr and again.stderr == clean.stderr
    assert not (tmp_path / "pyc").exists()  # the isolated start never used the variable's folder


def test_isolated_argv():
    plain = SimpleNamespace(isolated=0, ignore_environment=0)
    python = "/usr/bin/python3"
    script = Path(__file__)  # any existing file stands for the console script
    assert _entry.isolated_argv([str(script), "verify", "r.json"], plain, {}, python) is None
    assert _entry.isolated_argv([str(script), "verify"], plain, {"PYTHONPATH": ""}, python) is None
    assert _entry.isolated_argv([str(script), "verify", "r.json"], plain, {"PYTHONPATH": "/x"}, python) == \
        [python, "-I", str(script), "verify", "r.json"]
    assert _entry.isolated_argv(["/lib/rfbench/__main__.py", "score"], plain, {"PYTHONHOME": "/h"}, python) == \
        [python, "-I", "-m", "rfbench", "score"]
    for name in _entry.CODE_ENV:
        assert _entry.isolated_argv([str(script)], plain, {name: "1"}, python) is not None
    assert _entry.isolated_argv([str(script)], SimpleNamespace(isolated=1, ignore_environment=1),
                                {"PYTHONPATH": "/x"}, python) is None
    assert _entry.isolated_argv([str(script)], SimpleNamespace(isolated=0, ignore_environment=1),
                                {"PYTHONPATH": "/x"}, python) is None
    assert _entry.isolated_argv([str(script)], plain, {"PYTHONPATH": "/x"}, "") is None


def test_python_m_rfbench_imports_nothing_from_the_current_folder(tmp_path):
    """``python -m rfbench`` puts the current folder first on the import path; rfbench._rerun imported ``json``
    before the console-script code dropped it, so a ``json.py`` beside a report ran inside verify."""
    for name in ("json", "signal", "importlib"):
        (tmp_path / f"{name}.py").write_text("import sys\nprint('PLANTED')\nsys.exit(0)\n")
    done = subprocess.run([sys.executable, "-m", "rfbench", "--version"], env=_env(), capture_output=True,
                          text=True, cwd=tmp_path, timeout=120)
    assert "PLANTED" not in done.stdout and done.returncode == 0 and done.stdout.startswith("rfbench ")


@pytest.mark.parametrize("argv, ran", [
    (["python", "-m", "rfbench", "verify"], True), (["python", "-I", "-m", "rfbench"], True),
    (["python", "-mrfbench.datasets.bvp_readers"], True), (["python", "-m", "pytest", "-m", "rfbench"], False),
    (["python", "script.py", "-m", "rfbench"], False), (["python", "-c", "import rfbench", "-m", "rfbench"], False),
    (["python", "-m", "rfbenchx"], False), (["python"], False), (["python", "-W", "error", "-m", "rfbench"], True),
    (["python", "-Xdev", "-Im", "rfbench"], True), (["python", "-Imrfbench"], True), (["python", "-Ic", "x"], False),
    (["python", "-X", "importtime", "-m", "rfbench"], True), (["python", "-W", "-m", "x"], False)])
def test_ran_as_module(argv, ran):
    assert _entry.ran_as_module(argv) is ran


SITECUSTOMIZE_HIDING = '''
import os
os.environ.pop("PYTHONPATH", None)  # so that nothing reading os.environ sees it
''' + SITECUSTOMIZE


def test_a_sitecustomize_that_hides_pythonpath_still_gets_the_command_started_again(tmp_path):
    """The start-up code removes PYTHONPATH from os.environ before rfbench's first line: the environment the
    process was started with still names it (/proc/self/environ), so the command starts again isolated."""
    if not Path("/proc/self/environ").exists():
        pytest.skip("no /proc here")
    (tmp_path / "sitecustomize.py").write_text(SITECUSTOMIZE_HIDING)
    done = subprocess.run([_script(), "--version"], env=_env(PYTHONPATH=str(tmp_path)), capture_output=True,
                          text=True, cwd=tmp_path, timeout=120)
    assert "FORGED" not in done.stdout and done.returncode == 0 and done.stdout.startswith("rfbench "), done.stdout


def test_start_environ_holds_what_the_process_was_started_with(monkeypatch):
    from rfbench._entry import start_environ

    monkeypatch.setenv("RFBENCH_TEST_SET_LATER", "1")
    env = start_environ()
    assert env["RFBENCH_TEST_SET_LATER"] == "1" and env.get("PATH") == os.environ.get("PATH")
