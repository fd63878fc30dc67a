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
    with pytest.raises(SystemExit):  # every other command keeps Rich's own handling
        other.print("x")


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
