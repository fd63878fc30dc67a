"""Bad input never crashes and nothing is lost: short usage errors, NaN/inf refused by every float option, bounded
readers (.npy/.npz headers, JSON/TOML nesting), outputs that name themselves when they cannot be written,
collision-free leave-one-domain-out files, zero rows refused, overflowing Procrustes alignments counted wrong."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rfbench.cli import app

ROOT = Path(__file__).resolve().parents[1]


def err_lines(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


# ------------------------------------------------------------------------------------------------ usage errors


@pytest.mark.parametrize("argv, command, words", [
    (["parse"], "rfbench parse", "missing argument INPUTS"),
    (["ingest", "foo"], "rfbench ingest", "no such command 'foo'"),
    (["ingest", "widar", "root", "--workers", "0"], "rfbench ingest widar", "invalid value for --workers: must be >= 1"),
    (["split", "m.json", "-p", "random", "--seed", "-1"], "rfbench split", "invalid value for --seed: must be >= 0"),
    (["split", "m.json", "--seed", "x"], "rfbench split", "invalid value for --seed: must be an integer, got 'x'"),
    (["proof", "--lr", "nan"], "rfbench proof", "invalid value for --lr: must be a finite number (NaN and inf are "
                                                "not allowed), got 'nan'"),
    (["proof", "--lr", "11"], "rfbench proof", "invalid value for --lr: must be <= 10, got '11'"),
    (["score", "--task", "pose"], "rfbench score", "missing option --pred"),
    (["config", "show", "--config"], "rfbench config show", "option '--config' requires an argument"),
    (["frobnicate"], "rfbench", "no such command 'frobnicate'"),
])
def test_usage_errors_are_two_lines_naming_the_option(runner, tmp_path, argv, command, words):
    result = runner.invoke(app, argv)
    assert result.exit_code == 2, result.output
    lines = err_lines(result)
    assert len(lines) == 2, result.stderr
    assert lines[0].startswith("error: ") and words in lines[0], lines
    assert lines[1] == f"Try '{command} -h' for help."
    assert "╭" not in result.output and "Usage:" not in result.output
    assert result.stdout == ""


def test_usage_errors_in_a_real_process_are_two_lines():
    # The console script goes through the same root command (and sys.exit) as the runner.
    proc = subprocess.run([sys.executable, "-m", "rfbench", "split", "x.json", "--seed", "-1"], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == ["error: invalid value for --seed: must be >= 0, got '-1'",
                                        "Try 'rfbench split -h' for help."]
    assert proc.stdout == ""


def test_control_characters_in_a_usage_error_are_escaped(runner):
    result = runner.invoke(app, ["ingest", "a\x1b[31mb\nc"])
    assert result.exit_code == 2
    lines = err_lines(result)
    assert len(lines) == 2 and "\x1b" not in result.stderr and "a\\x1b[31mb" in lines[0], lines


def test_bare_rfbench_still_prints_its_help(runner):
    result = runner.invoke(app, [])
    assert result.exit_code == 2
    assert "Commands" in result.stdout and "error:" not in result.output


def _float_parameters():
    """(command path, parameter) for every float option or argument of every command and sub-command."""
    import typer.main

    found = []

    def walk(command, path):
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, path + [name])
        for param in command.params:
            td = getattr(param, "type_descriptor", None)
            if td is not None and td.annotation is float:
                found.append((path, param))

    walk(typer.main.get_command(app), [])
    return found


def test_the_walk_finds_the_float_options():
    names = {(" ".join(path), p.opts[0]) for path, p in _float_parameters()}
    assert {("proof", "--lr"), ("adapt", "--lr"), ("adapt", "--fd-step"), ("adapt", "--temperature"),
            ("adapt", "--entropy-weight"), ("split", "--test-fraction"), ("score", "--confidence"),
            ("score", "--auc-max")} <= names


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "infinity"])
def test_every_float_option_refuses_nan_and_inf(runner, value):
    params = _float_parameters()
    assert params
    for path, param in params:
        parser = param.type_descriptor.parameter_info.parser
        assert hasattr(parser, "rfbench_finite_float"), (path, param.opts)  # the one central float type
        name = param.opts[0]
        argv = path + ([name, value] if param.param_type_name == "option" else [value])
        result = runner.invoke(app, argv)
        assert result.exit_code == 2, (argv, result.output)
        lines = err_lines(result)
        assert len(lines) == 2, (argv, result.stderr)
        assert lines[0] == (f"error: invalid value for {name}: must be a finite number (NaN and inf are not "
                            f"allowed), got {value!r}"), lines
