"""verify's exit code is its verdict, whatever becomes of stdout: a MATCH piped into a reader that stops early
(``| head``) or written to a full disk was exit 1 (with a traceback on a full disk), the code of a forged report;
a MISMATCH written to a full disk was exit 2, the code of bad input."""

from __future__ import annotations

import errno
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from rfbench.commands._common import stdout_console, verdict_output


class _Failing(io.StringIO):
    def __init__(self, exc):
        super().__init__()
        self.exc = exc

    def write(self, text):
        raise self.exc

    def flush(self):
        raise self.exc


@pytest.mark.parametrize("code", [0, 1])
def test_a_full_disk_keeps_the_verdicts_code_with_one_line(monkeypatch, capsys, code):
    monkeypatch.setattr(sys, "stdout", _Failing(OSError(errno.ENOSPC, "No space left on device")))
    with pytest.raises(typer.Exit) as ended:
        with verdict_output(code):
            print("MATCH")
    assert ended.value.exit_code == code
    err = capsys.readouterr().err
    assert err == f"error: the verdict could not be written to stdout (no space left on device); the exit code " \
                  f"{code} is the verdict\n"


def test_a_closed_pipe_keeps_the_verdicts_code_silently(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdout", _Failing(BrokenPipeError(errno.EPIPE, "Broken pipe")))
    with pytest.raises(typer.Exit) as ended:
        with verdict_output(0):
            print("MATCH")
    assert ended.value.exit_code == 0 and capsys.readouterr().err == ""
    with verdict_output(1, end=False):  # a MISMATCH goes on to raise its own error
        print("MISMATCH")


def test_the_verdicts_console_raises_a_closed_pipe_where_rich_exits_1():
    console = stdout_console(broken_pipe=True)
    console.file = _Failing(BrokenPipeError(errno.EPIPE, "Broken pipe"))
    with pytest.raises(BrokenPipeError):
        console.print("MATCH")
    other = stdout_console()
    other.file = _Failing(BrokenPipeError(errno.EPIPE, "Broken pipe"))
    other.print("x")  # every other command goes on to its own exit code (Rich's own handling exited 1)


def test_a_closed_or_narrow_stream_is_made_writable(monkeypatch):
    """stdout closed (``>&-``: Python has none) writes to the null device; a handler that cannot write every
    character (``PYTHONIOENCODING=ascii:surrogateescape``) becomes ``backslashreplace``; ``COLUMNS=0`` gives a
    console of at least MIN_WIDTH columns (a MISMATCH printed nothing at width 0)."""
    from rfbench.cli import _tolerant_streams
    from rfbench.commands._common import MIN_WIDTH

    monkeypatch.setattr(sys, "stdout", None)
    ascii_err = io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors="surrogateescape")
    monkeypatch.setattr(sys, "stderr", ascii_err)
    _tolerant_streams()
    assert sys.stdout is not None and sys.stdout.name == os.devnull
    print("MATCH caf\u00e9")
    sys.stderr.write("caf\u00e9 \udcff\n")
    assert sys.stderr.errors == "backslashreplace"
    sys.stdout.close()
    monkeypatch.setenv("COLUMNS", "0")
    assert stdout_console().width >= MIN_WIDTH


def test_the_last_flush_of_a_broken_stream_cannot_change_the_exit_code(monkeypatch):
    """What is still buffered for a reader that has gone is let go as the command ends: the interpreter's own
    last flush then has nothing to fail on (it made the exit code 120)."""
    from rfbench.cli import _settle_streams

    read, write = os.pipe()
    os.close(read)
    stream = io.TextIOWrapper(io.BufferedWriter(io.FileIO(write, "w")), encoding="utf-8")
    stream.write("MATCH\n")  # buffered, not yet written
    monkeypatch.setattr(sys, "stdout", stream)
    _settle_streams()
    stream.write("more\n")
    stream.flush()  # the descriptor is the null device now
    stream.close()


def test_shell_completion_never_replaces_a_command(monkeypatch):
    """``_RFBENCH_COMPLETE`` set made Click answer completion ("Shell ... not supported", exit 1: a mismatch's
    code) instead of running verify; completion is off, and the variable is ignored."""
    env = {k: v for k, v in os.environ.items()}
    env["_RFBENCH_COMPLETE"] = "complete_bash"
    done = subprocess.run([sys.executable, "-m", "rfbench", "--version"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("rfbench "), done.stdout + done.stderr


def _script() -> str:
    script = Path(sys.executable).parent / "rfbench"
    if not script.is_file():
        pytest.skip("no rfbench console script beside this interpreter")
    return str(script)


def _run(argv, stdout) -> subprocess.CompletedProcess:
    return subprocess.run(argv, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=600)


@pytest.mark.long
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_verify_exits_with_its_verdict_when_stdout_fails(tiny_demo, tmp_path):
    forged = tmp_path / "forged"
    shutil.copytree(tiny_demo, forged)
    path = forged / "gesture" / "report.json"
    doc = json.loads(path.read_text())
    doc["results"][0]["model"]["value"] = 0.999
    path.write_text(json.dumps(doc))
    for root, code in ((tiny_demo, 0), (forged, 1)):
        for extra in ([], ["--json"]):
            argv = [_script(), "verify", str(root / "gesture" / "report.json"), "--root", str(root), *extra]
            with open("/dev/full", "w") as full:
                done = _run(argv, full)
            assert done.returncode == code, done.stderr
            assert "Traceback" not in done.stderr and "could not be written to stdout" in done.stderr
            read, write = os.pipe()
            os.close(read)  # a reader that has gone
            try:
                done = _run(argv, write)
            finally:
                os.close(write)
            assert done.returncode == code, done.stderr
            assert "Traceback" not in done.stderr and "could not be written" not in done.stderr
            assert ("differ on re-run" in done.stderr) is (code == 1)
            for shell in (f"exec >&-; {_quoted(argv)}", f"{_quoted(argv)} 2>&1 | true; exit ${{PIPESTATUS[0]}}",
                          f"{_quoted(argv)} >/dev/full 2>/dev/full"):
                done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=600)
                assert done.returncode == code, (shell, done.stderr)
                assert "Traceback" not in done.stderr


def _quoted(argv) -> str:
    import shlex

    return " ".join(shlex.quote(a) for a in argv)


@pytest.mark.long
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize("json_out", [False, True])
def test_a_command_whose_printing_fails_ends_with_one_line_and_exit_2(tiny_demo, tmp_path, json_out):
    """compare and windows (score, predict, ingest, split alike) printing to a full disk ended with a traceback and
    exit 1, the code of a failed check: a comparison or a build whose summary could not be printed read as a
    mismatch (found by an adversarial probe; the test fails on the code before). The files are written as ever."""
    flag = ["--json"] if json_out else []
    argvs = [[_script(), "compare", str(tiny_demo / "bvp" / "report.json"), "claims:widar3-bvp", *flag],
             [_script(), "windows", str(tiny_demo / "bvp-split.json"), "--side", "test", "-o", str(tmp_path / "w"),
              *flag]]
    for argv in argvs:
        with open("/dev/full", "w") as full:
            done = _run(argv, full)
        assert done.returncode == 2, done.stderr
        assert done.stderr == "error: standard output could not be written (no space left on device): what the " \
                              "command printed is incomplete\n", done.stderr
    assert sorted(os.listdir(tmp_path / "w")) == ["X.npy", "index.json", "y.npy"]


@pytest.mark.long
def test_a_reader_that_stops_early_leaves_a_command_s_exit_code_alone(tiny_demo, tmp_path):
    """``compare REPORT CLAIMS | head`` (or ``split ... --json | true``) ended with exit 1, the code of a failed check,
    once the reader had closed the pipe: Rich and Click end the process so; the rest is now not printed and the
    command ends with its own code, silently (the test fails on the code before)."""
    argvs = [[_script(), "compare", str(tiny_demo / "bvp" / "report.json"), "claims:widar3-bvp"],
             [_script(), "compare", str(tiny_demo / "bvp" / "report.json"), "claims:widar3-bvp", "--json"],
             [_script(), "split", str(tiny_demo / "bvp-manifest.json"), "-p", "cross-subject", "--test", "user2", "-o",
              str(tmp_path / "s.json"), "--json"]]
    for argv in argvs:
        done = subprocess.run(["bash", "-c", f"sleep 0.2 | true; {_quoted(argv)} | true; exit ${{PIPESTATUS[0]}}"],
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0 and done.stderr == "", (argv, done.returncode, done.stderr)
    assert (tmp_path / "s.json").is_file()
