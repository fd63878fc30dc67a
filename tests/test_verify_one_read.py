"""verify's own checks parse the bytes it hashed, never a second read by path.

verify hashed the predictions, the prediction record, the windows index, the split and the manifests, then read
them again by path for its own checks: the replay compared the model's output with that second read of the
predictions, and the second ingest compared the tree with a second read of the manifest. A file rewritten in
place between the two reads (same inode, same size; by a process watching verify's reads) was checked in its
honest version and scored in its forged one: MATCH on an accuracy of 1.000 the model never made, and on a
manifest whose labels were the model's answers, with --dataset pinned.
"""

from __future__ import annotations

import os
import shutil

import pytest

from rfbench.errors import VerificationError
from rfbench.io.paths import resolve
from rfbench.report import closed_world
from rfbench.report.closed_world import Budget, ClosedWorld


def _rewrite_in_place(path, data: bytes) -> None:
    """Same inode, same size, other bytes."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, data, 0)
    finally:
        os.close(fd)


def test_a_file_rewritten_in_place_after_its_hash_is_never_read_as_hashed(tmp_path):
    f = tmp_path / "scores.json"
    f.write_bytes(b'{"schema": "rfbench.prediction/1", "x": 1}')
    world = ClosedWorld(root=tmp_path, budget=Budget(60, 1 << 30))
    item = resolve("scores.json", tmp_path, what="input", root=tmp_path)
    world.digest(item, "input pred-record")
    assert world.read(item, "input pred-record") == f.read_bytes()
    _rewrite_in_place(f, b'{"schema": "rfbench.prediction/1", "x": 2}')
    with pytest.raises(VerificationError, match="changed while verify ran"):
        world.read(item, "input pred-record")
    with pytest.raises(VerificationError, match="changed while verify ran"):
        world.document(item, "prediction", "the prediction record")


@pytest.mark.parametrize("victim", ["pred", "manifest"])
def test_verify_refuses_predictions_or_a_manifest_rewritten_after_their_hash(tiny_demo, tmp_path, monkeypatch,
                                                                            victim):
    """The moment of the race, made deterministic: right after verify hashes the file, its bytes change in
    place. verify must refuse on its own later reads (before: the record check or the second ingest read the
    new bytes and went on from them)."""
    from rfbench.report.verify import verify_report

    d = tmp_path / "d"
    shutil.copytree(tiny_demo, d, symlinks=True)
    report = d / "bvp" / "report.json"
    target = {"pred": d / "bvp" / "scores.npy", "manifest": d / "bvp-manifest.json"}[victim]
    assert target.is_file()
    real = closed_world.hash_resolved
    swapped = []

    def hash_then_swap(item, budget, what):
        digest = real(item, budget, what)
        if item.path == target.resolve() and not swapped:
            data = bytearray(target.read_bytes())
            data[-1] ^= 1  # the last byte: a prediction's, or the manifest's closing newline
            _rewrite_in_place(target, bytes(data))
            swapped.append(what)
        return digest

    monkeypatch.setattr(closed_world, "hash_resolved", hash_then_swap)
    with pytest.raises(VerificationError, match="changed while verify ran"):
        verify_report(report, root=d)
    assert swapped


def test_a_sweeps_cell_report_rewritten_after_its_hash_is_refused(tiny_demo, tmp_path, monkeypatch):
    """The same rule for a robustness summary: each cell report is parsed from the bytes hashed."""
    from rfbench.report.verify import verify_report

    d = tmp_path / "d"
    shutil.copytree(tiny_demo, d, symlinks=True)
    summary = d / "pose" / "robustness" / "summary.json"
    target = (d / "pose" / "robustness" / "clean" / "report.json").resolve()
    assert target.is_file()
    real = closed_world.hash_resolved
    swapped = []

    def hash_then_swap(item, budget, what):
        digest = real(item, budget, what)
        if item.path == target and not swapped:
            data = bytearray(target.read_bytes())
            data[-1] ^= 1
            _rewrite_in_place(target, bytes(data))
            swapped.append(what)
        return digest

    monkeypatch.setattr(closed_world, "hash_resolved", hash_then_swap)
    with pytest.raises(VerificationError, match="changed while verify ran"):
        verify_report(summary, root=d, cells=("clean",))
    assert swapped


@pytest.mark.parametrize("signame", ["SIGUSR1", "SIGALRM", "SIGQUIT", "SIGXCPU"])
def test_a_signal_that_ends_verify_leaves_no_temporary_folder(tiny_demo, tmp_path, signame):
    """SIGTERM, SIGINT and SIGHUP were handled; SIGUSR1, SIGALRM, SIGUSR2... ended verify by their default,
    leaving its rfbench-verify-* folder (the world file, a manifest ingested again) in the temporary folder — and,
    once those were handled, so did the signals that dump core by default (SIGQUIT, Ctrl-\\; SIGABRT; SIGXCPU of a
    CPU-time limit on verify itself: found by an adversarial probe)."""
    import signal
    import subprocess
    import sys
    import time

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    report = tiny_demo / "pose" / "report.json"
    proc = subprocess.Popen([sys.executable, "-I", "-m", "rfbench", "verify", str(report), "--root", str(tiny_demo)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(tmp)})
    deadline = time.time() + 60
    while time.time() < deadline and not any(tmp.glob("rfbench-verify-*")):
        time.sleep(0.02)
    assert any(tmp.glob("rfbench-verify-*")), "verify never made its temporary folder"
    proc.send_signal(getattr(signal, signame))
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + getattr(signal, signame), err
    assert "interrupted" in err
    assert not any(tmp.glob("rfbench-verify-*")), list(tmp.iterdir())


def test_a_signal_while_a_class_is_made_is_still_the_signal():
    """Python wraps an exception raised while a class is made (``__set_name__``: a dataclass's fields, as the
    first import of rfbench.datasets.template makes them) in a RuntimeError: a SIGALRM that landed there ended
    verify with a traceback and exit 1 instead of one line and exit 142 (seen in a fresh clone, where imports are
    slower). The guard knows a signal came, whatever exception carries it out."""
    import signal

    from rfbench.report.verify import Interrupted, rerun_guard

    class Sends:
        def __set_name__(self, owner, name):
            os.kill(os.getpid(), signal.SIGUSR1)
            for _ in range(1000):  # the handler runs here, between two steps of this loop
                pass

    with pytest.raises(Interrupted) as info:
        with rerun_guard():
            class Made:
                field = Sends()
    assert info.value.exit_code == 128 + signal.SIGUSR1
