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
    (["ingest", "widar", "root", "--workers", "0"], "rfbench ingest widar",
     "invalid value for --workers: must be >= 1"),
    (["split", "m.json", "-p", "random", "--seed", "-1"], "rfbench split", "invalid value for --seed: must be >= 0"),
    (["split", "m.json", "--seed", "x"], "rfbench split", "invalid value for --seed: must be an integer, got 'x'"),
    (["parse", "a.dat", "--workers", "0"], "rfbench parse", "invalid value for --workers: must be >= 1, got '0'"),
    (["parse", "a.dat", "--workers", "65"], "rfbench parse", "invalid value for --workers: must be <= 64, got '65'"),
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


def _parser(param):
    """The function that parses a parameter's value when one was given (``parser=``), under the pinned Typer
    (Click's function type) and under Typer 0.29+ (its type descriptor)."""
    td = getattr(param, "type_descriptor", None)
    if td is not None:
        return td.parameter_info.parser if td.annotation is float else None
    return getattr(getattr(param, "type", None), "func", None)


def _float_parameters():
    """(command path, parameter) for every float option or argument of every command and sub-command."""
    import typer.main

    found = []

    def walk(command, path):
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, path + [name])
        for param in command.params:
            parser = _parser(param)
            if getattr(parser, "rfbench_path", False):  # a path option's parser (an output file's), not a float's
                continue
            if parser is not None or getattr(getattr(param, "type", None), "name", "") == "float":
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
        parser = _parser(param)
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
    ["score", "--pred", "{pred}", "--gt", "{pred}", "--skeleton", "h36m17", "--split", "{deep}",
     "--groups", "{groups}"],
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


# ------------------------------------------------------------------------------------------------ memory bombs

sys.path.insert(0, str(Path(__file__).resolve().parent))
import forge  # noqa: E402  (tests/forge.py: forged headers and deflate bombs)

_DRIVER = """
import json, sys
from typer.testing import CliRunner
from rfbench.cli import app
out = []
for argv in json.loads(sys.argv[1]):
    r = CliRunner().invoke(app, argv)
    exc = r.exception if r.exception is not None and not isinstance(r.exception, SystemExit) else None
    out.append({"argv": argv, "code": r.exit_code, "stdout": r.stdout, "stderr": r.stderr,
                "exception": repr(exc) if exc is not None else None})
print(json.dumps(out))
"""


def run_capped(argvs: list[list[str]], cwd: Path, cap_bytes: int = 1536 * 1024**2) -> list[dict]:
    """Run rfbench command lines in one child process whose address space is capped (RLIMIT_AS)."""
    resource = pytest.importorskip("resource")

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (cap_bytes, cap_bytes))

    try:
        proc = subprocess.run([sys.executable, "-c", _DRIVER, json.dumps(argvs)], cwd=cwd, preexec_fn=limit,
                              capture_output=True, text=True, timeout=600, env={**os.environ, "COLUMNS": "200"})
    except (OSError, ValueError) as exc:  # pragma: no cover - a platform without RLIMIT_AS
        pytest.skip(f"cannot cap the address space here: {exc}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_load_npy_checks_the_declared_size_before_allocating(tmp_path):
    from rfbench.errors import FormatError
    from rfbench.io.files import load_npy

    bomb = tmp_path / "bomb.npy"
    bomb.write_bytes(forge.npy_header((10**12,)))
    with pytest.raises(FormatError, match=r"declares a 1000000000000 float64 array \(7450.6 GiB\) but the file "
                                          r"holds only 0 bytes"):
        load_npy(bomb, "--pred")
    short = tmp_path / "short.npy"
    short.write_bytes(forge.npy_header((3, 4)) + bytes(8 * 11))  # one float missing
    with pytest.raises(FormatError, match="3x4 float64 array .96 bytes. but the file holds only 88 bytes"):
        load_npy(short)
    # what np.load reads, load_npy reads identically: dtypes, byte order, Fortran order, empty, scalar, max_rows
    for arr in (np.arange(12.0).reshape(3, 4), np.asfortranarray(np.arange(6).reshape(2, 3)),
                np.arange(5, dtype=">i4"), np.array(["ab", "c"]), np.zeros((0, 3)), np.float32(2.5),
                np.zeros(2, dtype=[("a", "<i4"), ("b", "<f8")])):
        np.save(tmp_path / "a.npy", arr)
        got = load_npy(tmp_path / "a.npy")
        assert got.dtype == arr.dtype and got.shape == arr.shape and np.array_equal(got, arr)
        assert got.flags.writeable
    np.save(tmp_path / "a.npy", np.arange(12.0).reshape(6, 2))
    assert load_npy(tmp_path / "a.npy", max_rows=2).tolist() == [[0.0, 1.0], [2.0, 3.0]]
    (tmp_path / "passwd.npy").write_text("secret:x:0:0:secret:/secret:/bin/bash\n")
    with pytest.raises(FormatError, match=r"no NumPy header\)$") as info:
        load_npy(tmp_path / "passwd.npy")
    assert "secret" not in str(info.value)  # the file's bytes are not echoed


def test_the_array_cap_is_documented_and_configurable(tmp_path, monkeypatch):
    from rfbench.errors import FormatError
    from rfbench.io.files import MAX_ARRAY_BYTES, load_npy, max_array_bytes

    assert MAX_ARRAY_BYTES == 4 * 1024**3 and max_array_bytes() == MAX_ARRAY_BYTES
    np.save(tmp_path / "a.npy", np.zeros(1000))
    monkeypatch.setenv("RFBENCH_MAX_ARRAY_BYTES", "4000")
    with pytest.raises(FormatError, match=r"is 7.8 KiB, above rfbench's limit of 3.9 KiB per array \(set "
                                          r"RFBENCH_MAX_ARRAY_BYTES"):
        load_npy(tmp_path / "a.npy")
    assert load_npy(tmp_path / "a.npy", max_rows=500).shape == (500,)  # what is read counts


SCORE_NPY_OPTIONS = ["--pred", "--gt", "--vis", "--groups", "--train-gt", "--train-groups", "--train-vis"]


def test_every_npy_option_of_score_refuses_a_huge_declared_shape_under_a_memory_cap(tmp_path):
    (tmp_path / "bomb.npy").write_bytes(forge.npy_header((10**12,)))
    rng = np.random.default_rng(0)
    np.save(tmp_path / "gt.npy", rng.uniform(0, 1, (4, 17, 3)))
    np.save(tmp_path / "pred.npy", rng.uniform(0, 1, (4, 17, 3)))
    np.save(tmp_path / "labels.npy", np.array(["a", "b", "a", "b"]))
    np.save(tmp_path / "ids.npy", np.array(["r1", "r1", "r2", "r2"]))
    base = ["score", "--pred", "pred.npy", "--gt", "gt.npy", "--skeleton", "h36m17"]
    argvs = []
    for option in SCORE_NPY_OPTIONS:
        argv = list(base)
        if option in ("--pred", "--gt"):
            argv[argv.index(option) + 1] = "bomb.npy"
        else:
            argv += [option, "bomb.npy"]
            if option == "--train-groups":
                argv += ["--train-gt", "gt.npy"]
            if option in ("--train-gt", "--train-vis"):  # a baseline needs both training inputs
                argv += ["--train-groups", "ids.npy"] + (["--train-gt", "gt.npy"] if option == "--train-vis" else [])
        argvs.append(argv)
    for option in ("--pred", "--gt", "--groups", "--train-gt"):
        argv = ["score", "--task", "gesture", "--pred", "labels.npy", "--gt", "labels.npy"]
        if option in ("--pred", "--gt"):
            argv[argv.index(option) + 1] = "bomb.npy"
        else:
            argv += [option, "bomb.npy"] + (["--train-groups", "ids.npy"] if option == "--train-gt" else [])
        argvs.append(argv)
    for r in run_capped(argvs, tmp_path):
        assert r["exception"] is None, r
        assert r["code"] == 2, r
        lines = [x for x in r["stderr"].splitlines() if x.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: ") and "bomb.npy" in lines[0] \
            and "declares" in lines[0], r


def test_adapt_reads_only_max_frames_of_a_deflate_bomb_under_a_memory_cap(tmp_path):
    # 1.5 GB of zeros in 9.5 MB: an archive with honest zip sizes and CRC, at a ratio deflate really reaches.
    size = forge.npz_bomb(tmp_path / "bomb.npz", "csi", (700_000, 30, 3, 3), "<c8")
    assert size > 1.5e9 and (tmp_path / "bomb.npz").stat().st_size < 10e6
    cap = 1024**3  # far below what inflating the member would need
    quick = ["--steps", "0", "--json"]  # reading is under test, not the descent
    results = run_capped([["adapt", "bomb.npz", *quick], ["adapt", "bomb.npz", "--max-frames", "100", *quick]],
                         tmp_path, cap)
    for r, frames in zip(results, (64, 100)):
        assert r["exception"] is None and r["code"] == 0, r
        assert json.loads(r["stdout"])["frames"] == frames


def _npz(path, **arrays):
    np.savez(path, **arrays)
    return path.name


def test_adapt_refuses_forged_and_malformed_archives(runner, tmp_path, monkeypatch):
    import io
    import zipfile

    monkeypatch.chdir(tmp_path)
    cases = {}
    # an object array inside an .npz (np.load without pickles raises ValueError today)
    with zipfile.ZipFile("object.npz", "w") as z:
        buf = io.BytesIO()
        np.save(buf, np.array([1, "a"], dtype=object), allow_pickle=True)
        z.writestr("csi.npy", buf.getvalue())
    cases["object.npz"] = "object.npz [csi]: not a plain .npy array (it holds Python objects"
    cases[_npz(tmp_path / "empty.npz", csi=np.zeros((0, 30, 3, 3), np.complex64))] = \
        "empty.npz: the archive holds 0 CSI record(s); adaptation needs at least 2"
    cases[_npz(tmp_path / "int8.npz", csi_int8=np.zeros((5, 30, 3, 3, 1), np.int8))] = \
        "int8.npz: csi_int8 must be (records, subcarriers, ..., 2) integers"
    cases[_npz(tmp_path / "flat.npz", csi_int8=np.zeros(5, np.int8))] = "flat.npz: csi_int8 must be"
    cases[_npz(tmp_path / "text.npz", csi=np.array([["a", "b"], ["c", "d"]]))] = "text.npz: csi must be numeric"
    cases[_npz(tmp_path / "one.npz", csi=np.ones((1, 30, 3, 3), np.complex64))] = "holds 1 CSI record(s)"
    # a member whose .npy header declares more than the member holds
    header = forge.npy_header((10**9, 30, 3, 3), "<c8")
    with zipfile.ZipFile("liar.npz", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("csi.npy", header + bytes(64))
    cases["liar.npz"] = "liar.npz [csi]: its header declares a 1000000000x30x3x3 complex64 array"
    # a zip directory that claims an expansion deflate cannot produce
    forge.npz_bomb(tmp_path / "claim.npz", "csi", (100, 30, 3, 3))
    data = bytearray((tmp_path / "claim.npz").read_bytes())
    for sig, at in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):  # uncompressed-size fields
        pos = data.index(sig) + at
        data[pos:pos + 4] = (3_000_000_000).to_bytes(4, "little")
    (tmp_path / "claim.npz").write_bytes(bytes(data))
    cases["claim.npz"] = "claim.npz [csi]: claims 2.8 GiB from"
    (tmp_path / "trunc.npz").write_bytes((tmp_path / "empty.npz").read_bytes()[:100])
    cases["trunc.npz"] = "trunc.npz: not an .npz archive"
    (tmp_path / "bomb.npy").write_bytes(forge.npy_header((10**12, 2)))
    cases["bomb.npy"] = "bomb.npy: its header declares"
    for name, words in cases.items():
        result = runner.invoke(app, ["adapt", name])
        assert result.exit_code == 2, (name, result.output)
        lines = err_lines(result)
        assert len(lines) == 1 and words in lines[0], (name, lines)


# ------------------------------------------------------------------------------------------------ scoring edge cases


def test_score_counts_a_1e308_prediction_wrong_instead_of_crashing(runner, tmp_path):
    rng = np.random.default_rng(3)
    gt = rng.normal(size=(5, 17, 3))
    pred = gt + rng.normal(scale=0.05, size=gt.shape)
    pred[3] = gt[3] / np.abs(gt[3]).max() * 1e308  # finite, but its Procrustes moments overflow
    np.save(tmp_path / "pred.npy", pred)
    np.save(tmp_path / "gt.npy", gt)
    result = runner.invoke(app, ["score", "--pred", str(tmp_path / "pred.npy"), "--gt", str(tmp_path / "gt.npy"),
                                 "--skeleton", "h36m17", "--norm", "bbox", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    pa = [r for r in report["results"] if r["metric"] == "pa-mpjpe"]
    assert pa and all(r["model"]["value"] in ("inf", None, math.inf) for r in pa), pa
    mp = [r for r in report["results"] if r["metric"] == "mpjpe"]
    assert all(r["model"]["value"] in ("inf", None, math.inf) for r in mp)  # as wrong as an overflowing MPJPE


@pytest.mark.parametrize("task", ["pose", "gesture"])
def test_zero_rows_are_refused_by_both_tasks(runner, tmp_path, task):
    if task == "pose":
        np.save(tmp_path / "p.npy", np.zeros((0, 17, 3)))
        args = ["--skeleton", "h36m17"]
    else:
        np.save(tmp_path / "p.npy", np.array([], dtype="<U4"))
        args = []
    out = tmp_path / "report.json"
    result = runner.invoke(app, ["score", "--task", task, "--pred", str(tmp_path / "p.npy"), "--gt",
                                 str(tmp_path / "p.npy"), *args, "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert err_lines(result) == ["error: the ground truth has no rows; there is nothing to score"]
    assert not out.exists() and not out.with_suffix(".md").exists()


# ------------------------------------------------------------------------------------------------ outputs


def _read_only_mkstemp(*args, dir=None, prefix="", suffix="", **kw):
    """mkstemp as a read-only folder answers it: EACCES naming the temporary file."""
    import errno

    raise PermissionError(errno.EACCES, "Permission denied", os.path.join(dir or ".", f"{prefix}k3j2h1{suffix}"))


def _pose_inputs(tmp_path):
    rng = np.random.default_rng(0)
    gt = rng.normal(size=(3, 17, 3))
    np.save(tmp_path / "gt.npy", gt)
    return ["score", "--pred", str(tmp_path / "gt.npy"), "--gt", str(tmp_path / "gt.npy"), "--skeleton", "h36m17",
            "--norm", "bbox"]


@pytest.mark.parametrize("command", ["score", "adapt", "proof"])
def test_an_unwritable_output_folder_is_one_line_naming_the_output(runner, tmp_path, monkeypatch, command):
    import types

    import rfbench.io.files as files_mod

    out = tmp_path / "ro" / ("r.json" if command == "score" else "a.npz" if command == "adapt" else "p.sha256")
    out.parent.mkdir()
    argv = {"score": _pose_inputs(tmp_path) + ["-o", str(out)],
            "adapt": ["adapt", "--synthetic", "--steps", "0", "-o", str(out)],
            "proof": ["proof", "--generate-hash", "--hash-file", str(out), "--steps", "2", "--samples", "4"]}[command]
    monkeypatch.setattr(files_mod, "tempfile", types.SimpleNamespace(mkstemp=_read_only_mkstemp))
    result = runner.invoke(app, argv)
    assert result.exit_code == 2, result.output
    lines = err_lines(result)
    assert lines == [f"error: cannot write {out}: permission denied: the folder {out.parent} is not writable"]
    assert ".tmp" not in result.output and "k3j2h1" not in result.output
    assert list(out.parent.iterdir()) == []


def test_a_failed_rename_removes_the_temporary_file_and_names_the_output(tmp_path, monkeypatch):
    import errno

    from rfbench.errors import OutputError
    from rfbench.io.files import write_text

    def read_only_fs(src, dst):
        raise OSError(errno.EROFS, "Read-only file system", src)

    monkeypatch.setattr(os, "replace", read_only_fs)
    with pytest.raises(OutputError, match=r"cannot write .*out.txt: the folder .* is on a read-only file system$"):
        write_text(tmp_path / "out.txt", "x")
    assert list(tmp_path.iterdir()) == []


def test_a_file_where_the_output_folder_should_be(runner, tmp_path):
    (tmp_path / "afile").write_text("")
    out = tmp_path / "afile" / "sub" / "r.json"
    result = runner.invoke(app, _pose_inputs(tmp_path) + ["-o", str(out)])
    assert result.exit_code == 2, result.output
    assert err_lines(result) == [f"error: cannot write {out}: {tmp_path / 'afile'} is a file, not a folder"]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_really_read_only_folder(runner, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        result = runner.invoke(app, _pose_inputs(tmp_path) + ["-o", str(ro / "r.json")])
    finally:
        ro.chmod(0o755)
    assert result.exit_code == 2, result.output
    assert err_lines(result) == [f"error: cannot write {ro / 'r.json'}: permission denied: the folder {ro} is not "
                                 "writable"]


def test_a_pred_path_that_is_not_utf8_gets_a_report_that_verifies(tmp_path):
    # Python holds the name b"pred\xff.npy" as "pred\udcff.npy"; the report (JSON, Markdown) must still be written
    # as UTF-8 and `rfbench verify` must find the file again from the recorded reproducer.
    if sys.platform == "darwin":  # pragma: no cover - macOS refuses names that are not UTF-8
        pytest.skip("the file system refuses non-UTF-8 names")
    rng = np.random.default_rng(1)
    raw = os.fsencode(str(tmp_path)) + b"/pred\xff.npy"
    with open(raw, "wb") as fh:
        np.save(fh, rng.normal(size=(3, 17, 3)))
    np.save(tmp_path / "gt.npy", rng.normal(size=(3, 17, 3)))
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}  # a strict UTF-8 terminal
    score = subprocess.run([sys.executable, "-m", "rfbench", "score", "--pred", os.fsdecode(raw), "--gt",
                            str(tmp_path / "gt.npy"), "--skeleton", "h36m17", "--norm", "bbox", "-o",
                            str(tmp_path / "out" / "r.json")], capture_output=True, env=env, timeout=300)
    assert score.returncode == 0, score.stderr.decode(errors="replace")[-2000:]
    text = (tmp_path / "out" / "r.json").read_bytes().decode("utf-8")  # valid UTF-8
    assert "pred\\udcff.npy" in text
    (tmp_path / "out" / "r.md").read_bytes().decode("utf-8")
    verify = subprocess.run([sys.executable, "-m", "rfbench", "verify", str(tmp_path / "out" / "r.json"), "--root",
                             str(tmp_path)], capture_output=True, env=env, timeout=300)
    assert verify.returncode == 0, verify.stderr.decode(errors="replace")[-2000:]
    assert verify.stdout.startswith(b"MATCH")


# ------------------------------------------------------------------------------------------------ split names


def _lodo_manifest(tmp_path, rooms):
    from rfbench.datasets.manifest import Manifest

    recs = [{"id": f"r{i}", "subject": f"s{i}", "room": room, "frames": 10, "files": [{"path": "x.dat", "bytes": 1}]}
            for i, room in enumerate(rooms)]
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(Manifest("toy", "/w", recs).to_dict()))
    return path


def test_leave_one_domain_out_over_the_classes_is_refused(runner, tmp_path):
    """Holding out each gesture in turn made folds whose test side held a class the model never trained on (an
    accuracy of 0 by construction); it was accepted."""
    from rfbench.datasets.manifest import Manifest

    recs = [{"id": f"r{i}", "subject": f"s{i % 2}", "gesture": g, "frames": 10, "files": [{"path": "x.dat",
                                                                                            "bytes": 1}]}
            for i, g in enumerate(["Push", "Clap", "Clap", "Push"])]  # each subject did both
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(Manifest("toy", "/w", recs).to_dict()))
    result = runner.invoke(app, ["split", str(path), "-p", "leave-one-domain-out", "--domain", "gesture", "-o",
                                 str(tmp_path / "folds")])
    assert result.exit_code == 2 and "holds out a class" in result.output, result.output
    assert not (tmp_path / "folds").exists()
    ok = runner.invoke(app, ["split", str(path), "-p", "leave-one-domain-out", "--domain", "subject", "-o",
                             str(tmp_path / "folds")])
    assert ok.exit_code == 0, ok.output


def test_leave_one_domain_out_of_values_that_read_alike_fails_its_audit(runner, tmp_path):
    """Rooms 'Alice' and 'alice' read as one: a fold holding out one keeps the other on the train side, and the
    audit says so (their fold files got distinct names, and each fold passed, before)."""
    manifest = _lodo_manifest(tmp_path, ["Alice", "alice", "c"])
    result = runner.invoke(app, ["split", str(manifest), "-p", "leave-one-domain-out", "--domain", "room", "-o",
                                 str(tmp_path / "folds")])
    assert result.exit_code == 1, result.output
    assert "a reader cannot tell apart" in result.output and "'alice' (train) and 'Alice' (test)" in " ".join(
        result.output.split()), result.output


def test_leave_one_domain_out_of_look_alike_letters_fails_its_audit(runner, tmp_path):
    """A subject 'user1' and 'us\u0435r1' whose e is Cyrillic print the same: a fold holding out one keeps the
    other on the train side, and the audit says so (each fold passed before the look-alike letters were read as
    Latin ones)."""
    manifest = _lodo_manifest(tmp_path, ["user1", "us\u0435r1", "c"])
    result = runner.invoke(app, ["split", str(manifest), "-p", "leave-one-domain-out", "--domain", "room", "-o",
                                 str(tmp_path / "folds")])
    assert result.exit_code == 1, result.output
    assert "a reader cannot tell apart" in result.output, result.output


@pytest.mark.parametrize("alike", ["b\u0585b", "\u0261ina", "t\u1d0fm", "\u0251dam", "al\u0269", "jos\u00e9"])
def test_a_look_alike_letter_no_table_lists_still_fails_the_audit(runner, tmp_path, alike):
    """Armenian օ, the IPA ɡ and ɑ, a small capital ᴏ, the Latin iota ɩ print as Latin letters too: a fold holding
    out 'bօb' kept 'bob' on the train side and passed (the table held Cyrillic and Greek only)."""
    plain = {"b\u0585b": "bob", "\u0261ina": "gina", "t\u1d0fm": "tom", "\u0251dam": "adam", "al\u0269": "ali",
             "jos\u00e9": "jose"}[alike]
    manifest = _lodo_manifest(tmp_path, [plain, alike, "c"])
    result = runner.invoke(app, ["split", str(manifest), "-p", "leave-one-domain-out", "--domain", "room", "-o",
                                 str(tmp_path / "folds")])
    assert result.exit_code == 1, result.output
    assert "a reader cannot tell apart" in result.output, result.output


def test_read_alike_holds_non_ascii_letters_against_any_but_keeps_ascii_and_other_scripts_apart():
    from rfbench.names import alike_pairs, read_alike

    for a, b in [("bob", "b\u0585b"), ("user", "\u057dser"), ("kyle", "k\u028fle"), ("S01", "S\u041e1"),
                 ("soren", "s\u00f8ren"), ("A1", "\u13aa1"), ("bob", "BOB")]:
        assert read_alike(a, b) and read_alike(b, a), (a, b)
    for a, b in [("user1", "user2"), ("userI", "userl"), ("Draw-O", "Draw-0"), ("\u7528\u62371", "ab1"),
                 ("bob", "b\u0585bb"), ("abc", "xyz")]:
        assert not read_alike(a, b), (a, b)
    assert alike_pairs(["bob", "c", "d"], ["b\u0585b", "C", "e"]) == [("bob", "b\u0585b"), ("c", "C")]
    assert alike_pairs(["x"], ["x"]) == []
    from rfbench.errors import ValidationError
    from rfbench.metrics.labelset import LabelSet

    with pytest.raises(ValidationError, match="'Clap' and 'Cl\u0251p' read as one name"):
        LabelSet(("Clap", "Slide", "Cl\u0251p"))
    assert LabelSet(("Draw-O", "Draw-0")).size == 2


@pytest.mark.parametrize("plain, alike", [
    ("ann", "ann\u3164"), ("ann", "\u115fann"), ("ann", "an\uffa0n"), ("ann", "an\u2800n"),  # fillers, braille blank
    ("Ann", "\u15c5nn"), ("Pat", "\u146dat"), ("Otto", "\u2d54tto"), ("Ilse", "\u16c1lse"),  # Canadian, Tifinagh, Runic
    ("Ann", "\U00010300nn"), ("ann", "\U00010330nn"), ("bob", "b\u12d0b"),  # Old Italic, Gothic, Ethiopic
    ("user0", "user\u0966"), ("b0b", "b\u09e6b"), ("01", "\u0c661"),  # Devanagari, Bengali, Telugu zeros
])
def test_letters_that_print_as_nothing_or_as_latin_ones_read_alike(runner, tmp_path, plain, alike):
    """A subject 'ann' beside 'ann' + U+3164 (a Hangul filler, a letter that prints as nothing) was two subjects:
    split and audit passed subject-disjoint, and a report on that split verified MATCH, MEASURED; so for letters of
    scripts the look-alike blocks left out and for other scripts' zeros (found by an adversarial probe; the test
    fails on the code before). report.md shows the invisible ones as escapes."""
    from rfbench.names import INVISIBLE, read_alike
    from rfbench.report.render import _visible

    assert read_alike(plain, alike) and read_alike(alike, plain)
    manifest = _lodo_manifest(tmp_path, [plain, alike, "c"])
    result = runner.invoke(app, ["split", str(manifest), "-p", "leave-one-domain-out", "--domain", "room", "-o",
                                 str(tmp_path / "folds")])
    assert result.exit_code == 1 and "a reader cannot tell apart" in result.output, result.output
    if any(ch in INVISIBLE for ch in alike):
        assert _visible(alike).isascii(), _visible(alike)


def test_a_number_and_its_text_are_one_value_in_the_audit(runner, tmp_path):
    """A hand-edited manifest with room 5 (a number) on one side and "5" (text) on the other: both print 5, and the
    audit passed room-disjoint (found by an adversarial probe; the test fails on the code before)."""
    manifest = _lodo_manifest(tmp_path, [5, "5", "c"])
    result = runner.invoke(app, ["split", str(manifest), "-p", "leave-one-domain-out", "--domain", "room", "-o",
                                 str(tmp_path / "folds")])
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert "a reader cannot tell apart" in text and "'5' (train) and '5' (test)" in text, result.output


@pytest.mark.parametrize("train, test", [("7", "07"), ("S1", "S01"), ("user2", "user002"), ("S01", "s1"),
                                         ("0", "00")])
def test_one_number_written_with_and_without_leading_zeros_is_one_subject(runner, tmp_path, train, test):
    """A corpus whose subjects are numbered `7` in one place and `07` in another (`S1`/`S01`): a cross-subject
    split holding out one kept the other on the train side, and the audit passed subject-disjoint (Widar3.0's
    reader refuses `user01`; a template corpus did not). The test fails on the code before."""
    result = _split_subjects(runner, tmp_path, train, test)
    text = " ".join(result.output.split())
    assert result.exit_code == 1 and "with and without leading zeros" in text, result.output
    assert f"{train!r} (train) and {test!r} (test)" in text, result.output


@pytest.mark.parametrize("train, test", [("S1", "S10"), ("7", "70"), ("S1", "S2"), ("a01b", "a1c")])
def test_numbers_that_differ_are_still_distinct_subjects(runner, tmp_path, train, test):
    result = _split_subjects(runner, tmp_path, train, test)
    assert result.exit_code == 0, result.output


def _split_subjects(runner, tmp_path, train: str, test: str):
    """``split -p cross-subject --test TEST`` over three one-file recordings of subjects TRAIN, TEST and S9."""
    from rfbench.datasets.manifest import Manifest

    recs = [{"id": f"r{i}", "subject": subject, "frames": 10, "files": [{"path": f"x{i}.dat", "bytes": 1}]}
            for i, subject in enumerate([train, test, "S9"])]
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(Manifest("toy", "/w", recs).to_dict()))
    return runner.invoke(app, ["split", str(path), "-p", "cross-subject", "--test", test, "-o",
                               str(tmp_path / "split.json")])


def test_plain_name_reads_look_alike_letters_as_latin():
    from rfbench.names import plain_name

    assert plain_name("us\u0435r1") == plain_name("USER1") == "user1"  # Cyrillic e
    assert plain_name("\u0397\u039f\u039c\u0395") == "home"  # Greek capitals
    assert plain_name("\u03f2lap") == "clap"  # lunate sigma, which NFKC alone turns into a sigma
    # small capitals and letters that resemble a Latin one only in some fonts keep their own reading
    assert plain_name("\u0432") != plain_name("b") and plain_name("\u03b7") not in ("h", "n")
    assert plain_name("\u041c\u043e\u0441\u043a\u0432\u0430") == "moc\u043a\u0432a"


def test_leave_one_domain_out_file_names_never_collide(runner, tmp_path):
    import hashlib

    def h8(value):  # the documented suffix: SHA-256 of the value's JSON text, 8 hex digits
        return hashlib.sha256(json.dumps(value).encode()).hexdigest()[:8]

    manifest = _lodo_manifest(tmp_path, ["a/b", "a_b", "c", "d"])
    out = tmp_path / "folds"
    argv = ["split", str(manifest), "-p", "leave-one-domain-out", "--domain", "room", "-o", str(out), "--json"]
    result = runner.invoke(app, argv)
    assert result.exit_code == 0, result.output
    expected = {f"split-room-a_b-{h8('a/b')}.json": "a/b", "split-room-a_b.json": "a_b", "split-room-c.json": "c",
                "split-room-d.json": "d"}
    assert {p.name for p in out.iterdir()} == set(expected)
    for name, value in expected.items():
        assert json.loads((out / name).read_text())["held_out"] == [value]
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    again = runner.invoke(app, argv)  # every target exists: refused before anything is written
    assert again.exit_code == 2 and "already exists" in again.output
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    forced = runner.invoke(app, argv + ["--force"])
    assert forced.exit_code == 0, forced.output
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # each fold rewrote its own file


def test_fold_names_are_stable_whatever_folds_are_asked_for(runner, tmp_path):
    manifest = _lodo_manifest(tmp_path, ["a/b", "a_b", "c"])
    out = tmp_path / "one"
    result = runner.invoke(app, ["split", str(manifest), "-p", "leave-one-domain-out", "--domain", "room", "--test",
                                 "a/b", "-o", str(out)])
    assert result.exit_code == 0, result.output
    (name,) = [p.name for p in out.iterdir()]
    assert name.startswith("split-room-a_b-") and name != "split-room-a_b.json"


def test_split_targets_are_all_checked_before_any_is_written(tmp_path):
    from rfbench.errors import ValidationError
    from rfbench.protocols.split import _check_targets

    with pytest.raises(ValidationError, match="are the same file; nothing was written"):
        _check_targets([tmp_path / "a.json", tmp_path / "b.json", tmp_path / "." / "a.json"], tmp_path / "m.json")
    with pytest.raises(ValidationError, match="is the manifest itself"):
        _check_targets([tmp_path / "m.json"], tmp_path / "m.json")


# ------------------------------------------------------------------------------------------------ found by the fuzz


@pytest.mark.parametrize("option", ["--gt", "--train-gt"])
def test_ground_truth_beyond_1e100_is_refused_not_warned_about(runner, tmp_path, option):
    # A ground truth of 1e308 used to pass (it is finite) and spill overflow warnings while scoring garbage.
    from rfbench.datasets.manifest import Manifest

    recs = [{"id": f"r{i}", "subject": f"s{i}", "frames": 2, "files": []} for i in range(4)]
    (tmp_path / "m.json").write_text(json.dumps(Manifest("toy", "/", recs).to_dict()))
    split = runner.invoke(app, ["split", str(tmp_path / "m.json"), "-p", "cross-subject", "--test", "s0", "--test",
                                "s1", "-o", str(tmp_path / "s.json")])
    assert split.exit_code == 0, split.output
    rng = np.random.default_rng(4)
    gt = rng.normal(size=(4, 17, 3))
    bad = gt.copy()
    bad[1, 2, 0] = 1e308
    for name, arr in (("gt", gt), ("bad", bad), ("groups", np.array(["r0", "r0", "r1", "r1"])),
                      ("train_groups", np.array(["r2", "r2", "r3", "r3"]))):
        np.save(tmp_path / f"{name}.npy", arr)
    files = {"--pred": "gt", "--gt": "gt", "--groups": "groups", "--train-gt": "gt", "--train-groups": "train_groups"}
    files[option] = "bad"
    argv = ["score", "--skeleton", "h36m17", "--norm", "bbox", "--split", str(tmp_path / "s.json")]
    for opt, name in files.items():
        argv += [opt, str(tmp_path / f"{name}.npy")]
    result = runner.invoke(app, argv)  # (a warning would be an error here: pytest runs with -W error)
    assert result.exit_code == 2, result.output
    expected = {"--gt": "error: ground truth has coordinates beyond ±1e+100 at 1 visible joint(s), first at row 1 "
                        "joint 2; check its units",
                "--train-gt": "error: training ground truth holds NaN, inf or a coordinate beyond ±1e+100 at a "
                              "visible joint (row 1, joint 2); fix it or mark the joint invisible with --train-vis"}
    assert err_lines(result) == [expected[option]]


def test_a_header_with_a_zero_and_a_huge_dimension_is_refused(runner, tmp_path):
    (tmp_path / "z.npy").write_bytes(forge.npy_header((0, 2**62)))
    result = runner.invoke(app, ["score", "--task", "gesture", "--pred", str(tmp_path / "z.npy"), "--gt",
                                 str(tmp_path / "z.npy")])
    assert result.exit_code == 2, result.output
    assert err_lines(result) == [f"error: --pred {tmp_path / 'z.npy'}: its header declares shape (0, "
                                 "4611686018427387904), which no array can have"]


def test_adapt_refuses_features_whose_squares_overflow(runner, tmp_path):
    np.save(tmp_path / "f.npy", np.full((8, 3), 1e300))
    result = runner.invoke(app, ["adapt", str(tmp_path / "f.npy")])
    assert result.exit_code == 2, result.output
    assert err_lines(result) == ["error: features holds values beyond ±1e+100 (their squares overflow); check the "
                                 "input's scale"]


# ------------------------------------------------------------------------------------------------ opening inputs


def test_open_regular_refuses_what_is_not_a_regular_file_without_waiting_or_following(tmp_path):
    """The one opener verify, compare, the windows dataset reader and parse's replacing share."""
    import errno

    from rfbench.errors import FormatError
    from rfbench.io.files import NotRegularFile, open_regular, read_regular

    data = tmp_path / "data.bin"
    data.write_bytes(b"x" * 100)
    assert read_regular(data, 100, "input rows") == b"x" * 100
    with pytest.raises(FormatError, match="100 bytes, more than the 99 rfbench reads"):
        read_regular(data, 99, "input rows")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFile):  # would block without O_NONBLOCK: no writer ever comes
        open_regular(fifo)
    with pytest.raises(NotRegularFile):
        open_regular(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(data)
    with pytest.raises(OSError) as caught:
        open_regular(link)
    assert caught.value.errno == errno.ELOOP and not isinstance(caught.value, NotRegularFile)
    fd = open_regular(data)
    try:
        assert os.get_inheritable(fd) is False
    finally:
        os.close(fd)


def test_every_output_gets_the_permissions_numpy_save_would_give(tmp_path):
    """Temporary files are created 0600 and renamed into place: each output is set to 0666 less the umask
    first, like a file numpy.save or open() makes, not left readable by its owner alone."""
    from rfbench.datasets.windows.npy import NpyWriter
    from rfbench.io.files import file_mode, write_json

    old = os.umask(0o027)
    try:
        assert file_mode() == 0o640
        write_json(tmp_path / "report.json", {"a": 1})
        with NpyWriter(tmp_path / "X.npy", np.dtype(np.float32), (3,)) as w:
            w.write(np.zeros((2, 3), dtype=np.float32))
        np.save(tmp_path / "numpy.npy", np.zeros(3))
    finally:
        os.umask(old)
    modes = {name: oct(os.stat(tmp_path / name).st_mode & 0o777) for name in ("report.json", "X.npy", "numpy.npy")}
    assert modes == {"report.json": "0o640", "X.npy": "0o640", "numpy.npy": "0o640"}
