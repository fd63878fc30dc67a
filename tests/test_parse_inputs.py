"""What a parse job reads stays as it was: an output that is one of the job's inputs fails that input (``--force``
or not), ``--skip-existing`` reads an existing archive's recorded source with bounded reads only, and an ESP32 line
with text after its list's ``]`` (two lines joined by a lost newline) is skipped and counted, not half read.

``parse a.dat a.npz --format intel5300 --force`` (a.npz a CSI log) renamed a.dat's archive over a.npz, which the
same job had just read; ``--skip-existing`` beside an archive whose ``source_sha256.npy`` header declares shape
(2**40,) failed the input as "not enough memory" (NumPy's ``read_array`` allocates what a header declares); and
an ESP32 line ``...,[1 2 3 4]xyz [5 6 7 8]`` was kept as ``[1 2 3 4]`` with nothing counted.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

import naive
from rfbench.cli import app
from rfbench.io import esp32
from rfbench.io.parse_files import ParseOptions, parse_many, recorded_source
from rfbench.io.writer import synthetic_log

INPUT = "is an input of this job"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- an output that is an input ------------------------------------------------------------------------------


def test_force_never_renames_an_archive_over_another_input(runner, tmp_path):
    a, log = tmp_path / "a.dat", tmp_path / "a.npz"  # a.npz: a CSI log that happens to end in .npz
    a.write_bytes(synthetic_log(4, seed=1))
    log.write_bytes(synthetic_log(6, seed=2))
    before = _digest(log)
    result = runner.invoke(app, ["parse", str(a), str(log), "--format", "intel5300", "--force", "--json"])
    assert result.exit_code == 2, result.output  # a failed input: exit 2, as for any failed input
    assert _digest(log) == before
    doc = json.loads(result.stdout)
    assert (doc["written"], doc["failed"]) == (1, 1)
    first, second = doc["files"]
    assert first["status"] == "failed" and INPUT in first["error"] and "write elsewhere" in first["error"]
    assert second["status"] == "written" and second["output"] == str(tmp_path / "a.npz.npz")
    assert np.load(tmp_path / "a.npz.npz")["source_sha256"] == before  # the other input went on
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith(f"error: {a}: ") and INPUT in errors[0], result.stderr


def test_a_folder_run_never_writes_over_the_archives_it_takes_as_inputs(runner, tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "a.dat").write_bytes(synthetic_log(5, seed=3))
    assert runner.invoke(app, ["parse", str(folder)]).exit_code == 0
    archive = folder / "a.npz"
    before = _digest(archive)
    result = runner.invoke(app, ["parse", str(folder), "--glob", "*", "--force", "--json"])
    assert result.exit_code == 2, result.output
    assert _digest(archive) == before
    by_name = {f["name"]: f for f in json.loads(result.stdout)["files"]}
    assert by_name["a.dat"]["status"] == "failed" and INPUT in by_name["a.dat"]["error"]
    assert sorted(p.name for p in folder.iterdir()) == ["a.dat", "a.npz"]  # a.npz is no log: nothing written


def test_an_output_that_is_an_input_under_another_name_fails_that_input_alone(tmp_path):
    logs = [tmp_path / "x.dat", tmp_path / "y.dat"]
    for k, p in enumerate(logs):
        p.write_bytes(synthetic_log(3 + k, seed=10 + k))
    out = tmp_path / "out"
    out.mkdir()
    os.link(logs[1], out / "x.npz")  # x.dat's output is y.dat under another name
    before = _digest(logs[1])
    for existing in ("refuse", "replace", "keep-matching"):  # y.npz: written, replaced, kept
        job = parse_many([(p, None) for p in logs], ParseOptions(out_dir=out, existing=existing))
        x, y = job.files
        assert x["status"] == "failed" and INPUT in x["error"] and f"(as {logs[1]})" in x["error"], existing
        assert y["status"] in ("written", "kept") and y["output"] == str(out / "y.npz"), existing
        assert _digest(logs[1]) == before and os.path.samefile(out / "x.npz", logs[1])


# -- --skip-existing reads the recorded source with bounded reads ----------------------------------------------


def _npy(header: str, body: bytes = b"x" * 16) -> bytes:
    h = header.encode("latin1")
    h += b" " * (64 - ((10 + len(h) + 1) % 64)) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + body


def test_skip_existing_never_allocates_the_shape_an_archive_header_declares(tmp_path):
    a = tmp_path / "a.dat"
    a.write_bytes(synthetic_log(3, seed=4))
    with zipfile.ZipFile(tmp_path / "a.npz", "w") as zf:
        zf.writestr("source_sha256.npy", _npy("{'descr': '|i1', 'fortran_order': False, 'shape': (1099511627776,), }"))
        zf.writestr("source_bytes.npy", _npy("{'descr': '<i8', 'fortran_order': False, 'shape': (), }"))
    before = _digest(tmp_path / "a.npz")
    assert recorded_source(tmp_path / "a.npz") is None
    job = parse_many([(a, None)], ParseOptions(existing="keep-matching"))
    rec = job.files[0]
    assert rec["status"] == "failed" and "exists but records no source input" in rec["error"], rec["error"]
    assert _digest(tmp_path / "a.npz") == before


def test_recorded_source_reads_what_parse_writes_and_refuses_anything_else(tmp_path):
    a = tmp_path / "a.dat"
    a.write_bytes(synthetic_log(3, seed=5))
    assert parse_many([(a, None)]).files[0]["status"] == "written"
    assert recorded_source(tmp_path / "a.npz") == (_digest(a), a.stat().st_size)

    def forged(digest: bytes, size: bytes) -> Path:
        path = tmp_path / "forged.npz"
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("source_sha256.npy", digest)
            zf.writestr("source_bytes.npy", size)
        return path

    digest = "ab" * 32
    good_digest = _npy("{'descr': '<U64', 'fortran_order': False, 'shape': (), }", digest.encode("utf-32-le"))
    good_size = _npy("{'descr': '<i8', 'fortran_order': False, 'shape': (), }", struct.pack("<q", 1234))
    assert recorded_source(forged(good_digest, good_size)) == (digest, 1234)
    for bad_digest, bad_size in [
        (_npy("{'descr': '<U64', 'fortran_order': False, 'shape': (1,), }", digest.encode("utf-32-le")), good_size),
        (_npy("{'descr': '<U64', 'fortran_order': False, 'shape': (), }", b"short"), good_size),
        (good_digest, _npy("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", struct.pack("<d", 1.0))),
        (good_digest, _npy("{'descr': '<i8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }")),
        (good_digest, b"not an npy at all"),
    ]:
        assert recorded_source(forged(bad_digest, bad_size)) is None


# -- ESP32: text after the list's closing bracket -------------------------------------------------------------

HEAD = "CSI_DATA,AP,3C:71:BF:6D:2A:78,-73,11,1,0,1,1,1,0,0,0,0,-93,0,1,1,80272146,0,101,0,0,80.363225,4,"


def test_esp32_line_with_text_after_its_list_is_skipped_and_counted():
    good = HEAD + "[1 2 3 4 ]"
    lines = [
        good,
        good + good,  # two lines joined by a lost newline
        HEAD + "[1 2 3 4]xyz [5 6 7 8]",
        HEAD + "[1 2 3 4]   ",  # spaces after the list: the line ends there
        HEAD + "[1 2 3 4] ,",
        good,
    ]
    data = ("\r\n".join(lines) + "\r\n").encode()
    log = esp32.read(data)
    # kept: the two good lines and the one with spaces only after its list; skipped: the other three
    assert log.n_records == 3
    assert dict(log.skipped) == {"text_after_list": 3}
    ref = naive.naive_read_esp32(data)
    assert len(ref["records"]) == 3 and ref["skipped"] == {"text_after_list": 3}
    assert log.csi[:, :, 0, 0].tolist() == [[complex(2, 1), complex(4, 3)]] * 3


def test_esp32_joined_lines_of_the_shared_capture_count_one_skipped_line(tmp_path):
    from tests.conftest import conformance_path

    path = conformance_path("hardware", "example_csi.csv")
    lines = Path(path).read_bytes().decode().splitlines()
    joined = "\n".join(lines[:2] + [lines[2] + lines[3]] + lines[4:]) + "\n"
    whole, cut = esp32.read(Path(path).read_bytes()), esp32.read(joined.encode())
    assert cut.n_records == whole.n_records - 2  # both joined lines are lost, and the loss is counted
    assert dict(cut.skipped) == {"text_after_list": 1}


# -- a signal while the summary is printed ---------------------------------------------------------------------


def _blocked_writing(pid: int) -> bool:
    """Whether the process's main thread waits to write into a full pipe (Linux; elsewhere, after a pause)."""
    try:
        return Path(f"/proc/{pid}/wchan").read_text().endswith("pipe_write")  # (anon_pipe_write on newer kernels)
    except OSError:
        return False


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_signal_while_the_json_is_written_leaves_it_whole(tmp_path, sig):
    """Every input done, rfbench blocked writing its --json document into a pipe nobody reads yet (the document is
    larger than the pipe): a signal then lets the document finish, one stderr line says so, exit 128 + signal.
    Before, SIGTERM killed the process mid-document and SIGINT cut it short (a truncated JSON on stdout)."""
    import signal
    import subprocess
    import sys
    import time

    signum = getattr(signal, sig)
    src = tmp_path / "in"
    src.mkdir()
    first = src / "f000.dat"
    first.write_bytes(synthetic_log(2, seed=6))
    n = 400  # about 400 bytes of JSON each: 160 KB, more than a pipe holds (64 KiB on Linux)
    for k in range(1, n):
        os.link(first, src / f"f{k:03d}.dat")
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "rfbench", "parse", str(src), "-o", str(out), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if out.is_dir() and len(list(out.glob("*.npz"))) == n and (_blocked_writing(proc.pid) or not
                                                                   Path("/proc/self/wchan").exists()):
            break
        time.sleep(0.02)
    time.sleep(0.3)
    assert proc.poll() is None, "rfbench ended before it was signalled"
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=240)
    assert proc.returncode == 128 + signum, (proc.returncode, stderr[-2000:])
    doc = json.loads(stdout)  # whole
    assert doc["written"] == n and "interrupted" not in doc
    lines = [line for line in stderr.decode().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0] == (f"error: {sig} arrived after every input had finished, while the JSON "
                                            "document was printed; it is complete"), stderr[-2000:]
