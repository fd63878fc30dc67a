"""The door to the dataset tree (root, symlinks, regular files, sizes, sha256), the bounded .npy reader, the
streaming .npy writer, and MAT-files read through a known layout."""

from __future__ import annotations

import hashlib
import io
import os
import struct
import time

import numpy as np
import pytest

from rfbench.datasets.synthetic import mat_v5_bytes
from rfbench.datasets.windows import build_windows, write_windows
from rfbench.datasets.windows.dataset_files import DatasetFiles, parse_npy
from rfbench.datasets.windows.npy import NpyWriter
from rfbench.errors import FormatError, OutputExistsError, ValidationError
from rfbench.io.matv5 import MAX_MAT_BYTES as MAX_INFLATED_BYTES
from rfbench.io.matv5 import mat_layout, read_mat_bytes
from tests.windowsdata import mmfi_case


def _entry(root, rel):
    return {"path": rel, "bytes": (root / rel).stat().st_size}


# -- DatasetFiles ------------------------------------------------------------------------------------------


def test_reads_checks_and_remembers_files(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.bin").write_bytes(b"hello")
    files = DatasetFiles(tmp_path)
    assert files.read(_entry(tmp_path, "a/x.bin")) == b"hello"
    assert files.records() == [{"path": "a/x.bin", "bytes": 5, "sha256": hashlib.sha256(b"hello").hexdigest()}]


@pytest.mark.parametrize("entry, words", [
    ({"path": "a/x.bin", "bytes": 4}, "5 bytes, but the manifest says 4"),
    ({"path": "a/x.bin", "bytes": 5, "sha256": "0" * 64}, "sha256 differs from the manifest's"),
    ({"path": "a/none.bin", "bytes": 5}, "no such dataset file"),
    ({"path": "../outside.bin", "bytes": 3}, "not a path inside the dataset root"),
    ({"path": "/etc/passwd", "bytes": 3}, "not a path inside the dataset root"),
    ({"path": "a", "bytes": 3}, "not a regular file"),
    ({"path": "a/x.bin"}, "gives no size"),
])
def test_a_file_that_does_not_match_the_manifest_is_one_error(tmp_path, entry, words):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.bin").write_bytes(b"hello")
    (tmp_path.parent / "outside.bin").write_bytes(b"out")
    with pytest.raises(ValidationError, match=words):
        DatasetFiles(tmp_path).read(entry)


def test_symlinks_are_followed_only_inside_the_root(tmp_path):
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    (root / "a" / "real.bin").write_bytes(b"data")
    (tmp_path / "secret.bin").write_bytes(b"secret")
    os.symlink(root / "a" / "real.bin", root / "a" / "inside.bin")
    os.symlink(tmp_path / "secret.bin", root / "a" / "escape.bin")
    os.symlink(tmp_path, root / "dir-escape")
    files = DatasetFiles(root)
    assert files.read({"path": "a/inside.bin", "bytes": 4}) == b"data"
    with pytest.raises(ValidationError, match="outside the dataset root"):
        files.read({"path": "a/escape.bin", "bytes": 6})
    with pytest.raises(ValidationError, match="outside the dataset root"):
        files.read({"path": "dir-escape/secret.bin", "bytes": 6})


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    os.mkfifo(tmp_path / "pipe.mat")
    files = DatasetFiles(tmp_path)
    with pytest.raises(ValidationError, match="not a regular file"):
        files.read({"path": "pipe.mat", "bytes": 0})
    assert files.check({"path": "pipe.mat", "bytes": 0, "sha256": "0" * 64}) == {"path": "pipe.mat",
                                                                                 "reason": "not a regular file"}


def test_a_missing_root_is_an_error(tmp_path):
    with pytest.raises(ValidationError, match="dataset root does not exist"):
        DatasetFiles(tmp_path / "gone")


def test_check_reports_instead_of_raising(tmp_path):
    (tmp_path / "f").write_bytes(b"abc")
    files = DatasetFiles(tmp_path)
    good = {"path": "f", "bytes": 3, "sha256": hashlib.sha256(b"abc").hexdigest()}
    assert files.check(good) == {}
    (tmp_path / "f").write_bytes(b"abd")
    assert files.check(good) == {"path": "f", "reason": "sha256 differs"}
    (tmp_path / "f").unlink()
    assert "no such dataset file" in files.check(good)["reason"]


def test_a_frame_changed_after_ingest_stops_the_job_and_nothing_is_written(tmp_path):
    def with_sha(doc):
        for rec in doc["recordings"]:
            for f in rec["files"]:
                data = (tmp_path / "tree" / f["path"]).read_bytes()
                f["sha256"] = hashlib.sha256(data).hexdigest()
    root, _, split = mmfi_case(tmp_path, edit=with_sha)
    assert len(build_windows(split, "test")) == 10
    p = root / "E01/S02/A02/wifi-csi/frame004.mat"
    data = bytearray(p.read_bytes())
    data[-1] ^= 1  # same size, other content
    p.write_bytes(bytes(data))
    with pytest.raises(ValidationError, match="frame004.mat: sha256 differs from the manifest's"):
        write_windows(split, "test", tmp_path / "out")
    assert not (tmp_path / "out").exists()


# -- parse_npy ---------------------------------------------------------------------------------------------


def _npy(arr, **kw):
    buf = io.BytesIO()
    np.save(buf, arr, **kw)
    return buf.getvalue()


def test_parse_npy_reads_plain_arrays_exactly():
    for arr in (np.arange(12.0).reshape(3, 4), np.asfortranarray(np.arange(6, dtype=np.int16).reshape(2, 3)),
                np.zeros((0, 17, 3), np.float32), np.array(3.5)):
        got = parse_npy(_npy(arr), "x.npy")
        assert got.dtype == arr.dtype and got.shape == arr.shape and np.array_equal(got, arr)


def test_parse_npy_refuses_a_size_the_header_does_not_account_for():
    data = _npy(np.zeros((4, 17, 3)))
    with pytest.raises(FormatError, match="declares"):
        parse_npy(data[:-8], "gt.npy")
    with pytest.raises(FormatError, match="declares"):
        parse_npy(data + b"\0" * 8, "gt.npy")
    from rfbench.datasets.windows.npy import npy_header

    huge = npy_header(np.float64, (10 ** 9, 17, 3)) + data[128:]  # a header claiming 408 GB before 4 rows
    with pytest.raises(FormatError, match=r"declares \(1000000000, 17, 3\)"):
        parse_npy(huge, "gt.npy")
    with pytest.raises(FormatError, match="not a plain .npy array"):
        parse_npy(data.replace(b"(4, 17, 3)", b"(4, 17, }!"), "gt.npy")


def test_parse_npy_refuses_objects_and_non_npy():
    with pytest.raises(FormatError, match="rfbench reads no pickles"):
        parse_npy(_npy(np.array([{"a": 1}], dtype=object), allow_pickle=True), "o.npy")
    with pytest.raises(FormatError, match="not a plain .npy array"):
        parse_npy(b"not an npy file at all", "n.npy")


# -- NpyWriter ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("known", [True, False])
def test_the_writer_streams_batches_into_an_ordinary_npy(tmp_path, known):
    rng = np.random.default_rng(0)
    batches = [rng.normal(size=(k, 2, 3)).astype(np.float32) for k in (3, 1, 0, 5)]
    total = sum(len(b) for b in batches)
    path = tmp_path / "X.npy"
    with NpyWriter(path, np.float32, (2, 3), n_rows=total if known else None) as w:
        for b in batches:
            w.write(b)
    expected = np.concatenate(batches)
    assert np.array_equal(np.load(path), expected)
    assert np.array_equal(np.load(path, mmap_mode="r"), expected)
    assert w.sha256 == hashlib.sha256(path.read_bytes()).hexdigest() and w.bytes == path.stat().st_size
    assert w.shape == (9, 2, 3)
    assert os.listdir(tmp_path) == ["X.npy"]


def test_the_writer_starts_the_disk_writes_early_and_still_fsyncs_before_the_rename(tmp_path, monkeypatch):
    # Writing X used to leave all of it for one fsync at the end (a fifth of a large Widar job's wall time):
    # every WRITEBACK_STEP bytes a thread of the writer's own now calls fdatasync, and the fsync that makes the
    # rename safe still comes last, before os.replace.
    import rfbench.datasets.windows.npy as npy

    events = []
    real_fdatasync, real_fsync, real_replace = os.fdatasync, os.fsync, os.replace
    monkeypatch.setattr(npy.os, "fdatasync", lambda fd: (events.append("fdatasync"), real_fdatasync(fd))[1])
    monkeypatch.setattr(npy.os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(npy.os, "replace", lambda a, b: (events.append("replace"), real_replace(a, b))[1])
    monkeypatch.setattr(NpyWriter, "WRITEBACK_STEP", 1000)
    path = tmp_path / "X.npy"
    batches = [np.full((50, 5), k, np.float32) for k in range(6)]  # 1,000 bytes a batch
    with NpyWriter(path, np.float32, (5,), n_rows=300) as w:
        for b in batches:
            w.write(b)
            time.sleep(0.01)  # let the writeback thread run
    assert "fdatasync" in events and events[-2:] == ["fsync", "replace"]
    assert np.array_equal(np.load(path), np.concatenate(batches))


def test_an_error_while_writing_leaves_no_file(tmp_path):
    path = tmp_path / "X.npy"
    with pytest.raises(RuntimeError):
        with NpyWriter(path, np.float32, (2,)) as w:
            w.write(np.zeros((4, 2)))
            raise RuntimeError("interrupted")
    assert os.listdir(tmp_path) == []
    path.write_bytes(b"old")
    with pytest.raises(OutputExistsError):
        NpyWriter(path, np.float32, (2,))
    with pytest.raises(ValidationError, match="announced"):
        with NpyWriter(path, np.float32, (2,), n_rows=3, force=True) as w:
            w.write(np.zeros((2, 2)))
    assert os.listdir(tmp_path) == ["X.npy"] and path.read_bytes() == b"old"


def test_a_deferred_file_waits_for_commit(tmp_path):
    path = tmp_path / "y.npy"
    with NpyWriter(path, np.int64, (), defer=True) as w:
        w.write(np.arange(4))
    assert not path.exists()
    w.commit()
    assert np.load(path).tolist() == [0, 1, 2, 3]


# -- MAT-files through a layout ----------------------------------------------------------------------------


def _frame_bytes(seed=0):
    rng = np.random.default_rng(seed)
    return mat_v5_bytes({"CSIamp": rng.normal(size=(3, 114, 10)), "CSIphase": rng.normal(size=(3, 114, 10))})


def test_a_layout_reads_files_of_its_shape_exactly_like_the_parser():
    layout = mat_layout(_frame_bytes(0))
    for seed in (1, 2):
        buf = _frame_bytes(seed)
        fast, full = layout.read(buf), read_mat_bytes(buf)
        assert set(fast) == set(full) == {"CSIamp", "CSIphase"}
        for k in full:
            assert fast[k].dtype == full[k].dtype and np.array_equal(fast[k], full[k])


def test_a_byte_changed_outside_the_data_never_reads_differently_from_the_parser():
    # Flip bytes anywhere: the layout either declines (None) or agrees with the full parser.
    base = _frame_bytes(3)
    layout = mat_layout(base)
    rng = np.random.default_rng(0)
    declined = 0
    for pos in list(range(0, 260)) + rng.integers(0, len(base), 200).tolist():
        buf = bytearray(base)
        buf[pos] ^= 0x5A
        fast = layout.read(bytes(buf))
        try:
            full = read_mat_bytes(bytes(buf))
        except FormatError:
            full = None
        if fast is None:
            declined += 1
            continue
        assert full is not None and set(fast) == set(full), pos
        for k in full:
            assert np.array_equal(fast[k], full[k], equal_nan=True), pos
    assert declined > 60  # the tags, flags, dimensions and names of both variables


def test_layouts_decline_other_sizes_shapes_and_v73_headers():
    layout = mat_layout(_frame_bytes())
    assert layout.read(_frame_bytes() + b"\0" * 8) is None
    other = mat_v5_bytes({"CSIamp": np.zeros((3, 10, 114)), "CSIphase": np.zeros((3, 114, 10))})
    assert layout.read(other) is None
    v73 = b"MATLAB 7.3" + _frame_bytes()[10:]
    assert layout.read(v73) is None
    with pytest.raises(FormatError, match="v7.3"):
        read_mat_bytes(v73)


def test_compressed_files_have_no_layout_and_bounded_inflation():
    import zlib

    raw = mat_v5_bytes({"x": np.array([[1.5, -2.0]])})
    packed = zlib.compress(raw[128:])
    compressed = raw[:128] + struct.pack("<II", 15, len(packed)) + packed
    assert mat_layout(compressed) is None
    assert read_mat_bytes(compressed)["x"].tolist() == [[1.5, -2.0]]
    bomb_inner = zlib.compress(b"\0" * (MAX_INFLATED_BYTES + 16), 9)
    bomb = raw[:128] + struct.pack("<II", 15, len(bomb_inner)) + bomb_inner
    with pytest.raises(FormatError, match="inflates past"):
        read_mat_bytes(bomb)


@pytest.mark.parametrize("rows", [0, 1, 7, 40, 41, 200])
def test_a_large_array_written_around_the_page_cache_is_the_same_file(tmp_path, monkeypatch, rows):
    """Direct writes (gathered in aligned blocks, the last partial block written the ordinary way) give the very
    bytes and sha256 of the ordinary writes, whatever the tail's length; the direct descriptor is used."""
    import rfbench.datasets.windows.npy as npy

    rng = np.random.default_rng(rows)
    batches = [rng.normal(size=(k, 3, 17)).astype(np.float32) for k in (rows // 3, 0, rows - rows // 3)]
    ordinary = tmp_path / "a.npy"
    with NpyWriter(ordinary, np.float32, (3, 17), n_rows=rows) as w0:
        for b in batches:
            w0.write(b)
    assert w0._direct is None  # small: written the ordinary way
    monkeypatch.setattr(NpyWriter, "DIRECT_MIN_BYTES", 0)
    monkeypatch.setattr(NpyWriter, "DIRECT_BLOCK", 8192)
    direct_writes = []
    real_pwrite = os.pwrite
    monkeypatch.setattr(npy.os, "pwrite", lambda fd, data, at: (direct_writes.append((fd, at, len(data))),
                                                                 real_pwrite(fd, data, at))[1])
    direct = tmp_path / "b.npy"
    with NpyWriter(direct, np.float32, (3, 17), n_rows=rows) as w1:
        used = w1._direct
        for b in batches:
            w1.write(b)
    assert direct.read_bytes() == ordinary.read_bytes()
    assert (w1.sha256, w1.bytes) == (w0.sha256, w0.bytes)
    if used is not None:  # a file system with direct I/O (tmpfs has none)
        assert all(at % npy.DIRECT_ALIGN == 0 for _, at, _ in direct_writes)
        assert sum(n for _, _, n in direct_writes) == w1.bytes
        aligned = [n for _, _, n in direct_writes if n % npy.DIRECT_ALIGN == 0]
        assert sum(aligned) == w1.bytes // npy.DIRECT_ALIGN * npy.DIRECT_ALIGN  # all but the last partial block


def test_borrowed_rows_are_free_once_copied_not_once_hashed(tmp_path, monkeypatch):
    """Written around the page cache, rows are copied into the writer's blocks, which are hashed from there: a
    borrowed batch (a reader process's shared slot) is free again as soon as ``write`` returns, even while the
    hashing thread is held up (on a busy machine it waits for a core, and the readers waited with it), and
    reusing it at once changes neither the file nor its sha256."""
    import threading

    import rfbench.datasets.windows.npy as npy

    monkeypatch.setattr(NpyWriter, "DIRECT_MIN_BYTES", 0)
    monkeypatch.setattr(NpyWriter, "DIRECT_BLOCK", 4096)
    held = threading.Event()
    real_run = npy._BackgroundHash._run
    monkeypatch.setattr(npy._BackgroundHash, "_run", lambda self: (held.wait(), real_run(self))[1])
    rng = np.random.default_rng(5)
    slot = np.empty((9, 11), dtype=np.float32)
    kept = []
    path = tmp_path / "X.npy"
    done = []

    def write_all():
        with NpyWriter(path, np.float32, (11,), n_rows=9 * 6) as w:
            if w._direct is None:
                done.append("no direct I/O")
                held.set()
                return
            for _ in range(6):  # more bytes than the writer's blocks hold at once: blocks wait for the hash
                slot[:] = rng.normal(size=slot.shape)
                kept.append(slot.copy())
                w.write(slot, borrowed=True)
                slot[:] = np.nan  # reused at once
                if len(kept) == 2:
                    done.append("returned before hashing")  # the first rows, while no byte was hashed yet
                    two.set()
            done.append(w)

    two = threading.Event()
    thread = threading.Thread(target=write_all, daemon=True)
    thread.start()
    two.wait(timeout=10)  # the rows of the first writes fit in the free blocks: no wait for the hash
    if done == ["no direct I/O"]:
        pytest.skip("no direct I/O on this file system")
    assert done[:1] == ["returned before hashing"]
    held.set()
    thread.join(timeout=60)
    w = done[-1]
    assert np.array_equal(np.load(path), np.concatenate(kept))
    assert w.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_error_midway_through_hashed_blocks_leaves_nothing(tmp_path, monkeypatch):
    """An error in the caller while blocks are still being hashed and written: the error itself comes out (not
    one from the hashing thread or a released buffer), no file is left, and no writer thread stays behind."""
    import threading

    monkeypatch.setattr(NpyWriter, "DIRECT_MIN_BYTES", 0)
    monkeypatch.setattr(NpyWriter, "DIRECT_BLOCK", 4096)
    before = set(threading.enumerate())
    with pytest.raises(KeyError, match="the caller's"):
        with NpyWriter(tmp_path / "X.npy", np.float32, (1000,), n_rows=100) as w:
            for k in range(40):
                w.write(np.full((2, 1000), k, dtype=np.float32))
            raise KeyError("the caller's")
    assert not list(tmp_path.iterdir())
    assert {t for t in threading.enumerate() if t.name.startswith("rfbench-")} - before == set()


def test_direct_writes_refused_midway_fall_back_to_ordinary_writes(tmp_path, monkeypatch):
    import errno

    import rfbench.datasets.windows.npy as npy

    monkeypatch.setattr(NpyWriter, "DIRECT_MIN_BYTES", 0)
    monkeypatch.setattr(NpyWriter, "DIRECT_BLOCK", 4096)
    real_pwrite = os.pwrite
    refused = []

    def pwrite(fd, data, at):
        writer = current[0]._direct
        if writer is not None and fd == writer.fd and at >= 8192 and not refused:
            refused.append(at)
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_pwrite(fd, data, at)

    monkeypatch.setattr(npy.os, "pwrite", pwrite)
    data = np.arange(30000, dtype=np.float32).reshape(-1, 10)
    current = []
    with NpyWriter(tmp_path / "X.npy", np.float32, (10,), n_rows=len(data)) as w:
        current.append(w)
        if w._direct is None:
            pytest.skip("no direct I/O on this file system")
        w.write(data)
    assert refused and np.array_equal(np.load(tmp_path / "X.npy"), data)
    assert w.sha256 == hashlib.sha256((tmp_path / "X.npy").read_bytes()).hexdigest()


def test_a_failed_direct_write_is_raised_and_leaves_no_file(tmp_path, monkeypatch):
    """A direct block is written on a thread of its own; its error (a full disk) is raised in the writer's thread
    and nothing is left under the target's name or a temporary one."""
    import errno

    import rfbench.datasets.windows.npy as npy

    monkeypatch.setattr(NpyWriter, "DIRECT_MIN_BYTES", 0)
    monkeypatch.setattr(NpyWriter, "DIRECT_BLOCK", 4096)
    real_pwrite = os.pwrite

    def pwrite(fd, data, at):
        if at >= 8192:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_pwrite(fd, data, at)

    monkeypatch.setattr(npy.os, "pwrite", pwrite)
    with pytest.raises(OSError, match=r"cannot write .*X\.npy: no space left on the device"):
        with NpyWriter(tmp_path / "X.npy", np.float32, (10,), n_rows=3000) as w:
            w.write(np.ones((3000, 10), np.float32))
    assert os.listdir(tmp_path) == []
