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


def test_a_command_starts_with_its_own_module_only():
    """`rfbench parse ...` imports the parse command's module alone (its start-up; the whole command line is built
    for the root's help and for names to correct)."""
    code = ("import sys\nsys.argv = ['rfbench', 'parse', '--help']\nfrom rfbench.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('rfbench.commands.') and m.count('.') == 2 "
            "and not m.split('.')[-1].startswith('_')), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "['rfbench.commands.parse']"
    assert "Usage: rfbench parse [OPTIONS]" in proc.stdout


def test_the_one_command_line_answers_as_the_whole_one(runner):
    """Help, usage errors and the hint name the same things whichever way a command is reached."""
    from rfbench.cli import _COMMANDS, app_for

    assert app_for(["no-such-command"]) is app and app_for(["--version"]) is app and app_for([]) is app
    for _, name, _ in _COMMANDS:
        for argv in ([name, "--help"], [name, "--no-such-option"]):
            one = runner.invoke(app_for(argv), argv)
            whole = runner.invoke(app, argv)
            assert (one.exit_code, one.stdout, one.stderr) == (whole.exit_code, whole.stdout, whole.stderr), argv
            assert one.exit_code in (0, 2) and (one.stdout or one.stderr)


def test_an_argument_that_takes_several_values_says_so_in_the_usage(runner):
    """`{inputs}...`, not `{inputs}`: a metavar of our own made the pinned Typer drop the dots."""
    import typer.main

    found = []

    def walk(command, path):
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, path + [name])
        for param in command.params:
            if getattr(param, "param_type_name", "") == "argument" and param.nargs != 1:
                found.append((path, param.name, param.required))

    walk(typer.main.get_command(app), [])
    assert (["parse"], "inputs", True) in found
    for path, name, required in found:
        usage = next(line for line in runner.invoke(app, path + ["--help"]).stdout.splitlines() if "Usage:" in line)
        assert (f"{{{name}}}..." if required else f"[{name}]...") in usage, (path, usage)


def test_placeholders_in_help_text_are_shown(runner):
    """Help is rendered as Markdown, where a bare `<date>` is an HTML tag and vanishes: `ingest widar --help`
    showed `CSI///-----r.dat`. Every `<name>` written in a command's or option's help must reach the screen."""
    import re

    import typer.main

    missing = []

    def walk(command, path):
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, path + [name])
        texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
        wanted = {m for t in texts for m in re.findall(r"<[A-Za-z_][\w.-]*>", t)}
        if wanted:
            shown = runner.invoke(app, path + ["--help"], env={"COLUMNS": "200"}).stdout
            missing.extend((" ".join(path), w) for w in sorted(wanted) if w not in shown)

    walk(typer.main.get_command(app), [])
    assert not missing, missing
