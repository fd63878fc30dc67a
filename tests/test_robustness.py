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


# ------------------------------------------------------------------------------------------------ nesting depth


def test_read_json_refuses_deep_nesting_before_parsing(tmp_path):
    from rfbench.errors import FormatError
    from rfbench.io.files import MAX_NESTING, read_json

    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    with pytest.raises(FormatError, match=f"nested 100000 levels deep; rfbench reads at most {MAX_NESTING} levels"):
        read_json(deep)
    # exactly at the limit is read; one more level is refused
    ok = tmp_path / "ok.json"
    ok.write_text('{"a": ' + "[" * (MAX_NESTING - 1) + "]" * (MAX_NESTING - 1) + "}")
    value, depth = read_json(ok)["a"], 0
    while isinstance(value, list):
        value, depth = (value[0] if value else None), depth + 1
    assert depth == MAX_NESTING - 1  # the object itself is the 64th level
    ok.write_text('{"a": ' + "[" * MAX_NESTING + "]" * MAX_NESTING + "}")
    with pytest.raises(FormatError, match="nested 65 levels deep"):
        read_json(ok)


def test_brackets_inside_strings_do_not_count(tmp_path):
    from rfbench.io.files import read_json

    p = tmp_path / "s.json"
    # 200 brackets inside strings, with escaped quotes and backslashes around them
    p.write_text(json.dumps({"a": "[" * 200, "b": '\\"' + "{" * 200, "c": "\\" * 3 + '"[[[', "d": [["x"]]}))
    assert read_json(p)["d"] == [["x"]]


@pytest.mark.parametrize("argv", [
    ["split", "{deep}", "-p", "random", "--allow-leaky"],
    ["audit", "{deep}"],
    ["verify", "{deep}"],
    ["score", "--pred", "{pred}", "--gt", "{pred}", "--skeleton", "h36m17", "--split", "{deep}", "--groups", "{groups}"],
    ["score", "--pred", "{pred}", "--gt", "{pred}", "--skeleton", "{deep_layout}"],
    ["config", "check", "{deep_toml}"],
    ["adapt", "--synthetic", "--config", "{deep_toml}"],
])
def test_deeply_nested_inputs_are_one_line_exit_2(runner, tmp_path, argv):
    deep = tmp_path / "deep.json"
    deep.write_text('{"schema": "rfbench.split/1", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    layout = tmp_path / "layout.json"
    layout.write_text("[" * 100_000)
    toml = tmp_path / "rfbench.toml"
    toml.write_text("[adapt]\nrank = 2\nx = " + "[" * 100_000 + "]" * 100_000 + "\n")
    pred = tmp_path / "pred.npy"
    np.save(pred, np.zeros((2, 17, 3)))
    groups = tmp_path / "groups.npy"
    np.save(groups, np.array(["a", "b"]))
    names = {"deep": deep, "pred": pred, "groups": groups, "deep_layout": layout, "deep_toml": toml}
    result = runner.invoke(app, [a.format(**names) for a in argv])
    assert result.exit_code == 2, result.output
    lines = err_lines(result)
    assert len(lines) == 1 and lines[0].startswith("error: ") and "levels deep" in lines[0], result.output
    assert "Traceback" not in result.output
