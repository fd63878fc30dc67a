"""What keeps the BVP chain's processes short, and that each shortcut changes no result: the split audit sweeps
only recordings with rows on both sides (so a split of whole recordings starts no Numba), ``rfbench windows`` of
a BVP split loads no Intel 5300 kernel, and the split's declared dataset is read only as a hint."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import naive
from rfbench.protocols.leakage import overlapping_recordings
from rfbench.protocols.splitfile import declared_dataset


@pytest.mark.parametrize("seed", range(4))
def test_overlap_over_mostly_one_sided_recordings_matches_naive(seed):
    # Most recordings have rows on one side only (left out of the sweep), a few on both, unsorted.
    rng = np.random.default_rng(seed)
    n_rec, n = 30, 200
    rec = rng.integers(0, n_rec, n)
    one_sided = rng.random(n_rec) < 0.8
    side = np.where(one_sided[rec], rec % 2, rng.integers(-1, 2, n))
    start = rng.integers(0, 30, n)
    stop = start + rng.integers(0, 8, n)
    got = overlapping_recordings(rec, start, stop, side, n_rec)
    assert got.tolist() == naive.naive_overlapping_recordings(rec.tolist(), start.tolist(), stop.tolist(),
                                                              side.tolist(), n_rec)
    assert not got[one_sided].any()


def test_overlap_found_among_one_sided_recordings():
    # Recording 1 overlaps; recordings 0 and 2 (one side each) and excluded rows of 1 are dropped before the sweep.
    rec = [0, 0, 1, 1, 1, 2]
    start = [0, 5, 0, 3, 0, 0]
    stop = [9, 9, 4, 6, 9, 9]
    side = [1, 1, 0, 1, -1, 0]
    assert overlapping_recordings(rec, start, stop, side, 3).tolist() == [False, True, False]


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_auditing_whole_recordings_imports_no_numba():
    code = """
import sys
from rfbench.datasets.manifest import RecordingTable
from rfbench.protocols.leakage import audit_rows
recs = [{"id": f"r{i}", "files": [], "frames": 5, "subject": f"s{i % 3}"} for i in range(9)]
table = RecordingTable.from_recordings(recs)
res = audit_rows(table, list(range(9)), [0 if i % 3 else 1 for i in range(9)], claims=["subject"])
assert res.passed, res.checks
print("numba" in sys.modules)
"""
    assert _run(code) == "False"


def test_a_crossing_pair_is_still_found_by_the_kernel():
    code = """
import sys
from rfbench.protocols.leakage import overlapping_recordings
print(overlapping_recordings([0, 0], [0, 2], [4, 6], [0, 1], 1).tolist(), "numba" in sys.modules)
"""
    assert _run(code) == "[True] True"


@pytest.fixture(scope="module")
def bvp_split(tmp_path_factory) -> Path:
    from rfbench.datasets.synthetic_bvp import make_widar_bvp_tree
    from rfbench.datasets.widar_bvp import ingest_bvp
    from rfbench.protocols.split import write_splits

    root = tmp_path_factory.mktemp("bvps")
    make_widar_bvp_tree(root / "tree", frames=(1, 4), damage=False)
    ingest_bvp(root / "tree", workers=1).write(root / "manifest.json")
    write_splits(root / "manifest.json", "cross-subject", root / "split.json", test=["user4"], gestures="common6")
    return root / "split.json"


def test_declared_dataset_is_a_hint_only(bvp_split, tmp_path):
    assert declared_dataset(bvp_split) == "widar3-bvp"
    assert declared_dataset(tmp_path / "missing.json") is None
    (tmp_path / "bad.json").write_text("{not json")
    assert declared_dataset(tmp_path / "bad.json") is None
    doc = json.loads(bvp_split.read_text())
    doc["dataset"] = ["widar3-bvp"]
    (tmp_path / "odd.json").write_text(json.dumps(doc))
    assert declared_dataset(tmp_path / "odd.json") is None


def test_windows_of_a_bvp_split_loads_no_intel5300_kernel_and_no_numba(bvp_split, tmp_path):
    code = f"""
import runpy, sys
sys.argv = ["rfbench", "windows", {str(bvp_split)!r}, "--side", "train", "-o", {str(tmp_path / "w")!r}, "--json"]
try:
    runpy.run_module("rfbench", run_name="__main__")
except SystemExit as exc:
    assert not exc.code, exc.code
print("rfbench.io.intel5300" in sys.modules, "numba" in sys.modules, file=sys.stderr)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    # no Intel 5300 kernel, and no Numba at all: the label set lives apart from the classification kernels
    assert out.stderr.strip().splitlines()[-1] == "False False"
    assert np.load(tmp_path / "w" / "X.npy").shape[0] > 0


def test_split_declaring_bvp_over_intel_data_still_builds(tmp_path):
    """The declared name only picks what to load ahead: a split that lies about it gives the same side."""
    from rfbench.datasets.synthetic import make_widar_tree
    from rfbench.datasets.widar import ingest
    from rfbench.datasets.windows import WindowSettings, build_windows
    from rfbench.protocols.split import write_splits

    make_widar_tree(tmp_path / "tree", damage=False)
    ingest(tmp_path / "tree", workers=1).write(tmp_path / "manifest.json")
    write_splits(tmp_path / "manifest.json", "cross-subject", tmp_path / "split.json", test=["user2"])
    expected = build_windows(tmp_path / "split.json", "train", WindowSettings(length=8))
    code = f"""
import runpy, sys
sys.argv = ["rfbench", "windows", {str(tmp_path / "split.json")!r}, "--side", "train", "-o",
            {str(tmp_path / "w")!r}, "--length", "8", "--json"]
from rfbench.protocols import splitfile
splitfile.declared_dataset = lambda path: "widar3-bvp"
try:
    runpy.run_module("rfbench", run_name="__main__")
except SystemExit as exc:
    assert not exc.code, exc.code
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert np.array_equal(np.load(tmp_path / "w" / "X.npy"), expected.x)


def test_an_oversized_file_is_a_problem_without_the_absolute_path(tmp_path):
    from rfbench.datasets.synthetic_bvp import make_widar_bvp_tree
    from rfbench.datasets.widar_bvp import MAX_BVP_BYTES, ingest_bvp

    make_widar_bvp_tree(tmp_path / "tree", frames=(1, 3), damage=False)
    first = next((tmp_path / "tree").rglob("*-L0.mat"))
    big = first.with_name(first.name.replace("-L0.mat", "-L5.mat"))
    big.write_bytes(b"\0" * (MAX_BVP_BYTES + 1))
    problems = ingest_bvp(tmp_path / "tree", workers=2).problems
    (reason,) = [p["reason"] for p in problems if p["path"].endswith(big.name)]
    assert reason == (f"cannot read: {MAX_BVP_BYTES + 1} bytes, more than the {MAX_BVP_BYTES} rfbench reads for "
                      "it; left out")


def _compressed(raw: bytes, level: int = 6) -> bytes:
    import struct
    import zlib

    body = zlib.compress(raw[128:], level)
    return raw[:128] + struct.pack("<II", 15, len(body)) + body


def _frames_or_error(fn, buf):
    from rfbench.errors import FormatError

    try:
        return fn(buf)
    except FormatError as exc:
        return f"error: {exc}"


def _variants():
    """(label, bytes) of valid and damaged BVP files, compressed as MATLAB's save and as the generator does."""
    import io
    import struct

    import scipy.io

    from rfbench.datasets.synthetic import mat_v5_bytes
    from rfbench.datasets.synthetic_bvp import bvp_file_bytes

    rng = np.random.default_rng(5)
    out = []
    for t in (1, 2, 7, 38):
        v = rng.random((20, 20, t))
        out.append((f"generator T={t}", bvp_file_bytes(v, compress=True)))
        out.append((f"plain T={t}", bvp_file_bytes(v)))
        for dtype in ("float64", "float32", "uint8"):
            fh = io.BytesIO()
            scipy.io.savemat(fh, {"velocity_spectrum_ro": (v * 100).astype(dtype)}, do_compression=True)
            out.append((f"savemat {dtype} T={t}", fh.getvalue()))
    v = rng.random((20, 20, 5))
    fh = io.BytesIO()
    scipy.io.savemat(fh, {"velocity_spectrum_ro": v + 1j * v}, do_compression=True)
    out.append(("complex", fh.getvalue()))
    fh = io.BytesIO()
    scipy.io.savemat(fh, {"other": v}, do_compression=True)
    out.append(("other name", fh.getvalue()))
    fh = io.BytesIO()
    scipy.io.savemat(fh, {"velocity_spectrum_ro": v, "extra": v}, do_compression=True)
    out.append(("two variables", fh.getvalue()))
    fh = io.BytesIO()
    scipy.io.savemat(fh, {"velocity_spectrum_ro": "text"}, do_compression=True)
    out.append(("char", fh.getvalue()))
    out.append(("mis-shaped", _compressed(mat_v5_bytes({"velocity_spectrum_ro": np.zeros((20, 10, 3))}))))
    out.append(("T=0", _compressed(mat_v5_bytes({"velocity_spectrum_ro": np.zeros((20, 20, 0))}))))
    good = bvp_file_bytes(rng.random((20, 20, 9)), compress=True)
    out.append(("truncated", good[:-40]))
    out.append(("truncated header", good[:150]))
    out.append(("stray bytes", good + b"\x01" * 8))
    # A real part whose tag declares fewer values than 20×20×T: the header alone shows it.
    raw = bytearray(mat_v5_bytes({"velocity_spectrum_ro": np.zeros((20, 20, 4))}))
    pos = raw.find(b"velocity_spectrum_ro") + 24
    assert struct.unpack_from("<I", raw, pos)[0] == 9  # miDOUBLE tag of the real part
    struct.pack_into("<I", raw, pos + 4, 8 * 400 * 3)
    out.append(("short data tag", _compressed(bytes(raw))))
    big = bvp_file_bytes(np.zeros((20, 20, 1400)), compress=True)  # inflates past MAX_BVP_BYTES
    out.append(("inflates past the bound", big))
    out += _plain_variants(rng)
    return out


def _plain_variants(rng):
    """(label, bytes) of uncompressed files: as the generator and scipy write them, and damaged."""
    import io
    import struct

    import scipy.io

    from rfbench.datasets.synthetic import mat_v5_bytes
    from rfbench.datasets.synthetic_bvp import bvp_file_bytes

    out = []
    for t in (1, 3):
        for dtype in ("float64", "float32", "int16"):
            fh = io.BytesIO()
            scipy.io.savemat(fh, {"velocity_spectrum_ro": (rng.random((20, 20, t)) * 100).astype(dtype)})
            out.append((f"plain savemat {dtype} T={t}", fh.getvalue()))
    v = rng.random((20, 20, 6))
    good = bvp_file_bytes(v)
    out.append(("plain T=0", mat_v5_bytes({"velocity_spectrum_ro": np.zeros((20, 20, 0))})))
    out.append(("plain mis-shaped", mat_v5_bytes({"velocity_spectrum_ro": np.zeros((20, 10, 3))})))
    out.append(("plain 4 dims", mat_v5_bytes({"velocity_spectrum_ro": np.zeros((20, 20, 3, 2))})))
    out.append(("plain other name", mat_v5_bytes({"velocity_spectrum_rx": v})))
    out.append(("plain two variables", mat_v5_bytes({"velocity_spectrum_ro": v, "extra": v[:, :, :1]})))
    out.append(("plain second variable first", mat_v5_bytes({"a": v[:, :, :2], "velocity_spectrum_ro": v})))
    fh = io.BytesIO()
    scipy.io.savemat(fh, {"velocity_spectrum_ro": v + 1j * v})
    out.append(("plain complex", fh.getvalue()))
    out.append(("plain truncated", good[:-8]))
    out.append(("plain one byte short", good[:-1]))
    out.append(("plain stray bytes", good + b"\x01" * 8))
    out.append(("plain zero padding", good + b"\x00" * 8))
    out.append(("plain header only", good[:136]))
    pos = good.find(b"velocity_spectrum_ro") + 24  # the real part's tag
    for label, at, value in (("plain short data tag", pos + 4, 8 * 400 * 5),
                             ("plain data tag past the end", pos + 4, 8 * 400 * 7),
                             ("plain odd data type", pos, 10),
                             ("plain matrix size short", 132, struct.unpack_from("<I", good, 132)[0] - 8),
                             ("plain matrix size long", 132, struct.unpack_from("<I", good, 132)[0] + 8),
                             ("plain negative T", good.find(b"velocity_spectrum_ro") - 8, 2**32 - 6),
                             ("plain flags uint8", 136, 2),
                             ("plain class char", 144, 4)):
        raw = bytearray(good)
        struct.pack_into("<I", raw, at, value)
        out.append((label, bytes(raw)))
    raw = bytearray(good + b"\x01" * 8)  # a stray word inside the matrix, after the real part
    struct.pack_into("<I", raw, 132, struct.unpack_from("<I", good, 132)[0] + 8)
    out.append(("plain stray word in the matrix", bytes(raw)))
    raw = bytearray(good)
    raw[126:128] = b"MI"
    out.append(("plain byte order flipped", bytes(raw)))
    return out


def test_frames_from_the_header_equal_the_full_read_on_every_variant():
    from rfbench.datasets.widar_bvp import bvp_frames, read_bvp_bytes

    seen = set()
    for label, buf in _variants():
        want = _frames_or_error(lambda b: int(read_bvp_bytes(b, "f.mat").shape[2]), buf)
        got = _frames_or_error(lambda b: bvp_frames(b, "f.mat"), buf)
        assert got == want, label
        seen.add(isinstance(want, int))
    assert seen == {True, False}


def test_the_header_shortcut_is_taken_for_compressed_profiles():
    # The shortcut's reading of the header: the fields a full read would find, for the files it is taken on.
    from rfbench.io.matv5 import compressed_header, read_mat_bytes

    taken = 0
    for label, buf in _variants():
        h = compressed_header(buf, "f.mat", max_bytes=4 << 20)
        if h is None:
            continue
        taken += 1
        if label.startswith(("generator", "savemat")):
            value = read_mat_bytes(buf, "f.mat")["velocity_spectrum_ro"]
            assert h.name == "velocity_spectrum_ro" and h.numeric and not h.is_complex
            assert math_prod(h.dims) == value.size and h.dims[:2] == (20, 20)
    assert taken >= 12
    for label, buf in _variants():
        if label in ("truncated", "truncated header", "stray bytes", "inflates past the bound") \
                or label.startswith("plain"):
            assert compressed_header(buf, "f.mat", max_bytes=4 << 20) is None, label


def test_the_header_shortcut_is_taken_for_plain_profiles():
    # plain_header reads the fields a full read finds, and refuses (None) every damaged layout: the full read's
    # error then says what is wrong.
    from rfbench.errors import FormatError
    from rfbench.io.matv5 import plain_header, read_mat_bytes

    taken = set()
    for label, buf in _variants():
        h = plain_header(buf, "f.mat", max_bytes=4 << 20)
        if h is None:
            continue
        taken.add(label)
        itemsize = np.dtype(h.data_type).itemsize
        try:
            mat = read_mat_bytes(buf, "f.mat")
        except FormatError:  # only a real part of another size than the dimensions ask (which bvp_frames checks)
            assert h.data_bytes != math_prod(h.dims) * itemsize, label
            continue
        if not h.numeric:
            assert h.name in mat.skipped, label
            continue
        value = mat[h.name]
        assert h.dims == value.shape and not h.is_complex, label
        assert h.data_bytes == value.size * itemsize, label
    assert {f"plain T={t}" for t in (1, 2, 7, 38)} <= taken
    assert {f"plain savemat float64 T={t}" for t in (1, 3)} <= taken
    for label in ("plain truncated", "plain one byte short", "plain stray bytes", "plain zero padding",
                  "plain header only", "plain complex", "plain two variables", "plain second variable first",
                  "plain data tag past the end", "plain odd data type", "plain matrix size short",
                  "plain matrix size long", "plain flags uint8", "plain byte order flipped",
                  "plain stray word in the matrix"):
        assert label not in taken, label
    assert not any(label.startswith(("generator", "savemat")) for label in taken)


def test_ingest_reads_every_variant_as_the_careful_reader_does(tmp_path):
    """ingest's plain read (os.open, fstat, read) and the careful one (read_regular, which names what is wrong)
    give the same sha256, T or problem for every variant, and for files that are not there, too large, or not
    regular files."""
    import os

    from rfbench.datasets import bvp_readers, widar_bvp
    from rfbench.datasets.tree import Entry

    entries = []
    for k, (_label, buf) in enumerate(_variants()):
        path = tmp_path / f"v{k}.mat"
        path.write_bytes(buf)
        entries.append(Entry(path.name, path, path.name, str(path), False, len(buf)))
    big = tmp_path / "big.mat"
    big.write_bytes(b"\0" * (widar_bvp.MAX_BVP_BYTES + 1))
    fifo = tmp_path / "fifo.mat"
    os.mkfifo(fifo)
    for path in (big, fifo, tmp_path / "gone.mat", tmp_path):
        entries.append(Entry(path.name, path, path.name, str(path), False, 1))
    plain = [bvp_readers._read_one(e) for e in entries]
    careful = [bvp_readers._read_careful(e) for e in entries]
    assert plain == careful
    assert sum(r.error is None for r in plain) > 10 and sum(r.error is not None for r in plain) > 10
    assert [bvp_readers._read_plain(str(p)) for p in (big, fifo, tmp_path / "gone.mat", tmp_path)] == [None] * 4


def test_profiles_as_saved_read_as_the_general_reader_reads_them():
    """read_bvp_bytes takes a file laid out as MATLAB saves a double array straight from its bytes (or the
    inflated ones); every variant gives the general reader's values, dtype and shape, or its error word for
    word, and the shortcut is taken for the files MATLAB's save and the generator write."""
    from rfbench.datasets.bvp_mat import _profile_as_saved, _read_bvp_full, read_bvp_bytes
    from rfbench.errors import FormatError

    taken = set()
    for label, buf in _variants():
        want = _frames_or_error(lambda b: _read_bvp_full(b, "f.mat"), buf)
        got = _frames_or_error(lambda b: read_bvp_bytes(b, "f.mat"), buf)
        if isinstance(want, str) or isinstance(got, str):
            assert got == want, label
        else:
            assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want), label
        try:
            if _profile_as_saved(buf, "f.mat") is not None:
                taken.add(label)
        except FormatError:
            pass
    assert {f"{kind} T={t}" for kind in ("generator", "plain", "savemat float64") for t in (1, 2, 7, 38)} <= taken
    assert not any(label.startswith(("savemat float32", "savemat uint8", "complex")) for label in taken)


def math_prod(dims) -> int:
    out = 1
    for d in dims:
        out *= d
    return out


def test_damage_inside_the_compressed_stream_is_refused_by_windows(tmp_path):
    """Ingest judges a compressed profile by its header; a flipped byte deep in the stream passes there and is
    refused by windows (which inflates every file), naming the file, with no X written."""
    from rfbench.datasets.synthetic_bvp import make_widar_bvp_tree
    from rfbench.datasets.widar_bvp import ingest_bvp
    from rfbench.datasets.windows import write_windows
    from rfbench.errors import FormatError, ValidationError
    from rfbench.protocols.split import write_splits

    make_widar_bvp_tree(tmp_path / "tree", frames=(30, 38), damage=False)
    victim = next(p for p in sorted((tmp_path / "tree").rglob("user4-*.mat")) if p.read_bytes()[128] == 15)
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    manifest = ingest_bvp(tmp_path / "tree", workers=1)
    assert not [p for p in manifest.problems if p["path"].endswith(victim.name)]
    manifest.write(tmp_path / "manifest.json")
    write_splits(tmp_path / "manifest.json", "cross-subject", tmp_path / "split.json", test=["user4"])
    with pytest.raises((FormatError, ValidationError), match=victim.name):
        write_windows(tmp_path / "split.json", "test", tmp_path / "w")
    assert not (tmp_path / "w" / "X.npy").exists()


def _side_files(folder):
    return {name: (folder / name).read_bytes() for name in ("X.npy", "y.npy", "index.json")}


def test_reader_processes_write_what_threads_write(tmp_path, monkeypatch):
    """A large BVP side is read by reader processes (each file checked and parsed there, rows filled into shared
    slots, reused run after run); the three files are byte for byte those the threads write, and a damaged
    file stops both with the same error."""
    from rfbench.datasets import widar_bvp
    from rfbench.datasets.synthetic_bvp import make_widar_bvp_tree
    from rfbench.datasets.windows import bvp, bvp_procs, write_windows
    from rfbench.errors import FormatError, ValidationError
    from rfbench.protocols.split import write_splits

    make_widar_bvp_tree(tmp_path / "tree", frames=(1, 9), damage=False)
    widar_bvp.ingest_bvp(tmp_path / "tree", workers=1).write(tmp_path / "manifest.json")
    write_splits(tmp_path / "manifest.json", "cross-subject", tmp_path / "split.json", test=["user4"])
    monkeypatch.setattr(bvp, "CHUNK_BYTES", 7 * 9 * 1600)  # 7 rows a run: many runs, every slot reused
    started = []
    real_enter = bvp_procs.BvpReaders.__enter__
    monkeypatch.setattr(bvp_procs.BvpReaders, "__enter__", lambda self: (started.append(self.n), real_enter(self))[1])

    def side(folder, processes: bool):
        monkeypatch.setattr(bvp_procs, "MIN_ROWS", 1 if processes else 10**9)
        write_windows(tmp_path / "split.json", "train", tmp_path / folder, workers=2)
        return _side_files(tmp_path / folder)

    assert side("p", True) == side("t", False)
    assert started == [2]

    victims = sorted((tmp_path / "tree").rglob("user1-*.mat"))
    compressed = next(p for p in victims[40:] if p.read_bytes()[128] == 15)
    data = bytearray(compressed.read_bytes())
    data[len(data) // 2] ^= 0xFF  # inside the stream: the sha256 differs from the manifest's
    compressed.write_bytes(bytes(data))
    errors = []
    for processes in (True, False):
        monkeypatch.setattr(bvp_procs, "MIN_ROWS", 1 if processes else 10**9)
        with pytest.raises((FormatError, ValidationError)) as info:
            write_windows(tmp_path / "split.json", "train", tmp_path / f"bad{processes}", workers=2)
        errors.append((type(info.value), str(info.value)))
        assert not (tmp_path / f"bad{processes}" / "X.npy").exists()
    assert errors[0] == errors[1] and compressed.name in errors[0][1]
    assert len(started) == 2


def _private_shm(tmp_path, monkeypatch) -> Path:
    """A folder of the test's own for the readers' slots file (in place of /dev/shm, which the other test worker
    shares: its live slots file made "none left" fail here)."""
    from rfbench.datasets.windows import bvp_procs

    shm = tmp_path / "shm"
    shm.mkdir()
    monkeypatch.setattr(bvp_procs, "_SHM", str(shm))
    return shm


def test_both_sides_share_one_reader_pool_and_write_what_threads_write(tmp_path, monkeypatch):
    """``--side both`` of a large BVP split starts one pool of reader processes for both sides, the test side's
    runs queued behind the train side's (read while the train side is being finished); each side's files are
    byte for byte those one run per side writes with threads, and a damaged test-side file stops the run with
    the threads' error and no side written."""
    from rfbench.datasets import widar_bvp
    from rfbench.datasets.synthetic_bvp import make_widar_bvp_tree
    from rfbench.datasets.windows import bvp, bvp_procs, write_windows
    from rfbench.errors import FormatError, ValidationError
    from rfbench.protocols.split import write_splits

    make_widar_bvp_tree(tmp_path / "tree", frames=(1, 9), damage=False)
    widar_bvp.ingest_bvp(tmp_path / "tree", workers=1).write(tmp_path / "manifest.json")
    write_splits(tmp_path / "manifest.json", "cross-subject", tmp_path / "split.json", test=["user4"])
    monkeypatch.setattr(bvp, "CHUNK_BYTES", 7 * 9 * 1600)  # 7 rows a run: many runs per side, every slot reused
    shm = _private_shm(tmp_path, monkeypatch)
    started = []
    real_enter = bvp_procs.BvpReaders.__enter__
    monkeypatch.setattr(bvp_procs.BvpReaders, "__enter__", lambda self: (started.append(self.n), real_enter(self))[1])
    monkeypatch.setattr(bvp_procs, "MIN_ROWS", 10**9)
    for side in ("train", "test"):
        write_windows(tmp_path / "split.json", side, tmp_path / "threads" / side, workers=2)
    assert started == []
    monkeypatch.setattr(bvp_procs, "MIN_ROWS", 1)
    write_windows(tmp_path / "split.json", "both", tmp_path / "procs", workers=2)
    assert started == [2]  # one pool for both sides
    for side in ("train", "test"):
        assert _side_files(tmp_path / "procs" / side) == _side_files(tmp_path / "threads" / side), side

    test_ids = set(json.loads((tmp_path / "split.json").read_text())["test"])
    recs = json.loads((tmp_path / "manifest.json").read_text())["recordings"]
    victim = tmp_path / "tree" / [r for r in recs if r["id"] in test_ids][-20]["files"][0]["path"]
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    errors = []
    for min_rows in (1, 10**9):
        monkeypatch.setattr(bvp_procs, "MIN_ROWS", min_rows)
        with pytest.raises((FormatError, ValidationError)) as info:
            write_windows(tmp_path / "split.json", "both", tmp_path / f"bad{min_rows}", workers=2)
        errors.append((type(info.value), str(info.value)))
        assert not (tmp_path / f"bad{min_rows}").exists()
    assert errors[0] == errors[1] and victim.name in errors[0][1]
    assert len(started) == 2
    assert not list(shm.glob("rfbench-bvp-*"))  # the slots file is gone


def test_an_interruption_while_the_shared_pool_starts_leaves_no_folder(tmp_path, monkeypatch):
    """Ctrl-C while ``--side both`` starts its reader processes: the folders made for the outputs go too."""
    from rfbench.datasets import widar_bvp
    from rfbench.datasets.synthetic_bvp import make_widar_bvp_tree
    from rfbench.datasets.windows import bvp_procs, write_windows
    from rfbench.protocols.split import write_splits

    make_widar_bvp_tree(tmp_path / "tree", frames=(1, 3), damage=False)
    widar_bvp.ingest_bvp(tmp_path / "tree", workers=1).write(tmp_path / "manifest.json")
    write_splits(tmp_path / "manifest.json", "cross-subject", tmp_path / "split.json", test=["user4"])
    monkeypatch.setattr(bvp_procs, "MIN_ROWS", 1)

    def interrupted(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(bvp_procs.BvpReaders, "_start", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_windows(tmp_path / "split.json", "both", tmp_path / "a" / "out", workers=2)
    assert not (tmp_path / "a").exists()


def test_without_reader_processes_the_threads_read_the_side(tmp_path, monkeypatch):
    """When no reader process starts (here: no interpreter to start), the threads read the side: same files."""
    from rfbench.datasets import widar_bvp
    from rfbench.datasets.synthetic_bvp import make_widar_bvp_tree
    from rfbench.datasets.windows import bvp_procs, write_windows
    from rfbench.protocols.split import write_splits

    make_widar_bvp_tree(tmp_path / "tree", frames=(1, 3), damage=False)
    widar_bvp.ingest_bvp(tmp_path / "tree", workers=1).write(tmp_path / "manifest.json")
    write_splits(tmp_path / "manifest.json", "cross-subject", tmp_path / "split.json", test=["user4"])
    monkeypatch.setattr(bvp_procs, "MIN_ROWS", 1)
    monkeypatch.setattr(bvp_procs.sys, "executable", str(tmp_path / "no-python"))
    shm = _private_shm(tmp_path, monkeypatch)
    write_windows(tmp_path / "split.json", "test", tmp_path / "a", workers=2)
    monkeypatch.setattr(bvp_procs, "MIN_ROWS", 10**9)
    write_windows(tmp_path / "split.json", "test", tmp_path / "b", workers=2)
    a, b = _side_files(tmp_path / "a"), _side_files(tmp_path / "b")
    assert a["X.npy"] == b["X.npy"] and a["y.npy"] == b["y.npy"]
    assert a["index.json"].replace(b'"../a', b'"../b') == b["index.json"] or a["index.json"] == b["index.json"]
    assert not list(shm.glob("rfbench-bvp-*"))  # the slots file is gone


def test_ingest_reader_processes_give_the_threads_manifest(tmp_path, monkeypatch):
    """Reader processes (one per core, started once the walk has placed MIN_FILES files) hash and judge the same
    batches the threads do: the same manifest, planted problems (not a MAT-file, no variable, mis-shaped, T = 0,
    an empty file, a file past the bound) included; without an interpreter to start, the threads read them."""
    import os

    from rfbench.datasets import bvp_readers, widar_bvp
    from rfbench.datasets.synthetic_bvp import make_widar_bvp_tree

    make_widar_bvp_tree(tmp_path / "tree", frames=(1, 5), damage=True)
    first = next((tmp_path / "tree").rglob("*-L0.mat"))
    (first.with_name(first.name.replace("-L0.mat", "-L5.mat"))).write_bytes(b"\0" * (widar_bvp.MAX_BVP_BYTES + 1))
    os.mkfifo(first.with_name(first.name.replace("-L0.mat", "-L6.mat")))
    started = []
    real_start = bvp_readers.BvpReaders.start
    monkeypatch.setattr(bvp_readers.BvpReaders, "start", lambda self: started.append(real_start(self)) or started[-1])

    def manifest(min_files: int) -> bytes:
        monkeypatch.setattr(bvp_readers, "MIN_FILES", min_files)
        path = tmp_path / f"m{len(started)}-{min_files}.json"
        widar_bvp.ingest_bvp(tmp_path / "tree", workers=2).write(path)
        return path.read_bytes().replace(path.name.encode(), b"")

    threads = manifest(10**9)
    assert started == []
    assert manifest(1) == threads and started == [True]
    assert manifest(150) == threads and started == [True, True]  # threads first, processes from the 150th file
    monkeypatch.setattr(bvp_readers.sys, "executable", str(tmp_path / "no-python"))
    assert manifest(1) == threads and started[-1] is False
    # an interpreter that starts but never says it is ready (their start-up is not waited for): the batches sent
    # to it are read in this process, and the manifest is the same
    monkeypatch.setattr(bvp_readers.sys, "executable", shutil.which("false") or "/bin/false")
    assert manifest(1) == threads and started[-1] is True
    reasons = " ".join(p["reason"] for p in widar_bvp.ingest_bvp(tmp_path / "tree", workers=1).problems)
    assert "more than the" in reasons and "no numeric" in reasons and "not a regular file" in reasons


def test_a_reader_that_does_not_say_ready_is_sent_nothing(tmp_path, monkeypatch):
    """A reader process whose first line is not ``ready`` (here a program that prints a note, then keeps what
    reaches its input) is sent no batch — its input is closed at once — and its batches are read in this process:
    the threads' manifest. (Batches sent to a child whose answers nobody reads filled its output, it stopped
    reading its input, and the send waited for ever: ingest hung on a tree of 3,060 files.)"""
    from rfbench.datasets import bvp_readers, widar_bvp
    from rfbench.datasets.synthetic_bvp import make_widar_bvp_tree

    make_widar_bvp_tree(tmp_path / "tree", frames=(1, 5), damage=False)
    kept = tmp_path / "input"
    chatty = tmp_path / "chatty"
    chatty.write_text(f"#!/bin/sh\necho 'note: starting'\ncat >> '{kept}'\n")
    chatty.chmod(0o755)

    def manifest(name: str) -> bytes:
        path = tmp_path / name
        widar_bvp.ingest_bvp(tmp_path / "tree", workers=2).write(path)
        return path.read_bytes().replace(name.encode(), b"")

    monkeypatch.setattr(bvp_readers, "MIN_FILES", 10**9)
    threads = manifest("t.json")
    monkeypatch.setattr(bvp_readers, "MIN_FILES", 1)
    monkeypatch.setattr(bvp_readers.sys, "executable", str(chatty))
    assert manifest("c.json") == threads
    assert kept.exists() and kept.read_bytes() == b""


@pytest.mark.parametrize("first", ["non-finite", "damaged", "wrong T"])
def test_the_first_bad_row_in_order_stops_a_run(first):
    """chunk_x checks its rows finite together, at the end or up to a row that fails to read: whichever bad row
    comes first in row order names the error, as when each row was checked on its own."""
    from rfbench.datasets.synthetic_bvp import bvp_file_bytes
    from rfbench.datasets.windows.bvp import chunk_x
    from rfbench.errors import FormatError, ValidationError

    rng = np.random.default_rng(1)
    files = {f"f{k}.mat": bvp_file_bytes(rng.random((20, 20, 3)), compress=k % 2 == 1) for k in range(6)}
    bad_value = rng.random((20, 20, 3))
    bad_value[4, 5, 1] = np.nan
    kinds = {"non-finite": bvp_file_bytes(bad_value), "damaged": b"not a MAT-file" * 20,
             "wrong T": bvp_file_bytes(rng.random((20, 20, 4)))}
    second = next(k for k in kinds if k != first)
    files["f2.mat"], files["f4.mat"] = kinds[first], kinds[second]
    recs = [{"id": name, "files": [{"path": name}], "frames": 3} for name in files]
    with pytest.raises((ValidationError, FormatError), match="f2.mat") as info:
        chunk_x(recs, 3, lambda entry: files[entry["path"]])
    assert {"non-finite": "non-finite", "damaged": "MAT", "wrong T": "T = 4"}[first] in str(info.value)
    del files["f2.mat"], recs[2]
    with pytest.raises((ValidationError, FormatError), match="f4.mat"):
        chunk_x(recs, 3, lambda entry: files[entry["path"]])
    good = [r for r in recs if r["id"] != "f4.mat"]
    x = chunk_x(good, 5, lambda entry: files[entry["path"]])
    assert np.isfinite(x).all() and not x[:, 3:].any()


def test_shown_paths_equal_the_naive_escape():
    """display_path returns a printable ASCII name as it is (most names, no encoding round trip) and escapes
    everything else as before: the naive character-by-character escape agrees on both."""
    import random

    import naive
    from rfbench.datasets.tree import display_path

    rng = random.Random(2)
    alphabet = "abc/._- 0~" + "\x00\x1f\x7f\t\n" + "éü✓" + "\udc80\udcff"
    names = ["user1-1-1-1-1-1-1e-07-100-20-100000-L0.mat", "BVP/20181109-VS/6-link", "", "~", "\x7f", "a\nb"]
    names += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))) for _ in range(500)]
    for name in names:
        assert display_path(name) == naive.naive_display_path(name), repr(name)


def test_no_reader_process_inside_a_confined_world(tmp_path, monkeypatch):
    """A confined block's closed world (``rfbench compare`` re-reading a chain) lives in this process alone, so
    a large side read there stays on threads (a child would read outside it); a file the world does not hold
    is refused there as anywhere. Outside the block the reader processes start."""
    import os

    from rfbench.datasets import bvp_readers, widar_bvp
    from rfbench.datasets.synthetic_bvp import make_widar_bvp_tree
    from rfbench.datasets.windows import bvp_procs, write_windows
    from rfbench.io import world
    from rfbench.protocols.split import write_splits

    make_widar_bvp_tree(tmp_path / "tree", frames=(1, 3), damage=False)
    widar_bvp.ingest_bvp(tmp_path / "tree", workers=1).write(tmp_path / "manifest.json")
    write_splits(tmp_path / "manifest.json", "cross-subject", tmp_path / "split.json", test=["user4"])
    monkeypatch.setattr(bvp_procs, "MIN_ROWS", 1)
    monkeypatch.setattr(bvp_readers, "MIN_FILES", 1)
    started = []
    real_enter = bvp_procs.BvpReaders.__enter__
    monkeypatch.setattr(bvp_procs.BvpReaders, "__enter__", lambda self: (started.append(self.n), real_enter(self))[1])
    real_start = bvp_readers.BvpReaders.start
    monkeypatch.setattr(bvp_readers.BvpReaders, "start", lambda self: started.append("ingest") or real_start(self))
    every = {}
    for path in [p for p in tmp_path.rglob("*") if p.is_file()]:
        info = os.stat(path)
        every[(info.st_dev, info.st_ino)] = info.st_size
    with world.confined(every):
        assert not world.children_share_it()
        write_windows(tmp_path / "split.json", "test", tmp_path / "in", workers=2)
        widar_bvp.ingest_bvp(tmp_path / "tree", workers=2)
    assert started == [] and world.children_share_it()
    write_windows(tmp_path / "split.json", "test", tmp_path / "out", workers=2)
    assert started == [2]
    assert (tmp_path / "in" / "X.npy").read_bytes() == (tmp_path / "out" / "X.npy").read_bytes()


def test_the_evidence_floor_counts_the_tree_it_is_given(tmp_path):
    """``python -m benchmarks.bench_bvp floor TREE`` (the work no BVP job can leave out, timed alone): every file
    of the tree counted, the compressed ones found, X sized from the longest T the manifest records, and the floor
    the sum of its pieces (the reads and hashes twice)."""
    import json

    from benchmarks.bench_bvp import evidence_floor
    from rfbench.datasets import widar_bvp
    from rfbench.datasets.synthetic_bvp import make_widar_bvp_tree

    make_widar_bvp_tree(tmp_path / "tree", frames=(2, 7), damage=False)
    manifest = widar_bvp.ingest_bvp(tmp_path / "tree", workers=1)
    out = evidence_floor(str(tmp_path / "tree"))
    files = [p for p in (tmp_path / "tree").rglob("*.mat")]
    assert out["files"] == len(files) == len(manifest.recordings)
    assert out["compressed"] == sum(p.read_bytes()[128] == 15 for p in files) > 0
    assert out["t_max"] == max(r["frames"] for r in manifest.recordings)
    assert out["x_bytes"] == len(files) * out["t_max"] * 20 * 20 * 4
    pieces = 2 * out["read_sha256_s"] + out["inflate_s"] + out["cast_s"] + out["x_sha256_s"]
    assert out["floor_cpu_s"] == pytest.approx(pieces) and out["floor_cpu_s"] > 0
    assert out["floor_wall_s"] == pytest.approx(out["floor_cpu_s"] / out["cores"])
    assert json.loads(json.dumps(out)) == out


def test_a_stopped_ingest_does_not_read_the_rest_of_the_tree(tmp_path, monkeypatch):
    """An error (or Ctrl-C) while reader processes read a tree: the batches not yet sent to them are cancelled,
    not read to the end before the error comes out, and the children end."""
    from rfbench.datasets import bvp_readers, widar_bvp
    from rfbench.datasets.synthetic_bvp import make_widar_bvp_tree

    make_widar_bvp_tree(tmp_path / "tree", repetitions=3, frames=(1, 3), damage=False)
    monkeypatch.setattr(bvp_readers, "MIN_FILES", 1)
    monkeypatch.setattr(widar_bvp, "READ_BATCH", 4)
    futures, started = [], []
    real_submit, real_start = bvp_readers.BvpReaders.submit, bvp_readers.BvpReaders.start
    monkeypatch.setattr(bvp_readers.BvpReaders, "submit", lambda self, b: futures.append(real_submit(self, b))
                        or futures[-1])

    def start(self):
        ok = real_start(self)
        started.append(list(self.procs))
        return ok

    monkeypatch.setattr(bvp_readers.BvpReaders, "start", start)

    done_at_stop = []

    def stop(_):
        done_at_stop.append(sum(f.done() for f in futures))
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        widar_bvp.ingest_bvp(tmp_path / "tree", workers=2, progress=stop)
    assert len(futures) > 100 and started and started[0]
    assert all(f.done() for f in futures)  # each read, or cancelled: none left waiting
    # after the stop only the batches already out are read: at most three per child (one read, one in its input,
    # one waiting to be sent); how many were read before the stop is the machine's pace, not the test's
    read_after = sum(f.done() and not f.cancelled() for f in futures) - done_at_stop[0]
    assert read_after <= 3 * len(started[0]), (read_after, done_at_stop, len(futures))
    assert all(proc.poll() is not None for proc in started[0])  # the children ended


def _bvp_split(tmp_path):
    from rfbench.datasets import widar_bvp
    from rfbench.datasets.synthetic_bvp import make_widar_bvp_tree
    from rfbench.protocols.split import write_splits

    make_widar_bvp_tree(tmp_path / "tree", frames=(1, 5), damage=False)
    widar_bvp.ingest_bvp(tmp_path / "tree", workers=1).write(tmp_path / "manifest.json")
    write_splits(tmp_path / "manifest.json", "cross-subject", tmp_path / "split.json", test=["user4"])
    return tmp_path / "split.json"


def _count_spawns(monkeypatch, events: list) -> list:
    """Record each reader process started (``spawn``) and each manifest read (``manifest``), in order."""
    from rfbench.datasets import manifest
    from rfbench.datasets.windows import bvp_procs

    procs = []
    real_spawn = bvp_procs._spawn

    def spawn():
        events.append("spawn")
        procs.append(real_spawn())
        return procs[-1]

    def counted(real):
        def read(*args, **kwargs):
            events.append("manifest")
            return real(*args, **kwargs)
        return read

    monkeypatch.setattr(bvp_procs, "_spawn", spawn)
    for name in ("read_manifest", "read_manifest_hashed"):  # (a split's check reads it with its digest)
        monkeypatch.setattr(manifest, name, counted(getattr(manifest, name)))
    return procs


@pytest.mark.parametrize("side", ["both", "test"])
def test_reader_processes_start_before_the_split_is_rechecked(tmp_path, monkeypatch, side):
    """``windows`` starts its BVP reader processes before it reads the manifest to re-check the split (they import
    on the core the check leaves idle) and the readers take those very processes: none started later, and the
    files written are the threads' bytes."""
    from rfbench.datasets.windows import bvp_procs, write_windows

    split = _bvp_split(tmp_path)
    _private_shm(tmp_path, monkeypatch)
    events: list = []
    procs = _count_spawns(monkeypatch, events)
    monkeypatch.setattr(bvp_procs, "MIN_ROWS", 1)
    write_windows(split, side, tmp_path / "p", workers=2)
    assert events[:3] == ["spawn", "spawn", "manifest"] and events.count("spawn") == 2
    assert all(p.poll() is not None for p in procs)  # every one ended
    monkeypatch.setattr(bvp_procs, "MIN_ROWS", 10**9)
    write_windows(split, side, tmp_path / "t", workers=2)
    assert events.count("spawn") == 2  # threads: none started
    folders = [("train", "test")] if side == "both" else [("",)]
    for names in folders:
        for name in names:
            a, b = _side_files(tmp_path / "p" / name), _side_files(tmp_path / "t" / name)
            assert a["X.npy"] == b["X.npy"] and a["y.npy"] == b["y.npy"]


def test_reader_processes_started_ahead_end_when_the_split_is_refused(tmp_path, monkeypatch):
    """A split the re-check refuses (a recording moved to the other side): the processes started ahead are ended,
    never used, and nothing is written."""
    import json

    from rfbench.datasets.windows import bvp_procs, write_windows
    from rfbench.errors import RfbenchError

    split = _bvp_split(tmp_path)
    doc = json.loads(split.read_text())
    doc["test"].append(doc["train"].pop())
    split.write_text(json.dumps(doc))
    events: list = []
    procs = _count_spawns(monkeypatch, events)
    monkeypatch.setattr(bvp_procs, "MIN_ROWS", 1)
    with pytest.raises(RfbenchError):
        write_windows(split, "both", tmp_path / "out", workers=2)
    assert events[:2] == ["spawn", "spawn"] and len(procs) == 2
    assert all(p.poll() is not None and p.stdout.closed for p in procs)
    assert not (tmp_path / "out").exists()


def test_no_reader_process_starts_ahead_of_a_small_or_other_split(tmp_path, monkeypatch):
    """Below MIN_ROWS declared rows, with one worker, or for a split of another dataset, none starts ahead."""
    from rfbench.datasets.windows import bvp_procs
    from rfbench.datasets.windows.build import bvp_spares

    split = _bvp_split(tmp_path)
    events: list = []
    _count_spawns(monkeypatch, events)
    monkeypatch.setattr(bvp_procs, "MIN_ROWS", 10**9)
    assert bvp_spares(split, ("train", "test"), 2) == []
    monkeypatch.setattr(bvp_procs, "MIN_ROWS", 1)
    assert bvp_spares(split, ("train", "test"), 1) == []
    other = tmp_path / "other.json"
    other.write_text(split.read_text().replace('"widar3-bvp"', '"widar3"'))
    assert bvp_spares(other, ("train",), 2) == []
    assert bvp_spares(tmp_path / "missing.json", ("train",), 2) == []
    assert events == []
