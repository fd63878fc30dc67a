"""Ctrl-C while the command line is still loading (before any command's own handling) is one line and exit 130.

A SIGINT in the first ~0.3 s of any command printed a KeyboardInterrupt traceback from inside ``import typer`` or
``rfbench.cli``: the console script imported the command line before anything handled the interrupt."""

from __future__ import annotations

import importlib.abc
import sys
from pathlib import Path

import pytest

from rfbench import _entry


class _InterruptedImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "rfbench.cli":
            raise KeyboardInterrupt
        return None


def test_an_interrupt_while_the_command_line_loads_is_one_line_and_exit_130(monkeypatch, capsys):
    for name in _entry.CODE_ENV:  # (else main() would start this test process again, isolated)
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delitem(sys.modules, "rfbench.cli", raising=False)
    monkeypatch.setattr(sys, "meta_path", [_InterruptedImport(), *sys.meta_path])
    with pytest.raises(SystemExit) as ended:
        _entry.main()
    assert ended.value.code == 130
    assert capsys.readouterr().err == "error: interrupted\n"


def test_the_console_script_and_python_m_go_through_the_handling():
    root = Path(__file__).resolve().parents[1]
    scripts = (root / "pyproject.toml").read_text().split("[project.scripts]\n", 1)[1].split("\n\n", 1)[0]
    assert scripts.strip() == 'rfbench = "rfbench._entry:main"'

    assert "from rfbench._entry import main" in (root / "rfbench" / "__main__.py").read_text()
