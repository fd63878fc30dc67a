"""The parse job (rfbench.io.parse_files): parallel workers, archives equal to read(), the durability rule
(data on disk before the rename, one folder fsync per batch), cancellation, existing outputs, folder search."""

from __future__ import annotations

import errno
import hashlib
import os
import tempfile
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest

from rfbench.errors import ValidationError
from rfbench.io import parse_files
from rfbench.io.intel5300 import read
from rfbench.io.parse_files import ParseOptions, find_inputs, parse_many
from rfbench.io.writer import LogBuilder, encode_log, synthetic_log


def refuse_new_files(monkeypatch, folder: Path, route: str) -> None:
    """A folder that refuses new files, as a read-only one answers root-less processes (EACCES): through
    O_TMPFILE (``route="unnamed"``) or, on a file system without it, through mkstemp (``"named"``)."""
    if route == "named" or not parse_files._O_TMPFILE:
        _named_only(monkeypatch)

        def refuse(*args, **kwargs):
            raise PermissionError(errno.EACCES, "Permission denied", str(folder / ".cap.npz.abcd.tmp"))

        monkeypatch.setattr(tempfile, "mkstemp", refuse)
        return
    real_open = os.open

    def refuse_tmpfile(path, flags, *args, **kwargs):
        if flags & parse_files._O_TMPFILE == parse_files._O_TMPFILE:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(parse_files.os, "open", refuse_tmpfile)


def _logs(folder: Path, sizes, **kwargs) -> list:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k, n in enumerate(sizes):
        p = folder / f"log{k:03d}.dat"
        p.write_bytes(synthetic_log(n, seed=k, **kwargs))
        paths.append(p)
    return paths


def _mixed_log() -> bytes:
    """3x3 records with a few 3x1 and 2x2 ones: padding, permutation and the general unpack path."""
    rng = np.random.default_rng(7)
    n = 60
    pairs = rng.integers(-128, 128, size=(n, 30, 3, 3, 2)).astype(np.int8)
    ntx = np.where(np.arange(n) % 7 == 0, 1, 3)
    nrx = np.where(np.arange(n) % 11 == 0, 2, 3)
    pairs[ntx == 1, :, :, 1:] = 0
    sel = rng.choice([0b100100, 0b011000, 0b100001, 0b001001, 0b010010, 0b000110, 0b101010], n)
    return encode_log(pairs, {"antenna_sel": sel, "agc": np.full(n, 30)}, nrx=nrx, ntx=ntx)


def _assert_archive_is_the_log(archive: Path, log_path: Path, raw_int8=False, scaled=False):
    log = read(log_path, raw_int8=raw_int8)
    with zipfile.ZipFile(archive) as zf:
        assert zf.testzip() is None
    with np.load(archive, allow_pickle=False) as z:
        key = "csi_int8" if raw_int8 else "csi"
        np.testing.assert_array_equal(z[key], getattr(log, key))
        assert z[key].dtype == getattr(log, key).dtype
        for name, arr in log.headers().items():
            np.testing.assert_array_equal(z[name], arr, err_msg=name)
            assert z[name].dtype == arr.dtype, name
        if scaled:
            np.testing.assert_array_equal(z["csi_scaled"], log.scaled_csi())
        data = log_path.read_bytes()
        assert str(z["source_sha256"]) == hashlib.sha256(data).hexdigest()
        assert int(z["source_bytes"]) == len(data)


@pytest.mark.parametrize("workers", [1, 3])
def test_every_archive_equals_read_of_its_log(tmp_path, workers):
    # sizes up and down, so a worker's reused buffers shrink and grow between files
    paths = _logs(tmp_path / "in", [40, 3, 400, 1, 120, 40], nrx=3, ntx=2, non_csi_every=3)
    (tmp_path / "in" / "mixed.dat").write_bytes(_mixed_log())
    paths.append(tmp_path / "in" / "mixed.dat")
    job = parse_many([(p, tmp_path / "in") for p in paths], ParseOptions(out_dir=tmp_path / "out", workers=workers))
    assert [f["status"] for f in job.files] == ["written"] * len(paths) and not job.cancelled
    for p, f in zip(paths, job.files):
        assert f["output"] == str((tmp_path / "out" / p.name).with_suffix(".npz"))
        assert f["input"] == str(p) and f["name"] == p.name and f["error"] is None
        assert f["summary"]["records"] == read(p).n_records
        _assert_archive_is_the_log(Path(f["output"]), p)


def test_raw_int8_and_scaled_archives(tmp_path):
    paths = _logs(tmp_path / "in", [30, 5], nrx=2, ntx=3)
    for raw_int8, scaled in [(True, False), (False, True)]:
        out = tmp_path / f"out-{raw_int8}-{scaled}"
        job = parse_many([(p, None) for p in paths], ParseOptions(out_dir=out, raw_int8=raw_int8, scaled=scaled))
        for p, f in zip(paths, job.files):
            _assert_archive_is_the_log(Path(f["output"]), p, raw_int8=raw_int8, scaled=scaled)


def test_archives_do_not_depend_on_the_number_of_workers(tmp_path):
    paths = _logs(tmp_path / "in", [50, 7, 200, 13])
    got = {}
    for workers in (1, 2, 4):
        out = tmp_path / f"out{workers}"
        parse_many([(p, None) for p in paths], ParseOptions(out_dir=out, workers=workers))
        got[workers] = [(out / p.with_suffix(".npz").name).read_bytes() for p in paths]
    assert got[1] == got[2] == got[4]


def _named_only(monkeypatch):
    """The job as it runs on a file system without O_TMPFILE: every archive a hidden temporary file."""
    real_open = os.open

    def no_tmpfile(path, flags, *args, **kwargs):
        if parse_files._O_TMPFILE and flags & parse_files._O_TMPFILE == parse_files._O_TMPFILE:
            raise OSError(errno.EOPNOTSUPP, "Operation not supported", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(parse_files.os, "open", no_tmpfile)


def _record_durability(monkeypatch) -> list:
    """Events of the commit, each naming the file (the inode) by what /proc says its descriptor is."""
    if not os.path.exists("/proc/self/fd"):
        pytest.skip("needs /proc to name the file a descriptor refers to")
    events = []
    real_replace, real_link = os.replace, parse_files._link
    monkeypatch.setattr(parse_files, "_datasync",
                        lambda fd: events.append(("datasync", os.readlink(f"/proc/self/fd/{fd}"))))
    monkeypatch.setattr(parse_files, "_fsync_dir", lambda d: events.append(("fsync_dir", str(d))))

    def link(fd_dir, fd, path):
        events.append(("link", os.readlink(f"/proc/self/fd/{fd}"), str(path)))
        real_link(fd_dir, fd, path)

    def replace(src, dst):
        events.append(("rename", str(src), str(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(parse_files, "_link", link)
    monkeypatch.setattr(parse_files.os, "replace", replace)
    monkeypatch.setattr(parse_files, "BATCH_SECONDS", 30.0)  # every file of a job in one batch
    return events


def _assert_one_folder_sync_per_batch(events, out, tmp_path, named):
    dir_syncs = [e for e in events if e[0] == "fsync_dir"]
    assert ("fsync_dir", str(out)) in dir_syncs
    assert events.index(("fsync_dir", str(out))) > max(events.index(e) for e in named)
    return dir_syncs


@pytest.mark.skipif(not parse_files._O_TMPFILE, reason="O_TMPFILE is Linux's")
def test_new_outputs_are_on_disk_before_they_get_a_name_and_folders_are_synced_once_per_batch(tmp_path,
                                                                                             monkeypatch):
    """The durability rule: each file's fdatasync precedes the link that names it, each folder's fsync follows
    the names of its batch, and a batch shares one folder fsync (per-file durable writes would sync the folder
    per file). A new output never had another name: it is linked at its own, and nothing is renamed."""
    events = _record_durability(monkeypatch)
    paths = _logs(tmp_path / "in", [5] * 12)
    out = tmp_path / "out"
    job = parse_many([(p, None) for p in paths], ParseOptions(out_dir=out, workers=2))
    assert job.count("written") == 12
    links = [e for e in events if e[0] == "link"]
    assert sorted(Path(dst).name for _, _, dst in links) == sorted(p.stem + ".npz" for p in paths)
    assert not [e for e in events if e[0] == "rename"]
    for _, file, dst in links:
        assert file.endswith("(deleted)")  # /proc's name for a file with no name yet
        assert events.index(("datasync", file)) < events.index(("link", file, dst))
    dir_syncs = _assert_one_folder_sync_per_batch(events, out, tmp_path, links)
    assert ("fsync_dir", str(tmp_path)) in dir_syncs and len(dir_syncs) == 2  # out was created


@pytest.mark.parametrize("route", ["unnamed", "named"])
def test_a_replaced_output_is_renamed_over_once_its_replacement_is_on_disk(tmp_path, monkeypatch, route):
    """``existing="replace"``: the new archive gets a hidden temporary name only once it is on disk (or has one
    from the start without O_TMPFILE), and that name is renamed over the output, which stays whole until then."""
    if route == "named":
        _named_only(monkeypatch)
    elif not parse_files._O_TMPFILE:
        pytest.skip("O_TMPFILE is Linux's")
    paths = _logs(tmp_path / "in", [5] * 6)
    out = tmp_path / "out"
    parse_many([(p, None) for p in paths], ParseOptions(out_dir=out))
    for p in paths:
        p.write_bytes(synthetic_log(7, seed=50))
    events = _record_durability(monkeypatch)
    job = parse_many([(p, None) for p in paths], ParseOptions(out_dir=out, existing="replace", workers=2))
    assert job.count("written") == 6
    renames = [e for e in events if e[0] == "rename"]
    assert sorted(Path(dst).name for _, _, dst in renames) == sorted(p.stem + ".npz" for p in paths)
    for _, tmp, dst in renames:
        assert Path(tmp).name.startswith("." + Path(dst).name + ".") and tmp.endswith(".tmp")
        assert events.index(("datasync", tmp) if route == "named" else
                            next(e for e in events if e[0] == "link" and e[2] == tmp)) < \
            events.index(("rename", tmp, dst))
    _assert_one_folder_sync_per_batch(events, out, tmp_path, renames)
    assert sorted(p.name for p in out.iterdir()) == sorted(p.stem + ".npz" for p in paths)  # no .tmp left
    for p in paths:
        _assert_archive_is_the_log(out / (p.stem + ".npz"), p)


@pytest.mark.parametrize("route", ["unnamed", "named"])
def test_outputs_get_the_permissions_numpy_save_would_give(tmp_path, monkeypatch, route):
    if route == "named":
        _named_only(monkeypatch)
    paths = _logs(tmp_path / "in", [5, 5])
    old = os.umask(0o027)
    try:
        job = parse_many([(p, None) for p in paths], ParseOptions(out_dir=tmp_path / "out"))
        np.save(tmp_path / "numpy.npy", np.zeros(3))
    finally:
        os.umask(old)
    assert job.count("written") == 2
    modes = {oct(os.stat(f["output"]).st_mode & 0o777) for f in job.files}
    assert modes == {oct(os.stat(tmp_path / "numpy.npy").st_mode & 0o777)} == {"0o640"}


@pytest.mark.parametrize("route", ["unnamed", "named"])
def test_an_output_that_appears_while_the_job_runs_is_not_replaced(tmp_path, monkeypatch, route):
    """Without ``replace``, a file another process puts at an output's name before the commit stays as it is,
    and that input fails; naming a new archive with a link never replaces a file."""
    if route == "named":
        _named_only(monkeypatch)
    paths = _logs(tmp_path / "in", [5, 5])
    out = tmp_path / "out"
    real = parse_files._datasync

    def intruder(fd):
        (out / "log001.npz").write_bytes(b"someone else's")
        real(fd)

    monkeypatch.setattr(parse_files, "_datasync", intruder)
    job = parse_many([(p, None) for p in paths], ParseOptions(out_dir=out, workers=1))
    assert [f["status"] for f in job.files] == ["written", "failed"]
    assert job.files[1]["error"] == f"output {out / 'log001.npz'} appeared while this job ran; pass `force` to " \
                                    "overwrite it"
    assert (out / "log001.npz").read_bytes() == b"someone else's"
    assert sorted(p.name for p in out.iterdir()) == ["log000.npz", "log001.npz"]


@pytest.mark.skipif(not parse_files._O_TMPFILE, reason="O_TMPFILE is Linux's")
def test_a_killed_job_leaves_no_temporary_file(tmp_path):
    """SIGKILL allows no clean-up: archives written but not yet committed must leave nothing behind (they have
    no name until they are committed)."""
    import signal
    import subprocess
    import sys
    import time

    paths = _logs(tmp_path / "in", [20] * 8)
    out, flag = tmp_path / "out", tmp_path / "committing"
    child = (
        "import sys, time, pathlib\n"
        "from rfbench.io import parse_files\n"
        "def stuck(self, batch):\n"
        f"    pathlib.Path({str(flag)!r}).write_text(str(len(batch)))\n"
        "    time.sleep(120)\n"
        "parse_files._Job._commit = stuck\n"
        f"parse_files.parse_many([(pathlib.Path(p), None) for p in {[str(p) for p in paths]!r}],\n"
        f"                       parse_files.ParseOptions(out_dir=pathlib.Path({str(out)!r}), workers=2))\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", child])
    try:
        deadline = time.monotonic() + 120
        while not flag.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert flag.exists(), "the job never reached its first commit"
        time.sleep(0.2)  # the workers write the rest meanwhile
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    assert out.is_dir() and list(out.iterdir()) == []


def test_cancel_stops_the_job_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    monkeypatch.setattr(parse_files, "BATCH_FILES", 1)  # one file per batch: the job cannot finish in one go
    paths = _logs(tmp_path / "in", [200] * 40)
    cancel = threading.Event()
    done = []

    def progress(n=1):
        done.append(n)
        if len(done) == 2:
            cancel.set()

    out = tmp_path / "out"
    job = parse_many([(p, None) for p in paths], ParseOptions(out_dir=out, workers=2), progress=progress,
                     cancel=cancel)
    assert job.cancelled
    statuses = [f["status"] for f in job.files]
    assert set(statuses) <= {"written", "not finished"} and "not finished" in statuses
    written = [f for f in job.files if f["status"] == "written"]
    assert len(written) >= 2
    assert sorted(p.name for p in out.iterdir()) == sorted(Path(f["output"]).name for f in written)
    for f in written:
        _assert_archive_is_the_log(Path(f["output"]), Path(f["input"]))


def test_a_failed_write_names_the_output_and_cleans_up(tmp_path, monkeypatch):
    paths = _logs(tmp_path / "in", [5, 5, 5])
    real = parse_files._write_all
    calls = []

    def write_all(fd, buffers):
        calls.append(fd)
        if len(calls) == 2:
            os.write(fd, b"partial")
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd, buffers)

    monkeypatch.setattr(parse_files, "_write_all", write_all)
    out = tmp_path / "out"
    job = parse_many([(p, None) for p in paths], ParseOptions(out_dir=out, workers=1))
    failed = [f for f in job.files if f["status"] == "failed"]
    assert len(failed) == 1 and job.count("written") == 2
    target = out / (Path(failed[0]["input"]).stem + ".npz")
    assert failed[0]["error"] == f"cannot write {target} (no space left on device)"
    assert sorted(p.name for p in out.iterdir()) == sorted(Path(f["output"]).name for f in job.files
                                                           if f["status"] == "written")


@pytest.mark.parametrize("route", ["unnamed", "named"])
def test_an_unwritable_folder_names_the_output_not_a_temporary_file(tmp_path, monkeypatch, route):
    refuse_new_files(monkeypatch, tmp_path / "out", route)
    (tmp_path / "cap.dat").write_bytes(synthetic_log(4))
    job = parse_many([(tmp_path / "cap.dat", None)], ParseOptions(out_dir=tmp_path / "out"))
    error = job.files[0]["error"]
    assert error == f"cannot write {tmp_path / 'out' / 'cap.npz'} (permission denied in {tmp_path / 'out'})"
    assert ".tmp" not in error and "read" not in error


def test_existing_outputs_refused_replaced_or_kept_when_they_match(tmp_path):
    paths = _logs(tmp_path / "in", [6, 8])
    out = tmp_path / "out"
    first = parse_many([(p, None) for p in paths], ParseOptions(out_dir=out))
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    again = parse_many([(p, None) for p in paths], ParseOptions(out_dir=out))
    assert [f["status"] for f in again.files] == ["failed", "failed"]
    assert "already exists" in again.files[0]["error"]
    kept = parse_many([(p, None) for p in paths], ParseOptions(out_dir=out, existing="keep-matching"))
    assert [f["status"] for f in kept.files] == ["kept", "kept"]
    assert [f["output"] for f in kept.files] == [f["output"] for f in first.files]
    paths[1].write_bytes(synthetic_log(8, seed=99))  # same size, other content
    mixed = parse_many([(p, None) for p in paths], ParseOptions(out_dir=out, existing="keep-matching"))
    assert [f["status"] for f in mixed.files] == ["kept", "failed"]
    assert "made from a different input" in mixed.files[1]["error"]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    replaced = parse_many([(p, None) for p in paths], ParseOptions(out_dir=out, existing="replace"))
    assert [f["status"] for f in replaced.files] == ["written", "written"]
    _assert_archive_is_the_log(out / "log001.npz", paths[1])


def test_keep_matching_refuses_an_output_that_records_no_source(tmp_path):
    (tmp_path / "a.dat").write_bytes(synthetic_log(3))
    (tmp_path / "a.npz").write_bytes(b"precious")
    job = parse_many([(tmp_path / "a.dat", None)], ParseOptions(existing="keep-matching"))
    assert job.files[0]["status"] == "failed" and "records no source input" in job.files[0]["error"]
    assert (tmp_path / "a.npz").read_bytes() == b"precious"


def test_two_inputs_with_one_output_fail_the_second(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for d in "ab":
        (tmp_path / d / "x.dat").write_bytes(synthetic_log(3))
    job = parse_many([(tmp_path / "a" / "x.dat", None), (tmp_path / "b" / "x.dat", None)],
                     ParseOptions(out_dir=tmp_path / "out"))
    assert [f["status"] for f in job.files] == ["written", "failed"]
    assert "would also be written" in job.files[1]["error"]


def test_bad_inputs_fail_alone(tmp_path):
    (tmp_path / "empty.dat").write_bytes(b"")
    (tmp_path / "noncsi.dat").write_bytes(LogBuilder().record(0xC1, bytes(40)).to_bytes())
    (tmp_path / "dir.dat").mkdir()
    (tmp_path / "good.dat").write_bytes(synthetic_log(3))
    fifo = tmp_path / "fifo.dat"
    os.mkfifo(fifo)
    names = ["empty.dat", "noncsi.dat", "dir.dat", "missing.dat", "fifo.dat", "good.dat"]
    job = parse_many([(tmp_path / n, None) for n in names], ParseOptions(out_dir=tmp_path / "out"))
    errors = {Path(f["input"]).name: f["error"] for f in job.files}
    assert errors == {
        "empty.dat": "empty file (0 bytes)",
        "noncsi.dat": "no valid Intel 5300 CSI record (bfee, code 0xBB) found; non-CSI records: 1",
        "dir.dat": "is a directory",
        "missing.dat": "no such file",
        "fifo.dat": "not a regular file",
        "good.dat": None,
    }


def test_options_are_validated():
    with pytest.raises(ValidationError):
        ParseOptions(existing="overwrite")
    with pytest.raises(ValidationError):
        ParseOptions(workers=0)


def test_find_inputs_globs_and_counts_the_files_not_taken(tmp_path):
    root = tmp_path / "caps"
    (root / "day1").mkdir(parents=True)
    for rel in ["day1/a.dat", "b.dat", "log.all_csi.6.7.6", "notes.txt", "day1/old.npz", "day1/.a.npz.x1y2.tmp"]:
        (root / rel).write_bytes(b"x")
    found = find_inputs([root])
    assert [p.relative_to(root).as_posix() for p, _ in found.files] == ["b.dat", "day1/a.dat"]
    assert [p.relative_to(root).as_posix() for p in found.not_taken] == ["log.all_csi.6.7.6", "notes.txt"]
    found = find_inputs([root], ["*.dat", "log.*"])
    assert [p.relative_to(root).as_posix() for p, _ in found.files] == ["b.dat", "day1/a.dat", "log.all_csi.6.7.6"]
    assert [p.name for p in found.not_taken] == ["notes.txt"]
    found = find_inputs([root], ["day1/*.dat"])
    assert [p.name for p, _ in found.files] == ["a.dat"]
    with pytest.raises(ValidationError, match="no file matching \\*.csv .*4 other"):  # not the .npz nor .tmp
        find_inputs([root], ["*.csv"])


def test_an_exception_in_the_caller_stops_the_workers_and_cleans_up(tmp_path, monkeypatch):
    """Ctrl-C in a library caller (or any exception from the progress callback) must not wait for the rest of
    the job nor leave temporary files."""
    monkeypatch.setattr(parse_files, "BATCH_FILES", 1)  # one file per batch, no waiting: the first event comes
    monkeypatch.setattr(parse_files, "BATCH_SECONDS", 0.0)  # early, while most of the job is still to do
    paths = _logs(tmp_path / "in", [200] * 60)
    seen = []

    def progress(n=1):
        seen.append(n)
        raise KeyboardInterrupt

    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        parse_many([(p, None) for p in paths], ParseOptions(out_dir=out, workers=2), progress=progress)
    assert len(seen) == 1
    left = sorted(p.name for p in out.iterdir())
    assert len(left) < 60 and not [n for n in left if n.endswith(".tmp")]


def test_replaced_outputs_are_freed_by_the_release_thread_before_the_job_returns(tmp_path, monkeypatch):
    """Renamed over, each old output is held open and closed by the job's release thread (freeing a file can
    wait for the disk, which held up the committer); every one is closed before parse_many returns."""
    if not os.path.exists("/proc/self/fd"):
        pytest.skip("needs /proc to name the file a descriptor refers to")
    paths = _logs(tmp_path / "in", [5] * 6)
    out = tmp_path / "out"
    parse_many([(p, None) for p in paths], ParseOptions(out_dir=out))
    released = []
    real_close = os.close

    def close(fd):
        if threading.current_thread().name == "rfbench-release":
            released.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_close(fd)

    monkeypatch.setattr(parse_files.os, "close", close)
    open_before = len(os.listdir("/proc/self/fd"))
    job = parse_many([(p, None) for p in paths], ParseOptions(out_dir=out, existing="replace", workers=2))
    assert job.count("written") == 6
    assert sorted(released) == sorted(f"{out / (p.stem + '.npz')} (deleted)" for p in paths)
    assert len(os.listdir("/proc/self/fd")) == open_before
    for p in paths:
        _assert_archive_is_the_log(out / (p.stem + ".npz"), p)
