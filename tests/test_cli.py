"""The command line as a user meets it: help, version, python -m, one-line errors."""

from __future__ import annotations

import subprocess
import sys

from rfbench import __version__
from rfbench.cli import app


def test_version(runner):
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"rfbench {__version__}"


def test_help_short_and_long(runner):
    for flag in ("-h", "--help"):
        result = runner.invoke(app, [flag])
        assert result.exit_code == 0, result.output
        assert "Exit codes" in result.output


def test_unknown_command_is_usage_error(runner):
    result = runner.invoke(app, ["no-such-command"])
    assert result.exit_code == 2


def test_python_dash_m_runs_as_subprocess():
    proc = subprocess.run([sys.executable, "-m", "rfbench", "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "parse" in proc.stdout


def test_help_does_not_import_numpy_or_numba():
    code = "import sys; from rfbench.cli import app; print('numpy' in sys.modules, 'numba' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "False"]


def test_the_progress_bar_shows_on_a_terminal_only(monkeypatch, capsys):
    """One Bar serves every command: drawn on a terminal's stderr, silent when piped, for --json, or for one
    unit of work; its total may come later (ingest learns it after walking the tree)."""
    import sys

    from rfbench.commands._progress import Bar

    with Bar("piped") as bar:
        bar.start(10)
        assert bar._bar is None
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    with Bar("json", enabled=False) as bar:
        bar.start(10)
        assert bar._bar is None
    with Bar("one") as bar:
        bar.start(1)
        assert bar._bar is None
    with Bar("steps") as bar:
        bar.start(3)
        assert bar._bar is not None
        bar.step("first")
        bar.detail(2)
        assert bar._bar.tasks[0].description == "first (2)"
        bar.step("second")
        bar.advance(1)
        assert bar._bar.tasks[0].completed == 2
