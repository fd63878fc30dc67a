"""Content-level leakage: the XXH64 kernels against their naive twins, every kind of planted leak found with its
evidence in generated trees, clean trees clean, hash collisions never a verdict, the CLI, and the real corpora."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import naive
from contentdata import toy_manifest as _toy_manifest
from rfbench.cli import app
from rfbench.datasets import mmfi, widar
from rfbench.datasets.manifest import Manifest
from rfbench.datasets.synthetic import make_mmfi_tree, make_widar_tree, mat_v5_bytes
from rfbench.errors import FormatError, ValidationError
from rfbench.io.intel5300 import read, record_spans
from rfbench.io.matv5 import read_mat
from rfbench.io.writer import LogBuilder, encode_record, sample_0x5_like, synthetic_log
from rfbench.protocols import content_index, content_matches, fingerprints
from rfbench.protocols.content import (
    DEFAULT_MIN_SHARED,
    audit_content,
    bfee_fingerprints,
    fingerprint,
    frame_values,
    hash_spans,
    xxh64,
)

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------------------------------------
# XXH64: the kernel, its naive twin, and published values
# ---------------------------------------------------------------------------------------------------------

# Reference values: XXH64("", 0) and XXH64("abc", 0) are the ones xxHash's documentation and test suite quote;
# the others were computed with python-xxhash 4.1.0 (xxHash 0.8.4), xxhash.xxh64_intdigest(data, seed).
XXH64_VECTORS = [
    (b"", 0, 0xEF46DB3751D8E999),
    (b"a", 0, 0xD24EC4F1A98C6E5B),
    (b"abc", 0, 0x44BC2CF5AD770999),
    (b"abc", 1, 0xBEA9CA8199328908),
    (bytes(range(7)), 0, 0x14CC643F630C72D2),   # 4-byte tail + 3 single bytes
    (bytes(range(31)), 0, 0xC346D2B59B4D8EE1),  # the longest input without a 32-byte stripe
    (bytes(range(32)), 0, 0xCBF59C5116FF32B4),  # exactly one stripe
    (bytes(range(33)), 0, 0x0C535D1ACAFB8EAD),
    (bytes(range(100)), 0, 0x6AC1E58032166597),
    (bytes(range(256)), 2**64 - 1, 0x9FD2BFCEE8985E7F),  # the largest seed
]


@pytest.mark.parametrize("data, seed, expected", XXH64_VECTORS)
def test_xxh64_reference_values(data, seed, expected):
    assert xxh64(data, seed) == expected
    assert naive.naive_xxh64(data, seed) == expected


def test_xxh64_matches_naive_on_every_length_and_seeded_random_data():
    rng = np.random.default_rng(0)
    for n in list(range(0, 80)) + [127, 128, 129, 255, 1000, 4099]:
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        for seed in (0, 1, int(rng.integers(0, 2**63)) * 2 + 1):
            assert xxh64(data, seed) == naive.naive_xxh64(data, seed), (n, seed)


def test_xxh64_against_python_xxhash_when_installed():
    xxhash = pytest.importorskip("xxhash")
    rng = np.random.default_rng(1)
    for n in rng.integers(0, 3000, 40):
        data = rng.integers(0, 256, int(n), dtype=np.uint8).tobytes()
        assert xxh64(data) == xxhash.xxh64_intdigest(data)


def test_hash_spans_matches_naive_on_random_spans_and_awkward_ones():
    rng = np.random.default_rng(2)
    buf = rng.integers(0, 256, 5000, dtype=np.uint8)
    offsets = rng.integers(0, 4000, 300)
    lengths = rng.integers(0, 1000, 300)
    lengths = np.minimum(lengths, 5000 - offsets)
    # awkward: empty spans, a one-byte span, a span ending exactly at the end of the buffer, the whole buffer
    offsets = np.concatenate([offsets, [0, 4999, 4999, 5000 - 37, 0]])
    lengths = np.concatenate([lengths, [0, 0, 1, 37, 5000]])
    got = hash_spans(buf, offsets, lengths, seed=5)
    want = [naive.naive_xxh64(buf[o:o + n].tobytes(), 5) for o, n in zip(offsets, lengths)]
    assert got.dtype == np.uint64 and got.tolist() == want
    assert hash_spans(buf, [], []).shape == (0,)
    assert hash_spans(b"", [0], [0]).tolist() == [0xEF46DB3751D8E999]


@pytest.mark.parametrize("args, match", [
    ((np.zeros(4, np.uint8), [0], [5]), "inside the buffer"),
    ((np.zeros(4, np.uint8), [-1], [1]), "inside the buffer"),
    ((np.zeros(4, np.uint8), [0, 1], [1]), "one length"),
    ((np.zeros((2, 2), np.uint8), [0], [1]), "1-D uint8"),
])
def test_hash_spans_validates(args, match):
    with pytest.raises(ValidationError, match=match):
        hash_spans(*args)
    with pytest.raises(ValidationError, match="seed"):
        hash_spans(b"ab", [0], [1], seed=-1)


def test_kernels_run_without_jit():
    code = ("from rfbench.protocols.content import xxh64, bfee_fingerprints;"
            "from rfbench.io.writer import synthetic_log;"
            "print(xxh64(b'abc'), bfee_fingerprints(synthetic_log(3, seed=1)).hashes.tolist())")
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    jit = f"{xxh64(b'abc')} {bfee_fingerprints(synthetic_log(3, seed=1)).hashes.tolist()}"
    assert proc.stdout.strip() == jit


# ---------------------------------------------------------------------------------------------------------
# bfee record fingerprints against the naive twin
# ---------------------------------------------------------------------------------------------------------


def _csi(nrx, ntx, rng):
    return rng.integers(-128, 128, size=(30, nrx, ntx, 2)).astype(np.int8)


def _gap_bits_only_record(nrx=3, ntx=1, timestamp=5) -> bytes:
    """A bfee record whose CSI values are all zero but whose 3 unused bits before each subcarrier group are
    set: blank by its values although its payload bytes are not zero."""
    from rfbench.io.intel5300 import calc_len

    n = calc_len(nrx, ntx)
    bits = np.zeros(n * 8, dtype=np.uint8)
    for sc in range(30):
        bits[sc * (3 + 16 * nrx * ntx): sc * (3 + 16 * nrx * ntx) + 3] = 1
    payload = np.packbits(bits, bitorder="little").tobytes()
    head = (timestamp.to_bytes(4, "little") + b"\x00" * 4 + bytes([nrx, ntx, 30, 30, 30, 0x81, 40, 0b100100])
            + n.to_bytes(2, "little") + b"\x00\x00")
    return encode_record(0xBB, head + payload)


def _hand_made_logs():
    rng = np.random.default_rng(3)
    zero = np.zeros((30, 3, 1, 2), np.int8)
    mixed = LogBuilder()
    for nrx, ntx in ((1, 1), (2, 3), (3, 3), (3, 2), (1, 3)):
        mixed.bfee(_csi(nrx, ntx, rng), timestamp_low=nrx * 10 + ntx)
    damaged = (LogBuilder().bfee(_csi(3, 1, rng)).record(0xC1, bytes(50)).bfee(_csi(3, 1, rng), len_field=5)
               .raw(b"\x00\x00").bfee(_csi(2, 2, rng), nrx_field=7).bfee(zero, timestamp_low=9)
               .bfee(_csi(3, 1, rng), body_cut=100).to_bytes())
    # a record whose field_len claims 10 bytes beyond its payload: those bytes are not part of its body
    extra = encode_record(0xBB, LogBuilder().bfee(_csi(3, 1, rng)).to_bytes()[3:] + b"\xff" * 10)
    return {
        "empty": b"",
        "one record": LogBuilder().bfee(_csi(3, 1, rng)).to_bytes(),
        "all-zero CSI": LogBuilder().bfee(zero).bfee(zero, timestamp_low=1).to_bytes(),
        "gap bits only": _gap_bits_only_record() + _gap_bits_only_record(2, 2, 6),
        "mixed shapes": mixed.to_bytes(),
        "damaged": damaged,
        "trailing body bytes": extra,
        "truncated tail": synthetic_log(5, seed=4)[:-7],
        "interleaved MPDU": synthetic_log(20, nrx=3, ntx=2, seed=5, non_csi_every=3),
        "sample_0x5-like": sample_0x5_like(seed=0, n_records=200),
    }


@pytest.mark.parametrize("name", list(_hand_made_logs()))
def test_bfee_fingerprints_match_naive(name):
    data = _hand_made_logs()[name]
    fp = bfee_fingerprints(data)
    want = naive.naive_record_fingerprints(data)
    assert len(fp) == len(want) == read(data).n_records
    assert [None if b else int(h) for h, b in zip(fp.hashes, fp.blank)] == want


def test_blank_records_are_those_whose_values_are_all_zero():
    assert bfee_fingerprints(_hand_made_logs()["all-zero CSI"]).blank.tolist() == [True, True]
    # the unused bits are set but every value is zero: still blank (the payload bytes alone would say no)
    assert bfee_fingerprints(_hand_made_logs()["gap bits only"]).blank.tolist() == [True, True]
    one = np.zeros((30, 3, 1, 2), np.int8)
    one[29, 2, 0, 1] = 1  # a single non-zero value, the very last imaginary part
    assert bfee_fingerprints(LogBuilder().bfee(one).to_bytes()).blank.tolist() == [False]


def test_a_record_hash_covers_its_csi_not_its_header_nor_the_bytes_beyond_its_payload():
    """The CSI payload and its shape are the content: a record copied with its timestamp, packet counter, RSSI or
    AGC changed is the same record (a training log copied under a test name with every timestamp moved by 1 µs
    passed the content check when the header was hashed too)."""
    rng = np.random.default_rng(6)
    csi = _csi(3, 1, rng)
    a = LogBuilder().bfee(csi, timestamp_low=1).to_bytes()
    b = LogBuilder().bfee(csi, timestamp_low=2, bfee_count=9, rssi_a=40, agc=30).to_bytes()
    extra = encode_record(0xBB, a[3:] + b"\x01\x02")
    other = LogBuilder().bfee(_csi(3, 1, rng), timestamp_low=1).to_bytes()
    ha, hb, he, ho = (int(bfee_fingerprints(x).hashes[0]) for x in (a, b, extra, other))
    assert ha == hb == he == naive.naive_record_fingerprints(a)[0]
    assert ho != ha  # other CSI values


def test_record_spans_are_the_records_read_returns():
    data = synthetic_log(12, nrx=2, ntx=2, seed=7, non_csi_every=2)
    spans = record_spans(data)
    log = read(data)
    assert len(spans) == log.n_records == 12
    buf = np.frombuffer(data, np.uint8)
    # each offset is the body: bfee_count is its bytes 4-5 (little-endian)
    assert [int(buf[o + 4]) | int(buf[o + 5]) << 8 for o in spans.offsets] == log.bfee_count.tolist()


def test_record_span_lengths_follow_calc_len():
    from rfbench.io.intel5300 import calc_len

    # calc_len(2, 2) = (30 * (2 * 2 * 16 + 3) + 7) // 8 = (30 * 67 + 7) // 8 = 2017 // 8 = 252
    assert calc_len(2, 2) == 252
    spans = record_spans(synthetic_log(3, nrx=2, ntx=2, seed=7))
    assert spans.lengths.tolist() == [272, 272, 272]
    assert spans.nrx.tolist() == [2, 2, 2] and spans.ntx.tolist() == [2, 2, 2]


# ---------------------------------------------------------------------------------------------------------
# MM-Fi frame fingerprints against the naive twin
# ---------------------------------------------------------------------------------------------------------


def _frame_hash(arrays):
    values, status, _ = frame_values(arrays)
    if status != 0:
        return None, {1: "zero", 2: "non_finite", 3: "unparsed"}[status]
    return int(hash_spans(values.view(np.uint8), [0], [values.nbytes])[0]), "ok"


def _frames():
    rng = np.random.default_rng(8)
    amp = rng.normal(size=(3, 114, 10))
    nan = np.full((3, 114, 10), np.nan)
    signed_zero = np.zeros((2, 3))
    signed_zero[0, 0] = -0.0
    return {
        "random": {"CSIamp": amp, "CSIphase": rng.uniform(-3, 3, (3, 114, 10))},
        "amp only": {"CSIamp": amp},
        "all zero": {"CSIamp": np.zeros((3, 114, 10)), "CSIphase": np.zeros((3, 114, 10))},
        "all NaN": {"CSIamp": nan, "CSIphase": nan},
        "zeros and inf": {"CSIamp": np.zeros(4), "CSIphase": np.array([np.inf, -np.inf])},
        "one value": {"CSIamp": np.array([[2.5]])},
        "negative zero": {"CSIamp": signed_zero + np.eye(2, 3), "CSIphase": -signed_zero},
        "NaN payloads": {"CSIamp": np.array([1.0, np.float64(np.frombuffer(b"\x01\x00\x00\x00\x00\x00\xf8\xff",
                                                                            "<f8")[0])])},
        "float32 and int": {"CSIamp": amp.astype(np.float32), "CSIphase": np.arange(6, dtype=np.int16)},
        "complex": {"CSIamp": amp[0, :2] + 1j * amp[1, :2]},
        "no CSIamp": {"CSIphase": amp},
    }


@pytest.mark.parametrize("name", list(_frames()))
def test_frame_fingerprints_match_naive(name):
    arrays = _frames()[name]
    assert _frame_hash(arrays) == naive.naive_frame_fingerprint(arrays)


def test_equal_arrays_hash_equal_whatever_their_zero_sign_and_nan_bits():
    a = {"CSIamp": np.array([0.0, 1.0, np.nan]), "CSIphase": np.array([2.0])}
    b = {"CSIamp": np.array([-0.0, 1.0, -np.nan]), "CSIphase": np.array([2.0], dtype=np.float32)}
    c = {"CSIamp": np.array([0.0, 1.0, 3.0]), "CSIphase": np.array([2.0])}
    assert _frame_hash(a) == _frame_hash(b) != _frame_hash(c)
    # a frame is its arrays, not its file: the same arrays written by another program hash the same
    one = read_mat_bytes(mat_v5_bytes(a))
    two = read_mat_bytes(mat_v5_bytes(b, header_text="MATLAB 5.0 MAT-file, another writer"))
    assert _frame_hash(one) == _frame_hash(two)


def read_mat_bytes(data: bytes) -> dict:
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".mat", delete=False) as fh:
        fh.write(data)
    try:
        return dict(read_mat(fh.name))
    finally:
        os.unlink(fh.name)


# ---------------------------------------------------------------------------------------------------------
# Generated trees: each kind of planted leak, found with its evidence; clean trees report none
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def widar_tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("widar-clean") / "w"
    make_widar_tree(root, seed=0, damage=False)
    return root


@pytest.fixture(scope="module")
def mmfi_tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("mmfi-clean") / "m"
    make_mmfi_tree(root, seed=0, subjects=("S01", "S05", "S11", "S15"), actions=("A01", "A02"), frames=4,
                   damage=False)
    return root


def _copy(tree: Path, tmp_path: Path) -> Path:
    dst = tmp_path / tree.name
    shutil.copytree(tree, dst)
    return dst


def _cross_room(manifest: Manifest, test_room=3):
    train = [r["id"] for r in manifest.recordings if r["room"] != test_room]
    test = [r["id"] for r in manifest.recordings if r["room"] == test_room]
    return train, test


def _s2(manifest: Manifest):
    test_subjects = set(mmfi.S2_TEST_SUBJECTS)
    train = [r["id"] for r in manifest.recordings if r["subject"] not in test_subjects]
    test = [r["id"] for r in manifest.recordings if r["subject"] in test_subjects]
    return train, test


def _records(path: Path) -> int:
    return read(path).n_records


A = "20181109/user1-1-1-2-1"  # room 1: train in a cross-room split with room 3 held out
B = "20181211/user1-1-1-4-1"  # room 3: test


def test_clean_trees_report_no_content_shared(widar_tree, mmfi_tree):
    m = widar.ingest(widar_tree)
    found = audit_content(m, *_cross_room(m))
    assert found.passed and found.leaks == [] and found.widespread == [] and found.below_threshold == []
    assert found.within["train_pairs"] == found.within["test_pairs"] == 0
    assert found.within["train_repeated"] == found.within["test_repeated"] == []
    assert found.counts["files"] == 258 and found.counts["records"] == sum(
        _records(widar_tree / f["path"]) for r in m.recordings for f in r["files"])
    conf = found.confirmations
    assert conf["file_collisions"] == conf["record_collisions"] == conf["file_candidates"] == 0
    assert found.check()["name"] == "content-disjoint" and found.check()["passed"]

    mm = mmfi.ingest(mmfi_tree)
    found = audit_content(mm, *_s2(mm))
    assert found.passed and found.leaks == [] and found.within["test_repeated"] == []
    assert found.counts["frames"] == 4 * 8 and found.counts["records"] == 0


def test_a_log_copied_under_another_user_is_a_leak_naming_both_recordings(widar_tree, tmp_path):
    root = _copy(widar_tree, tmp_path)
    src = root / "CSI/20181109/user1"
    dst = root / "CSI/20181211/user9"  # another user, room 3: every id differs from the original's
    dst.mkdir()
    for r in range(1, 7):
        shutil.copy(src / f"user1-1-1-2-1-r{r}.dat", dst / f"user9-1-1-2-1-r{r}.dat")
    m = widar.ingest(root)
    found = audit_content(m, *_cross_room(m))
    assert not found.passed
    n = sum(_records(src / f"user1-1-1-2-1-r{r}.dat") for r in range(1, 7))
    [leak] = found.leaks
    assert leak["train"] == A and leak["test"] == "20181211/user9-1-1-2-1"
    assert leak["files"] == 6 and leak["records"] == n and leak["train_records"] == leak["test_records"] == n
    files = [e for e in leak["evidence"] if e["kind"] == "files"]
    assert sorted((e["train_file"], e["test_file"]) for e in files) == [
        (f"CSI/20181109/user1/user1-1-1-2-1-r{r}.dat", f"CSI/20181211/user9/user9-1-1-2-1-r{r}.dat")
        for r in range(1, 7)]
    recs = [e for e in leak["evidence"] if e["kind"] == "records"]
    assert sum(e["count"] for e in recs) == n and all(e["first"] == [0, 0] for e in recs)
    assert A in found.detail() and "20181211/user9-1-1-2-1" in found.detail()


def test_a_log_copied_under_another_user_with_every_timestamp_moved_is_a_leak(widar_tree, tmp_path):
    """Every record of the copies has its timestamp moved by 1 µs: no file and no record body is byte-identical
    to the original's, but every CSI payload is. Hashing the whole body let this through (audit passed, MEASURED,
    verify MATCH); the CSI is the content."""
    root = _copy(widar_tree, tmp_path)
    src = root / "CSI/20181109/user1"
    dst = root / "CSI/20181211/user9"
    dst.mkdir()
    n = 0
    for r in range(1, 7):
        data = bytearray((src / f"user1-1-1-2-1-r{r}.dat").read_bytes())
        spans = record_spans(bytes(data))
        for off in spans.offsets.tolist():  # timestamp_low: the body's first 4 bytes, little-endian
            data[off:off + 4] = ((int.from_bytes(data[off:off + 4], "little") + 1) % 2**32).to_bytes(4, "little")
        n += len(spans)
        (dst / f"user9-1-1-2-1-r{r}.dat").write_bytes(bytes(data))
    assert read(bytes(data)).csi.tobytes() == read((src / "user1-1-1-2-1-r6.dat").read_bytes()).csi.tobytes()
    m = widar.ingest(root)
    found = audit_content(m, *_cross_room(m))
    assert not found.passed
    [leak] = found.leaks
    assert leak["train"] == A and leak["test"] == "20181211/user9-1-1-2-1"
    assert leak["files"] == 0 and leak["records"] == n


def _cut(path: Path, first: int | None = None, last: int | None = None) -> bytes:
    """The bytes of the first ``first`` (or the last ``last``) records of a log, framing included."""
    data = path.read_bytes()
    spans = record_spans(data)
    if first is not None:
        end = int(spans.offsets[first - 1] + spans.lengths[first - 1])
        return data[:end]
    return data[int(spans.offsets[len(spans) - last]) - 3:]


def test_a_log_spliced_from_two_recordings_shares_records_with_both(widar_tree, tmp_path):
    root = _copy(widar_tree, tmp_path)
    a = root / "CSI/20181109/user1/user1-1-1-2-1-r1.dat"  # train (room 1)
    b = root / "CSI/20181211/user1/user1-1-1-4-1-r1.dat"  # test (room 3)
    k, j = _records(a) // 2, _records(b) // 3
    spliced = root / "CSI/20181117/user7/user7-1-1-1-1-r1.dat"  # a new recording in room 2: train
    spliced.parent.mkdir()
    spliced.write_bytes(_cut(a, first=k) + _cut(b, last=j))
    m = widar.ingest(root)
    found = audit_content(m, *_cross_room(m))
    assert not found.passed
    [leak] = found.leaks
    assert (leak["train"], leak["test"]) == ("20181117/user7-1-1-1-1", B)
    assert leak["files"] == 0 and leak["records"] == j
    [ev] = leak["evidence"]
    assert ev == {"kind": "records", "train_file": "CSI/20181117/user7/user7-1-1-1-1-r1.dat",
                  "test_file": "CSI/20181211/user1/user1-1-1-4-1-r1.dat", "count": j,
                  "first": [k, _records(b) - j]}
    # its other half is on its own side: reported, not a leak
    [pair] = found.within["train"]
    assert (pair["a"], pair["b"]) == (A, "20181117/user7-1-1-1-1") and pair["records"] == k
    # the threshold: with min_shared above what it shares, the pair is listed below it and the split passes
    index = fingerprint(m, recordings=_cross_room(m)[0] + _cross_room(m)[1])
    tr, te = _cross_room(m)
    assert not index.audit(tr, te, min_shared=j).passed
    relaxed = index.audit(tr, te, min_shared=j + 1)
    assert relaxed.passed and relaxed.leaks == []
    assert [(x["train"], x["test"], x["records"]) for x in relaxed.below_threshold] == [
        ("20181117/user7-1-1-1-1", B, j)]


def test_a_recording_re_exported_under_a_new_name_shares_every_record_and_no_file(widar_tree, tmp_path):
    root = _copy(widar_tree, tmp_path)
    src = root / "CSI/20181109/user1"
    dst = root / "CSI/20181211/user8"
    dst.mkdir()
    mpdu = encode_record(0xC1, bytes(range(40)))
    n = 0
    for r in range(1, 7):
        data = (src / f"user1-1-1-2-1-r{r}.dat").read_bytes()
        spans = record_spans(data)
        # re-framed by another tool: an MPDU record after every third CSI record, so no file is the same
        parts = []
        for i, (o, ln) in enumerate(zip(spans.offsets, spans.lengths)):
            parts.append(data[o - 3:o + ln])
            if i % 3 == 2:
                parts.append(mpdu)
        (dst / f"user8-2-3-4-5-r{r}.dat").write_bytes(b"".join(parts))
        n += len(spans)
    m = widar.ingest(root)
    found = audit_content(m, *_cross_room(m))
    [leak] = found.leaks
    assert (leak["train"], leak["test"], leak["files"], leak["records"]) == (A, "20181211/user8-2-3-4-5", 0, n)
    assert {e["kind"] for e in leak["evidence"]} == {"records"}
    assert sorted(e["test_file"][-6:] for e in leak["evidence"]) == [f"r{r}.dat" for r in range(1, 7)]


def test_an_mmfi_frame_duplicated_across_subjects_is_a_leak(mmfi_tree, tmp_path):
    root = _copy(mmfi_tree, tmp_path)
    shutil.copy(root / "E01/S01/A01/wifi-csi/frame002.mat", root / "E01/S05/A02/wifi-csi/frame003.mat")
    m = mmfi.ingest(root)
    found = audit_content(m, *_s2(m))
    [leak] = found.leaks
    assert (leak["train"], leak["test"]) == ("E01/S01/A01", "E01/S05/A02")
    assert leak["files"] == 1 and leak["frames"] == 1 and leak["train_frames"] == leak["test_frames"] == 4
    assert {(e["kind"], e["train_file"], e["test_file"]) for e in leak["evidence"]} == {
        (k, "E01/S01/A01/wifi-csi/frame002.mat", "E01/S05/A02/wifi-csi/frame003.mat") for k in ("files", "frames")}


def test_a_frame_re_saved_by_another_program_is_found_by_its_arrays(mmfi_tree, tmp_path):
    root = _copy(mmfi_tree, tmp_path)
    arrays = read_mat(root / "E02/S11/A02/wifi-csi/frame004.mat")
    (root / "E02/S15/A01/wifi-csi/frame001.mat").write_bytes(
        mat_v5_bytes({"CSIamp": arrays["CSIamp"], "CSIphase": arrays["CSIphase"]},
                     header_text="MATLAB 5.0 MAT-file, re-saved elsewhere"))
    m = mmfi.ingest(root)
    found = audit_content(m, *_s2(m))
    [leak] = found.leaks
    assert (leak["train"], leak["test"], leak["files"], leak["frames"]) == ("E02/S11/A02", "E02/S15/A01", 0, 1)
    [ev] = leak["evidence"]
    assert ev["kind"] == "frames" and ev["first"] == [0, 0]


@pytest.mark.parametrize("change", ["one ulp", "single"])
def test_a_frame_copied_below_float32_s_precision_is_the_same_frame(mmfi_tree, tmp_path, change):
    """windows give a model CSIamp as float32: a training frame copied with every amplitude moved by one float64
    step, or re-saved as MATLAB single, gives the very same row, and passed split --content while the float64
    values were hashed (found by an adversarial probe)."""
    root = _copy(mmfi_tree, tmp_path)
    arrays = read_mat(root / "E02/S11/A02/wifi-csi/frame004.mat")
    amp = np.asarray(arrays["CSIamp"], dtype=np.float64)
    amp = np.nextafter(amp, np.inf) if change == "one ulp" else amp.astype(np.float32)
    (root / "E02/S15/A01/wifi-csi/frame001.mat").write_bytes(mat_v5_bytes({"CSIamp": amp,
                                                                          "CSIphase": arrays["CSIphase"]}))
    m = mmfi.ingest(root)
    [leak] = audit_content(m, *_s2(m)).leaks
    assert (leak["train"], leak["test"], leak["files"], leak["frames"]) == ("E02/S11/A02", "E02/S15/A01", 0, 1)


@pytest.mark.parametrize("phase", ["negated", "left out"])
def test_a_frame_copied_with_its_phase_changed_is_found_by_its_amplitudes(mmfi_tree, tmp_path, phase):
    """A training frame copied to the test side with ``CSIphase`` negated (or dropped) gives a model reading
    amplitudes (``windows --features amp``) the very same row; it was another frame while both arrays were
    hashed together (found by an adversarial probe)."""
    root = _copy(mmfi_tree, tmp_path)
    arrays = read_mat(root / "E02/S11/A02/wifi-csi/frame004.mat")
    copy = {"CSIamp": arrays["CSIamp"]}
    if phase == "negated":
        copy["CSIphase"] = -arrays["CSIphase"]
    (root / "E02/S15/A01/wifi-csi/frame001.mat").write_bytes(mat_v5_bytes(copy))
    m = mmfi.ingest(root)
    [leak] = audit_content(m, *_s2(m)).leaks
    assert (leak["train"], leak["test"], leak["files"], leak["frames"]) == ("E02/S11/A02", "E02/S15/A01", 0, 1)


def test_duplicates_within_one_side_are_reported_not_fatal(widar_tree, mmfi_tree, tmp_path):
    root = _copy(widar_tree, tmp_path)
    src = root / "CSI/20181109/user1/user1-1-1-2-1-r2.dat"
    shutil.copy(src, root / "CSI/20181117/user2/user2-2-1-1-1-r1.dat")  # room 2: train, like the original
    log = src.read_bytes()
    (root / "CSI/20181109/user2/user2-2-5-5-5-r1.dat").write_bytes(log + log)  # the same records twice
    m = widar.ingest(root)
    found = audit_content(m, *_cross_room(m))
    assert found.passed and found.leaks == []
    n = _records(src)
    pairs = {(p["a"], p["b"]): (p["files"], p["records"]) for p in found.within["train"]}
    assert pairs[(A, "20181117/user2-2-1-1-1")] == (1, n)
    assert pairs[(A, "20181109/user2-2-5-5-5")] == (0, n)
    repeated = {r["recording"]: r["records"] for r in found.within["train_repeated"]}
    assert repeated == {"20181109/user2-2-5-5-5": n}
    assert "within one side" in found.detail() and found.check()["passed"]

    mm_root = _copy(mmfi_tree, tmp_path / "mm")
    frames = mm_root / "E01/S05/A01/wifi-csi"
    shutil.copy(frames / "frame001.mat", frames / "frame004.mat")  # S05 is a test subject
    mm = mmfi.ingest(mm_root)
    found = audit_content(mm, *_s2(mm))
    assert found.passed and found.within["test_repeated"] == [
        {"recording": "E01/S05/A01", "files": 1, "records": 0, "frames": 1}]


def test_blank_records_and_frames_are_counted_not_fingerprinted(tmp_path):
    zero = np.zeros((30, 3, 1, 2), np.int8)
    blank_log = LogBuilder().bfee(zero, timestamp_low=7).bfee(zero, timestamp_low=8).to_bytes()
    zeros = mat_v5_bytes({"CSIamp": np.zeros((3, 114, 10)), "CSIphase": np.zeros((3, 114, 10))})
    nans = mat_v5_bytes({"CSIamp": np.full((3, 4), np.nan), "CSIphase": np.zeros((3, 4))})
    rng = np.random.default_rng(9)
    live = LogBuilder().bfee(_csi(3, 1, rng)).to_bytes()
    path = _toy_manifest(tmp_path, {"a.dat": blank_log + live, "b.dat": blank_log, "fa.mat": zeros,
                                    "fb.mat": zeros, "na.mat": nans, "nb.mat": nans},
                         {"a": ["a.dat", "fa.mat", "na.mat"], "b": ["b.dat", "fb.mat", "nb.mat"]},
                         **{n: {"kind": "wifi-frame", "frame": 1} for n in ("fa.mat", "fb.mat", "na.mat", "nb.mat")})
    found = audit_content(path, ["a"], ["b"])
    c = found.counts
    assert c["blank"] == {"records_zero": 4, "frames_zero": 2, "frames_non_finite": 2}
    assert c["records"] == 1 and c["frames"] == 0
    # b.dat holds only the two blank records, a.dat the same plus a live one: no shared record, no shared file;
    # the blank frame files are byte-identical but not fingerprinted either
    assert found.passed and found.leaks == [], found.leaks
    # a control: the live record copied to the other side is found
    (tmp_path / "data" / "b.dat").write_bytes(live + blank_log)
    [leak] = audit_content(path, ["a"], ["b"]).leaks
    assert leak["records"] == 1 and leak["files"] == 0 and leak["frames"] == 0


def test_a_file_listed_by_two_recordings_is_shared_with_its_records(tmp_path):
    log = synthetic_log(9, seed=10)
    path = _toy_manifest(tmp_path, {"x.dat": log, "y.dat": synthetic_log(4, seed=11)},
                         {"a": ["x.dat"], "b": ["x.dat", "y.dat"]})
    [leak] = audit_content(path, ["a"], ["b"]).leaks
    assert (leak["files"], leak["records"], leak["train_records"], leak["test_records"]) == (1, 9, 9, 13)


def test_hash_collisions_never_become_a_leak(widar_tree, mmfi_tree, tmp_path, monkeypatch):
    """Every record (and every frame) given the same hash: only the byte comparison separates them."""
    real = fingerprints._fingerprint_bfee

    def colliding(b, offsets, lengths, shape, seed, out, blank):
        real(b, offsets, lengths, shape, seed, out, blank)
        out[:] = np.where(blank == 1, 0, 42)

    monkeypatch.setattr(fingerprints, "_fingerprint_bfee", colliding)
    monkeypatch.setattr(content_index, "hash_spans", lambda buf, offsets, lengths, seed=0: np.full(len(offsets), 42,
                                                                                         dtype=np.uint64))
    m = widar.ingest(widar_tree)
    found = audit_content(m, *_cross_room(m))
    assert found.passed and found.leaks == [] and found.within["train_pairs"] == 0
    assert found.confirmations["record_collisions"] == found.counts["records"] - 1
    mm = mmfi.ingest(mmfi_tree)
    found = audit_content(mm, *_s2(mm))
    assert found.passed and found.confirmations["frame_collisions"] == found.counts["frames"] - 1

    # and a real copy is still found, with the right count, among all those collisions
    root = _copy(widar_tree, tmp_path)
    (root / "CSI/20181211/user1/user1-2-5-5-9-r1.dat").write_bytes(
        _cut(root / "CSI/20181109/user1/user1-1-1-2-1-r1.dat", first=3))
    m = widar.ingest(root)
    [leak] = audit_content(m, *_cross_room(m)).leaks
    assert (leak["train"], leak["test"], leak["records"]) == (A, "20181211/user1-2-5-5-9", 3)


def test_only_the_byte_comparison_decides(tmp_path, monkeypatch):
    """XXH64 and the strong key both constant: every record and frame is a candidate of every other one, and
    the byte (array) comparison alone must still find exactly the planted copies."""
    monkeypatch.setattr(content_matches, "_strong_key", lambda data: b"")
    real = fingerprints._fingerprint_bfee

    def colliding(b, offsets, lengths, shape, seed, out, blank):
        real(b, offsets, lengths, shape, seed, out, blank)
        out[:] = 42

    monkeypatch.setattr(fingerprints, "_fingerprint_bfee", colliding)
    monkeypatch.setattr(content_index, "hash_spans", lambda buf, offsets, lengths, seed=0: np.zeros(len(offsets),
                                                                                          dtype=np.uint64))
    x, y, z = synthetic_log(20, seed=20), synthetic_log(20, seed=21), synthetic_log(20, seed=22)
    rng = np.random.default_rng(23)
    frames = [mat_v5_bytes({"CSIamp": rng.normal(size=(3, 4)), "CSIphase": rng.normal(size=(3, 4))})
              for _ in range(3)]
    files = {"x.dat": x, "y.dat": y, "z.dat": z[:_cut_at(z, 5)] + x[_cut_at(x, 17):],
             "f1.mat": frames[0], "f2.mat": frames[1], "f3.mat": mat_v5_bytes(read_mat_bytes(frames[0]),
                                                                              header_text="another writer")}
    path = _toy_manifest(tmp_path, files, {"a": ["x.dat", "f1.mat"], "b": ["y.dat", "f2.mat"],
                                           "c": ["z.dat", "f3.mat"]},
                         **{n: {"kind": "wifi-frame", "frame": 1} for n in ("f1.mat", "f2.mat", "f3.mat")})
    found = audit_content(path, ["a", "b"], ["c"])
    [leak] = found.leaks
    # z.dat ends with x's last 3 records; f3 holds f1's arrays in another file
    assert (leak["train"], leak["test"], leak["files"], leak["records"], leak["frames"]) == ("a", "c", 0, 3, 1)
    # 48 records (20 + 20 + 5 + 3) are 45 distinct contents: one run, 45 classes, 44 set aside as collisions
    assert found.confirmations["record_collisions"] == 44
    assert found.confirmations["frame_collisions"] == 1


def _cut_at(data: bytes, k: int) -> int:
    """Byte offset where record k of a log (no non-CSI records) starts."""
    return int(record_spans(data).offsets[k]) - 3


def test_recorded_sha256_is_used_and_a_forged_one_is_not_a_shared_file(tmp_path):
    x, y = synthetic_log(5, seed=12), synthetic_log(5, seed=13)
    same = "ab" * 32
    path = _toy_manifest(tmp_path, {"x.dat": x, "y.dat": y}, {"a": ["x.dat"], "b": ["y.dat"]},
                         **{"x.dat": {"sha256": same}, "y.dat": {"sha256": same}})
    found = audit_content(path, ["a"], ["b"])
    assert found.counts["digests_computed"] == 0  # both taken from the manifest
    assert found.passed and found.confirmations["file_collisions"] == 1
    assert found.confirmations["recorded_sha256_mismatches"] == 2  # checked once they claimed a match


def test_widespread_content_is_reported_per_recording(tmp_path, monkeypatch):
    monkeypatch.setattr(content_matches, "WIDESPREAD_RECORDINGS", 2)
    log = synthetic_log(4, seed=14)
    files = {f"{r}.dat": log for r in "abcd"}
    path = _toy_manifest(tmp_path, files, {r: [f"{r}.dat"] for r in "abcd"})
    found = audit_content(path, ["a", "b"], ["c", "d"])
    assert not found.passed and found.leaks == []  # 4 recordings > 2: not paired
    got = {(w["side"], w["recording"]): (w["files"], w["records"], w["other_side_recordings"], w["leak"])
           for w in found.widespread}
    assert got == {(s, r): (1, 4, 2, True) for s, rs in (("train", "ab"), ("test", "cd")) for r in rs}
    assert "more than 2 recordings" in found.detail()


def test_unparsed_frames_are_listed_and_keep_their_file_fingerprint(tmp_path):
    junk = b"MATLAB 5.0 MAT-file" + bytes(200)
    path = _toy_manifest(tmp_path, {"f1.mat": junk, "f2.mat": junk}, {"a": ["f1.mat"], "b": ["f2.mat"]},
                         **{n: {"kind": "wifi-frame", "frame": 1} for n in ("f1.mat", "f2.mat")})
    found = audit_content(path, ["a"], ["b"])
    assert found.counts["unparsed_frames"] == 2
    assert [p["path"] for p in found.problems] == ["f1.mat", "f2.mat"]
    [leak] = found.leaks
    assert leak["files"] == 1 and leak["frames"] == 0


@pytest.mark.parametrize("rel, error, match", [
    ("missing.dat", FormatError, "no such file"),
    ("../outside.dat", ValidationError, "inside the dataset root"),
    ("/etc/hostname", ValidationError, "inside the dataset root"),
])
def test_bad_file_entries_are_one_line_errors(tmp_path, rel, error, match):
    path = _toy_manifest(tmp_path, {"x.dat": synthetic_log(2, seed=1)}, {"a": ["x.dat"], "b": ["x.dat"]})
    doc = json.loads(path.read_text())
    doc["recordings"][1]["files"] = [{"path": rel, "bytes": 1}]
    path.write_text(json.dumps(doc))
    with pytest.raises(error, match=match):
        audit_content(path, ["a"], ["b"])


def test_arguments_are_validated(tmp_path):
    path = _toy_manifest(tmp_path, {"x.dat": synthetic_log(2, seed=1)}, {"a": ["x.dat"], "b": []})
    for bad in (0, -1, 1.5, True, 2**40):
        with pytest.raises(ValidationError, match="min_shared"):
            audit_content(path, ["a"], ["b"], min_shared=bad)
    with pytest.raises(ValidationError, match="not in the manifest"):
        audit_content(path, ["a"], ["zz"])
    with pytest.raises(ValidationError, match="not fingerprinted"):
        fingerprint(path, recordings=["a"]).audit(["a"], ["b"])
    assert DEFAULT_MIN_SHARED == 1


# ---------------------------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture
def leaky_widar(widar_tree, tmp_path):
    """A Widar tree with one recording copied under another user in room 3, its manifest and a cross-room split
    made without --content (the id audit passes)."""
    from typer.testing import CliRunner

    root = _copy(widar_tree, tmp_path)
    dst = root / "CSI/20181211/user9"
    dst.mkdir()
    for r in range(1, 7):
        shutil.copy(root / f"CSI/20181109/user1/user1-1-1-2-1-r{r}.dat", dst / f"user9-1-1-2-1-r{r}.dat")
    runner = CliRunner()
    manifest = tmp_path / "widar.json"
    assert runner.invoke(app, ["ingest", "widar", str(root), "-o", str(manifest)]).exit_code == 0
    split = tmp_path / "split.json"
    r = runner.invoke(app, ["split", str(manifest), "-p", "cross-room", "--test", "3", "-o", str(split)])
    assert r.exit_code == 0, r.output
    return manifest, split


def test_cli_audit_content_finds_the_copy_exit_1(runner, leaky_widar):
    manifest, split = leaky_widar
    assert runner.invoke(app, ["audit", str(split)]).exit_code == 0  # the ids alone cannot see it
    r = runner.invoke(app, ["audit", str(split), "--content"])
    assert r.exit_code == 1, r.output
    leak_lines = [line for line in r.stdout.splitlines() if line.startswith("LEAK")]
    assert len(leak_lines) == 1
    assert A in leak_lines[0] and "20181211/user9-1-1-2-1" in leak_lines[0] and "6 file(s)" in leak_lines[0]
    assert "FAIL content-disjoint" in r.stdout and "content on more than one recording" in r.stdout
    assert "audit FAILED" in r.stdout
    # in words, with what to do; the table (piped: not a terminal) keeps every id on one line
    assert "found across the two sides: 1 pair(s) of recordings holding byte-identical files" in r.stdout
    assert "to do: ingest again with --drop-duplicates" in r.stdout
    assert any(line.startswith("│ leak") and A in line and "20181211/user9-1-1-2-1" in line
               for line in r.stdout.splitlines())
    assert "error: leak found: content-disjoint failed" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = runner.invoke(app, ["audit", str(split), "--content", "--json"])
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert doc["passed"] is False
    assert [c["name"] for c in doc["checks"] if not c["passed"]] == ["content-disjoint"]
    [leak] = doc["content"]["leaks"]
    assert (leak["train"], leak["test"], leak["files"]) == (A, "20181211/user9-1-1-2-1", 6)


def test_cli_audit_content_on_a_plain_split_and_a_clean_one(runner, leaky_widar, tmp_path):
    manifest, _ = leaky_widar
    plain = tmp_path / "theirs.json"
    plain.write_text(json.dumps({"train": [A], "test": [{"id": B, "start": 0, "stop": 5}]}))
    r = runner.invoke(app, ["audit", str(plain), "--manifest", str(manifest), "--content", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["passed"] is True and doc["content"]["passed"] is True and doc["content"]["leaks"] == []
    assert doc["content"]["counts"]["recordings"] == 2 and doc["content"]["counts"]["files"] == 12


@pytest.mark.parametrize("args, match", [
    (["--min-shared", "0"], "min_shared must be an integer in 1.."),
    (["--min-shared", "3"], "--min-shared applies only with --content"),
])
def test_cli_content_bad_options_exit_2(runner, leaky_widar, tmp_path, args, match):
    manifest, split = leaky_widar
    extra = ["--content"] if args[1] == "0" else []
    r = runner.invoke(app, ["audit", str(split), *extra, *args])
    assert r.exit_code == 2 and match in r.stderr, r.output
    out = tmp_path / "s2.json"
    r = runner.invoke(app, ["split", str(manifest), "-p", "cross-room", "--test", "3", "-o", str(out), *extra, *args])
    assert r.exit_code == 2 and match in r.stderr and not out.exists(), r.output


def test_cli_split_content_writes_the_findings_and_exits_1(runner, leaky_widar, tmp_path):
    manifest, _ = leaky_widar
    out = tmp_path / "s.json"
    r = runner.invoke(app, ["split", str(manifest), "-p", "cross-room", "--test", "3", "--content", "-o", str(out)])
    assert r.exit_code == 1, r.output
    assert "LEAK train " + A in r.stdout and "content-disjoint" in r.stderr
    doc = json.loads(out.read_text())  # written anyway, with the evidence
    assert doc["audit"]["passed"] is False
    assert [c["name"] for c in doc["audit"]["checks"] if not c["passed"]] == ["content-disjoint"]
    assert doc["audit"]["content"]["leaks"][0]["test"] == "20181211/user9-1-1-2-1"
    # and `rfbench audit --content` of the file it wrote finds the same
    r = runner.invoke(app, ["audit", str(out), "--content", "--json"])
    assert r.exit_code == 1 and json.loads(r.stdout)["content"]["leaks"] == doc["audit"]["content"]["leaks"]
    # a clean split (room 2 held out: the copy and its original both train) passes and carries its findings
    out2 = tmp_path / "s2.json"
    r = runner.invoke(app, ["split", str(manifest), "-p", "cross-room", "--test", "2", "--content", "--json",
                            "-o", str(out2)])
    assert r.exit_code == 0, r.output
    [s] = json.loads(r.stdout)["splits"]
    assert s["audit"]["passed"] and s["audit"]["content"]["within"]["test_pairs"] == 0
    assert [p["files"] for p in s["audit"]["content"]["within"]["train"]] == [6]
    assert json.loads(out2.read_text())["audit"]["content"]["passed"] is True


def test_cli_split_content_leave_one_domain_out_judges_every_fold(runner, leaky_widar, tmp_path):
    manifest, _ = leaky_widar
    folder = tmp_path / "lodo"
    r = runner.invoke(app, ["split", str(manifest), "-p", "leave-one-domain-out", "--domain", "room", "--content",
                            "--json", "-o", str(folder)])
    assert r.exit_code == 1, r.output
    verdicts = {Path(s["path"]).name: s["audit"]["content"]["passed"] for s in json.loads(r.stdout)["splits"]}
    # the copy (room 3) and its original (room 1) are apart when room 1 or room 3 is held out
    assert verdicts == {"split-room-1.json": False, "split-room-2.json": True, "split-room-3.json": False}


# ---------------------------------------------------------------------------------------------------------
# The real corpora (skipped without ../shared/conformance)
# ---------------------------------------------------------------------------------------------------------


def _corpus(name: str) -> Path:
    from tests.conftest import conformance_path

    env = os.environ.get("RFBENCH_CONFORMANCE")
    if env and (Path(env) / name).is_dir():
        return Path(env) / name
    return conformance_path(name)


@pytest.mark.long
def test_wiar_holds_ten_logs_filed_under_both_distances(tmp_path):
    from benchmarks.bench_content import conformance_manifest

    root = _corpus("wiar") / "distance_factor_activity_data"
    doc = conformance_manifest("wiar", root)
    path = tmp_path / "wiar.json"
    path.write_text(json.dumps(doc))
    train = [r["id"] for r in doc["recordings"] if r["location"] == 1]
    test = [r["id"] for r in doc["recordings"] if r["location"] == 3]
    found = audit_content(path, train, test)
    assert not found.passed
    got = {(x["train"], x["test"]): (x["files"], x["records"], x["train_records"]) for x in found.leaks}
    # activity 12 (walk): samples 1-10 at 1 m are byte-identical to those at 3 m
    assert sorted(got) == [(f"1_alldata/csi_a12_{s}", f"3_alldata/csi_a12_{s}") for s in sorted(range(1, 11),
                                                                                               key=str)]
    for (a, _), (files, records, total) in got.items():
        assert files == 1 and records == total == _records(root / f"{a}.dat")
    assert found.within["train_pairs"] == found.within["test_pairs"] == 0
    assert found.counts["records"] == 80087 and found.counts["blank"]["records_zero"] == 0


@pytest.mark.long
def test_gesture5x6_shares_nothing_across_a_leave_one_user_out_split(tmp_path):
    from benchmarks.bench_content import conformance_manifest

    root = _corpus("gesture5x6")
    doc = conformance_manifest("gesture5x6", root, with_sha256=False)
    path = tmp_path / "g.json"
    path.write_text(json.dumps(doc))
    index = fingerprint(path)
    for user in ("kq", "mj", "zh", "zj", "zz"):
        found = index.audit([r["id"] for r in doc["recordings"] if r["subject"] != user],
                            [r["id"] for r in doc["recordings"] if r["subject"] == user])
        assert found.passed and found.leaks == [] and found.within["train_pairs"] == 0
    assert index.counts["records"] == 52364 and index.counts["digests_computed"] == 180


@pytest.mark.long
def test_small_batches_and_chunks_give_the_same_findings(monkeypatch):
    from benchmarks.bench_content import conformance_manifest

    root = _corpus("wiar") / "distance_factor_activity_data"
    doc = conformance_manifest("wiar", root, with_sha256=False)
    train = [r["id"] for r in doc["recordings"] if r["location"] == 1]
    test = [r["id"] for r in doc["recordings"] if r["location"] == 3]
    whole = audit_content(doc, train, test).to_dict()
    monkeypatch.setattr(content_matches, "CONFIRM_BYTES", 4096)  # a few hundred chunks, files re-read in many
    monkeypatch.setattr(content_index, "BATCH_BYTES", 100_000)  # most logs (~130 kB) larger than a batch
    assert audit_content(doc, train, test).to_dict() == whole


def test_score_redoes_the_content_check_of_a_split_made_with_one(runner, leaky_widar, tmp_path):
    """A split written with --content is re-checked for content by score (never believed): the leaky one is
    refused like any leak; the clean one is scored and its report shows the repeated content within a side."""
    manifest, _ = leaky_widar
    recordings = {r["id"]: r for r in json.loads(manifest.read_text())["recordings"]}
    for room, code in ((3, 1), (2, 0)):
        out = tmp_path / f"split-{room}.json"
        runner.invoke(app, ["split", str(manifest), "-p", "cross-room", "--test", str(room), "--content", "-o",
                            str(out)])
        test = json.loads(out.read_text())["test"]
        labels = np.array([recordings[t]["gesture"] for t in test])
        np.save(tmp_path / f"gt-{room}.npy", labels)
        np.save(tmp_path / f"groups-{room}.npy", np.array(test))
        r = runner.invoke(app, ["score", "--task", "gesture", "--pred", str(tmp_path / f"gt-{room}.npy"), "--gt",
                                str(tmp_path / f"gt-{room}.npy"), "--split", str(out), "--groups",
                                str(tmp_path / f"groups-{room}.npy"), "--bootstrap", "0", "--json"])
        assert r.exit_code == code, r.output
        if code:
            assert "content-disjoint failed" in r.stderr
        else:
            checks = {c["name"]: c for c in json.loads(r.stdout)["split"]["audit"]["checks"]}
            assert checks["content-disjoint"]["passed"] and "within one side" in checks["content-disjoint"]["detail"]


def test_the_progress_total_of_a_content_audit_is_what_it_then_reads(leaky_widar, tmp_path):
    # split --content and audit --content announce the total of their bar and then advance it: the total is the
    # fingerprinting's own count of the files it reads, so the bar ends exactly full.
    from rfbench.protocols.audit import audit_split
    from rfbench.protocols.split import write_splits

    manifest, split = leaky_widar
    for run in (lambda total, advance: audit_split(split, content=True, on_total=total, progress=advance),
                lambda total, advance: write_splits(manifest, "cross-room", tmp_path / "s.json", test=["3"],
                                                    content=True, on_total=total, progress=advance)):
        totals, steps = [], []
        run(totals.append, steps.append)
        assert len(totals) == 1 and totals[0] > 0 and sum(steps) == totals[0]


def _bvp_cross_location(runner, tmp_path):
    """A generated BVP tree split cross-location (test location 3): ``(run, tree, by id, split doc)``."""
    def run(*args):
        return runner.invoke(app, [str(a) for a in args])

    tree = tmp_path / "t"
    assert run("generate", "widar", tree, "--kind", "bvp", "--clean").exit_code == 0
    assert run("ingest", "widar", tree, "-o", tmp_path / "m.json").exit_code == 0
    assert run("split", tmp_path / "m.json", "-p", "cross-location", "--test", "3", "-o",
               tmp_path / "s.json").exit_code == 0
    m = json.loads((tmp_path / "m.json").read_text())
    return run, tree, {r["id"]: r for r in m["recordings"]}, json.loads((tmp_path / "s.json").read_text())


def _copy_is_a_leak(run, tree, tmp_path, train, test):
    """Ingested and split again with ``--content``: the test recording shares the train one's content."""
    assert run("ingest", "widar", tree, "-o", tmp_path / "m2.json").exit_code == 0
    result = run("split", tmp_path / "m2.json", "-p", "cross-location", "--test", "3", "--content", "-o",
                 tmp_path / "s2.json")
    assert result.exit_code == 1, result.output
    assert f"train {train['id']} and test {test['id']} share 1 frame(s)" in result.output


def test_a_bvp_profile_copied_under_another_header_is_a_leak(runner, tmp_path):
    """A BVP file is fingerprinted by its profile's values, not only by its bytes: a training file copied over a
    test file with four bytes of its MAT header text changed (another sha256, the same velocity_spectrum_ro) is
    content both sides share."""
    run, tree, by, s = _bvp_cross_location(runner, tmp_path)
    test, train = by[s["test"][0]], next(by[i] for i in s["train"] if by[i]["frames"] == by[s["test"][0]]["frames"])
    data = bytearray((tree / train["files"][0]["path"]).read_bytes())
    data[60:64] = b"0042"  # inside the 116-byte descriptive text: no value changes
    (tree / test["files"][0]["path"]).write_bytes(bytes(data))
    _copy_is_a_leak(run, tree, tmp_path, train, test)


@pytest.mark.parametrize("change", ["below-float32", "zero-step", "both"])
def test_a_bvp_profile_copied_as_the_same_model_input_is_a_leak(runner, tmp_path, change):
    """A training profile copied over a test file with every float64 value moved by one step (below float32's
    precision) or with an all-zero step appended gives the model the very row the training file gives, yet had a
    fingerprint of its own while the float64 values were hashed: the audit passed a test side of such copies.
    Profiles are now hashed as the model sees them (float32, trailing zero steps left out)."""
    import numpy as np

    from rfbench.datasets.bvp_mat import read_bvp
    from rfbench.datasets.synthetic_bvp import bvp_file_bytes

    run, tree, by, s = _bvp_cross_location(runner, tmp_path)
    test, train = by[s["test"][0]], by[s["train"][0]]
    value = read_bvp(tree / train["files"][0]["path"])
    if change in ("below-float32", "both"):
        value = np.nextafter(value, np.inf)
    if change in ("zero-step", "both"):
        value = np.concatenate([value, np.zeros((20, 20, 1))], axis=2)
    copy = tree / test["files"][0]["path"]
    copy.write_bytes(bvp_file_bytes(value))
    assert copy.read_bytes() != (tree / train["files"][0]["path"]).read_bytes()
    _copy_is_a_leak(run, tree, tmp_path, train, test)


@pytest.mark.parametrize("change", ["steps-appended", "later-step-changed"])
def test_a_bvp_profile_that_differs_only_past_its_first_step_is_a_leak(runner, tmp_path, change):
    """``windows`` cuts each row at ``t_max`` (the train side's longest, or ``--t-max``): a training profile copied
    to the test side with non-zero steps appended past it gives the model the training row, and passed
    ``split --content`` while the whole profile was hashed (found by an adversarial probe). Profiles are now
    matched on their head: the steps up to the first non-zero one."""
    import numpy as np

    from rfbench.datasets.bvp_mat import read_bvp
    from rfbench.datasets.synthetic_bvp import bvp_file_bytes

    run, tree, by, s = _bvp_cross_location(runner, tmp_path)
    test, train = by[s["test"][0]], max((by[i] for i in s["train"]), key=lambda r: r["frames"])
    value = read_bvp(tree / train["files"][0]["path"])
    if change == "steps-appended":
        value = np.concatenate([value, np.random.default_rng(1).random((20, 20, 3))], axis=2)
    else:
        value = value.copy()
        value[:, :, -1] += 0.25
    (tree / test["files"][0]["path"]).write_bytes(bvp_file_bytes(value))
    _copy_is_a_leak(run, tree, tmp_path, train, test)


def test_a_bvp_head_is_the_steps_up_to_the_first_non_zero_one():
    import numpy as np

    from rfbench.protocols.fingerprints import bvp_head, bvp_model_view

    rng = np.random.default_rng(2)
    v = np.concatenate([np.zeros((20, 20, 2)), rng.random((20, 20, 5))], axis=2)
    head = bvp_head(bvp_model_view(v))
    assert head.shape == (3, 20, 20) and not head[:2].any() and head[2].any()
    later = v.copy()
    later[:, :, 4] = 0.5
    assert np.array_equal(bvp_head(bvp_model_view(later)), head)  # a later step: the same head
    first = v.copy()
    first[7, 7, 2] += 0.5
    assert not np.array_equal(bvp_head(bvp_model_view(first)), head)  # the first non-zero step changed
    shifted = np.concatenate([np.zeros((20, 20, 1)), v], axis=2)  # a zero step put before: another row
    assert bvp_head(bvp_model_view(shifted)).shape == (4, 20, 20)
    assert bvp_head(bvp_model_view(np.zeros((20, 20, 4)))).shape == (0, 20, 20)  # all zero: blank


def test_a_bvp_profile_one_float32_step_away_is_other_content():
    """What is hashed is the model's input, exactly: a value moved by one float32 step, or a zero step put before
    the profile (which shifts the row), is another input."""
    import numpy as np

    from rfbench.protocols.fingerprints import _canonical, bvp_model_view

    rng = np.random.default_rng(0)
    v = rng.random((20, 20, 6)).astype(np.float32).astype(np.float64)
    same = [v, np.nextafter(v, np.inf), np.concatenate([v, np.zeros((20, 20, 3))], axis=2)]
    views = [_canonical(bvp_model_view(x)).tobytes() for x in same]
    assert views[0] == views[1] == views[2]
    w = v.copy()
    w[3, 4, 5] = np.nextafter(np.float32(w[3, 4, 5]), np.float32(2))
    shifted = np.concatenate([np.zeros((20, 20, 1)), v], axis=2)
    for other in (w, shifted):
        assert _canonical(bvp_model_view(other)).tobytes() != views[0]
    assert bvp_model_view(np.zeros((20, 20, 4))).shape == (0, 20, 20)  # all zero: blank, as before
    assert bvp_model_view(v[:, :, 0]).shape == (1, 20, 20)  # T = 1, stored as 20×20


# ---------------------------------------------------------------------------------------------------------
# Logs of other CSI hardware (ingest files): fingerprinted by their records' CSI values
# ---------------------------------------------------------------------------------------------------------

_HW_SUFFIX = {"esp32": "csv", "nexmon": "pcap", "atheros": "dat", "picoscenes": "csi"}


def _hw_corpus(root: Path, fmt: str, records: int = 30) -> None:
    from rfbench.io.writer import make_hardware_log
    from rfbench.io.writer_settings import HardwareLogSettings

    seed = 0
    for user in ("ann", "bob"):
        for rep in (1, 2):
            seed += 1
            make_hardware_log(root / f"{user}_push_{rep}.{_HW_SUFFIX[fmt]}",
                              HardwareLogSettings(format=fmt, seed=seed, records=records))


@pytest.mark.parametrize("fmt", sorted(_HW_SUFFIX))
def test_a_training_log_of_other_hardware_with_one_byte_changed_is_a_leak(runner, tmp_path, fmt):
    """A train-side ESP32 / nexmon / Atheros / PicoScenes log copied to the test side with its last byte changed
    is no longer the same file, but every record before the last holds the same CSI: the content check finds
    the records (it hashed such logs only as whole files before)."""
    from rfbench.io.parse_files import detect_format, read_hardware

    root = tmp_path / "corpus"
    _hw_corpus(root, fmt)
    data = bytearray((root / f"ann_push_1.{_HW_SUFFIX[fmt]}").read_bytes())
    data[-1] ^= 0x01
    (root / f"bob_push_3.{_HW_SUFFIX[fmt]}").write_bytes(bytes(data))
    n = read_hardware(bytes(data), detect_format(bytes(data))).n_records  # the copy still reads as a log
    assert n >= 29
    manifest = tmp_path / "m.json"
    r = runner.invoke(app, ["ingest", "files", str(root), "-t", "{user}_{gesture}_{rep}." + _HW_SUFFIX[fmt],
                            "--label", "gesture", "--subject", "user", "-o", str(manifest)])
    assert r.exit_code == 0, r.output
    ids = [rec["id"] for rec in json.loads(manifest.read_text())["recordings"]]
    train = [i for i in ids if "ann" in i]
    test = [i for i in ids if "bob" in i]
    audit = audit_content(manifest, train, test)
    assert not audit.passed
    [leak] = audit.leaks
    assert (leak["train"], leak["test"]) == (f"ann_push_1.{_HW_SUFFIX[fmt]}", f"bob_push_3.{_HW_SUFFIX[fmt]}")
    assert leak["files"] == 0 and leak["records"] >= 29
    assert leak["evidence"][0]["kind"] == "records" and leak["evidence"][0]["count"] == leak["records"]
    # the logs that are not copies share nothing: a clean split of the same corpus passes
    assert audit_content(manifest, train, [i for i in test if not i.startswith("bob_push_3")]).passed


def test_an_esp32_log_copied_with_only_its_null_bins_changed_is_a_leak(runner, tmp_path):
    """windows leave out a format's null bins (the ESP32 LLTF's DC and guards, nexmon's): a training log copied to
    the test side with only the DC pair of every line changed gave the model the training rows, and passed
    split --content while every bin was hashed (found by an adversarial probe, on the shared ESP32 capture)."""
    root = tmp_path / "corpus"
    _hw_corpus(root, "esp32")
    lines = (root / "ann_push_1.csv").read_text().splitlines()
    changed = [re.sub(r",\[-?\d+ -?\d+ ", ",[0 0 ", line) if line.startswith("CSI_DATA") else line for line in lines]
    assert changed != lines
    (root / "bob_push_3.csv").write_text("\n".join(changed) + "\n")
    manifest = tmp_path / "m.json"
    assert runner.invoke(app, ["ingest", "files", str(root), "-t", "{user}_{gesture}_{rep}.csv", "--label", "gesture",
                               "--subject", "user", "-o", str(manifest)]).exit_code == 0
    ids = [rec["id"] for rec in json.loads(manifest.read_text())["recordings"]]
    [leak] = audit_content(manifest, [i for i in ids if "ann" in i], [i for i in ids if "bob" in i]).leaks
    assert (leak["train"], leak["test"], leak["files"], leak["records"]) == ("ann_push_1.csv", "bob_push_3.csv", 0, 30)


@pytest.mark.parametrize("fmt", ["esp32", "nexmon"])
def test_a_record_s_null_bins_take_no_part_in_its_content(fmt):
    from rfbench.io import hwlog
    from rfbench.io.parse_files import read_hardware
    from rfbench.protocols.fingerprints import hardware_records

    data = hwlog.reader(fmt).synthesize(np.random.default_rng(5), 6)
    log = read_hardware(data, fmt)
    before = hardware_records(log)[0]
    subcarriers = np.asarray(log.subcarriers)
    dc = int(np.flatnonzero(subcarriers == 0)[0]) if subcarriers.ndim == 1 else None
    assert dc is not None
    log.csi[:, dc] = 7 + 3j  # the DC bin of every record
    assert [v.tobytes() for _, v in hardware_records(log)[0]] == [v.tobytes() for _, v in before]
    data_bin = int(np.flatnonzero(subcarriers == 10)[0])
    log.csi[:, data_bin] += 1  # a data bin: other content
    assert all(a.tobytes() != b.tobytes() for (_, a), (_, b) in zip(hardware_records(log)[0], before))


def test_a_log_of_other_hardware_is_hashed_from_the_bytes_read_for_its_records(runner, tmp_path, monkeypatch):
    """A manifest that records no sha256: the content pass hashes each log of other hardware from the bytes it
    reads for the records (it read each such log whole twice before: once to hash it, once for its records),
    and a byte copy of a log is still found as one shared file."""
    import rfbench.io.files as io_files

    root = tmp_path / "corpus"
    _hw_corpus(root, "esp32")
    shutil.copy(root / "ann_push_1.csv", root / "bob_push_3.csv")
    manifest = tmp_path / "m.json"
    r = runner.invoke(app, ["ingest", "files", str(root), "-t", "{user}_{gesture}_{rep}.csv", "--label", "gesture",
                            "--subject", "user", "-o", str(manifest)])
    assert r.exit_code == 0, r.output
    doc = json.loads(manifest.read_text())
    for rec in doc["recordings"]:
        for entry in rec["files"]:
            del entry["sha256"]
    manifest.write_text(json.dumps(doc))
    streamed = []
    real = io_files.sha256_file
    monkeypatch.setattr(io_files, "sha256_file", lambda path, *a, **k: (streamed.append(path), real(path, *a, **k))[1])
    ids = [rec["id"] for rec in doc["recordings"]]
    audit = audit_content(manifest, [i for i in ids if "ann" in i], [i for i in ids if "bob" in i])
    assert streamed == []
    [leak] = audit.leaks
    assert (leak["train"], leak["test"], leak["files"]) == ("ann_push_1.csv", "bob_push_3.csv", 1)


def test_a_template_corpus_s_logs_are_fingerprinted_by_their_records_whatever_their_names(tmp_path):
    """`ingest files` frames every file it lists as an Intel 5300 log (and windows reads it so), but the content
    check fingerprinted records only in files named .dat: logs named .bin, copied to another subject with every
    timestamp moved, passed `split --content` and a report on them verified MEASURED (found by an adversarial
    probe; the test fails on the code before)."""
    from rfbench.datasets.files import ingest as ingest_files

    root = tmp_path / "lab"
    for k, (user, gesture) in enumerate([(u, g) for u in ("ann", "zed") for g in (1, 2)]):
        (root / user).mkdir(parents=True, exist_ok=True)
        (root / user / f"{user}_{gesture}.bin").write_bytes(synthetic_log(20, seed=k + 1))
    (root / "bob").mkdir()
    for gesture in (1, 2):
        data = bytearray((root / "ann" / f"ann_{gesture}.bin").read_bytes())
        for off in record_spans(bytes(data)).offsets.tolist():  # timestamp_low moved: no byte-identical record
            data[off:off + 4] = ((int.from_bytes(data[off:off + 4], "little") + 12345) % 2**32).to_bytes(4, "little")
        (root / "bob" / f"bob_{gesture}.bin").write_bytes(bytes(data))
    m = ingest_files(root, "{user}/{user}_{gesture}.bin", roles={"label": "gesture", "subject": "user"})
    test = [r["id"] for r in m.recordings if r["subject"] == "bob"]
    found = audit_content(m, [r["id"] for r in m.recordings if r["id"] not in test], test)
    assert not found.passed
    assert sorted((leak["train"], leak["test"], leak["records"]) for leak in found.leaks) == [
        (f"ann/ann_{g}.bin", f"bob/bob_{g}.bin", _records(root / "bob" / f"bob_{g}.bin")) for g in (1, 2)]
