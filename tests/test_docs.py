"""Every command is discoverable, has help text, and has its section in README.md (sqlite-utils' test_docs)."""

from __future__ import annotations

import re

import pytest

import readme_runner as rr
from rfbench.cli import app

README = rr.README.read_text(encoding="utf-8")


def _commands():
    """(path, click command) for every command and group of the Typer app, discovered, not listed by hand."""
    import typer.main

    root = typer.main.get_command(app)
    out = []

    def walk(cmd, path):
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            out.append((path + [name], sub))
            walk(sub, path + [name])

    walk(root, [])
    return out


COMMANDS = _commands()


def test_the_app_has_every_pipeline_command():
    top = {tuple(p) for p, _ in COMMANDS if len(p) == 1}
    for name in ("parse", "ingest", "split", "audit", "score", "verify", "proof", "adapt", "config", "demo"):
        assert (name,) in top
    assert ("ingest", "widar") in {tuple(p) for p, _ in COMMANDS}


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=[" ".join(p) for p, _ in COMMANDS])
def test_help_exits_0_with_help_text(runner, path):
    cmd = dict((tuple(p), c) for p, c in COMMANDS)[tuple(path)]
    assert (cmd.help or "").strip(), f"rfbench {' '.join(path)} has no help text"
    for flag in ("--help", "-h"):
        result = runner.invoke(app, path + [flag])
        assert result.exit_code == 0, result.output
        assert "Usage" in result.output
        first = cmd.help.strip().split("\n")[0].split(".")[0][:40]
        assert " ".join(first.split()[:4]) in " ".join(result.output.split()), result.output


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_command_has_a_readme_section(path):
    top = path[0]
    heading = re.search(rf"^## rfbench {re.escape(top)}$", README, re.M)
    assert heading, f"README.md has no '## rfbench {top}' section"
    assert f"rfbench {' '.join(path)}" in README, f"README.md never shows rfbench {' '.join(path)}"


def test_readme_sections_follow_the_pipeline():
    order = [m.group(1) for m in re.finditer(r"^## rfbench (\w+)", README, re.M)]
    pipeline = ["parse", "ingest", "split", "audit", "score", "verify"]
    positions = [order.index(c) for c in pipeline]
    assert positions == sorted(positions), order
    headings = re.findall(r"^## .*$", README, re.M)
    assert headings[-1] == "## Performance"  # the last section; its body is merged from elsewhere
