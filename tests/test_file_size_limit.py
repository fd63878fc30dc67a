"""A file size limit (``ulimit -f``) met while writing is one line naming what could not be written, exit 2 —
and in a verify re-run, no verdict: the verifier's limit is not a difference in the report.

Before: ``rfbench windows`` said only ``error: file too large`` (the array's writer raised the write's error, which
names no file, and closing the half-written file raised it again over the first); ``rfbench verify`` under the
limit ended as if stopped from outside (exit 153, "interrupted by SIGXFSZ"), or, when its re-run met the limit,
called the report a MISMATCH (exit 1)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from windowsdata import mmfi_case

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_FSIZE as Linux applies it")


def _limited(argv: list[str], limit: int, cwd: Path) -> subprocess.CompletedProcess:
    def lower():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    # no .pyc written under the limit: CPython writes them with one unchecked write, and a cut one stays
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-m", "rfbench", *argv], cwd=cwd, preexec_fn=lower, env=env,
                          capture_output=True, text=True, timeout=300)


def test_windows_past_the_limit_names_the_array_and_leaves_nothing(tmp_path):
    _, _, split = mmfi_case(tmp_path, frames=4)
    out = tmp_path / "out"
    done = _limited(["windows", str(split), "--side", "test", "-o", str(out)], 16 << 10, tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert lines[0].startswith(f"error: cannot write {out / 'X.npy'}: file too large: past the file size limit")
    assert not out.exists() or list(out.iterdir()) == []


def test_verify_whose_rerun_meets_the_limit_decides_nothing(tmp_path):
    from typer.testing import CliRunner

    from posedata import pose_files
    from rfbench.cli import app
    from test_verify import ARGS

    pose_files(tmp_path)
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert CliRunner().invoke(app, ARGS + ["-o", "out/report.json"]).exit_code == 0
    finally:
        os.chdir(old)
    report = tmp_path / "out" / "report.json"
    done = _limited(["verify", str(report), "--root", str(tmp_path)], 32 << 10, tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "MISMATCH" not in done.stdout
    assert "could not write what it needs" in done.stderr and "nothing was decided" in done.stderr
    assert "file size limit" in done.stderr
    # and without the limit the same report matches
    assert subprocess.run([sys.executable, "-m", "rfbench", "verify", str(report), "--root", str(tmp_path)],
                          capture_output=True, text=True, timeout=300).returncode == 0


def test_no_module_is_left_cut_in_pycache_under_the_limit(tmp_path):
    """With a module's ``.pyc`` missing (a fresh install, an upgrade), two runs under the limit: the first left it
    cut at the limit, and the second could not import it (``EOFError: marshal data too short``)."""
    import shutil

    import rfbench

    copy = tmp_path / "rfbench"
    shutil.copytree(Path(rfbench.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    code = "import rfbench.io.files, rfbench.protocols.content; print('ok')"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(tmp_path)

    def lower():
        resource.setrlimit(resource.RLIMIT_FSIZE, (32 << 10, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, preexec_fn=lower,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-400:]
