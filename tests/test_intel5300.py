"""The bfee parser against the reference MATLAB outputs, csiread, the naive twin, and damaged files."""

from __future__ import annotations

import numpy as np
import pytest

import naive
from rfbench.io import intel5300
from rfbench.io.intel5300 import HEADER_FIELDS, SKIP_REASONS, calc_len, read
from rfbench.io.writer import MPDU_CODE, LogBuilder, encode_log, encode_record, sample_0x5_like, synthetic_log
from tests.conftest import conformance_path

REAL_LOGS = ["example.dat", "log.all_csi.6.7.6", "los_100.dat", "los_40.dat", "los_5.dat", "sample_0x1_ap.dat",
             "sample_0x5_64_3000.dat"]
MATLAB_NAMES = {"nrx": "Nrx", "ntx": "Ntx"}


def assert_matches_naive(log: intel5300.Intel5300Log, data: bytes) -> None:
    """Every output of the kernel equals the naive twin's."""
    ref = naive.naive_read_bfee(data)
    assert dict(log.skipped) == ref["skipped"]
    assert dict(log.non_csi) == ref["non_csi"]
    assert log.n_records == len(ref["records"])
    for name in HEADER_FIELDS:
        assert getattr(log, name).tolist() == [r[name] for r in ref["records"]], name
    assert log.perm.tolist() == [r["perm"] for r in ref["records"]]
    assert log.perm_applied.tolist() == [r["perm_applied"] for r in ref["records"]]
    expected = naive.naive_padded_csi(ref["records"])
    assert log.csi.shape == expected.shape
    np.testing.assert_array_equal(log.csi, expected)


def assert_counts_match(counts: intel5300.RecordCounts, log: intel5300.Intel5300Log) -> None:
    """``count_records`` reports exactly the counts ``read`` does."""
    assert counts.n_records == log.n_records
    assert dict(counts.skipped) == dict(log.skipped)
    assert dict(counts.non_csi) == dict(log.non_csi)
    assert counts.n_bytes == log.n_bytes
    assert (counts.max_nrx, counts.max_ntx) == ((int(log.nrx.max()), int(log.ntx.max())) if log.n_records else (0, 0))


def random_record(rng, nrx, ntx):
    return rng.integers(-128, 128, size=(30, nrx, ntx, 2)).astype(np.int8)


# ---------------------------------------------------------------------------------------------------------
# conformance with the reference tools
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.long
@pytest.mark.parametrize("name", ["example.dat", "log.all_csi.6.7.6"])
def test_raw_csi_and_headers_equal_matlab_exactly(name):
    ref = np.load(conformance_path("intel5300", name + ".matlab.npz"))
    log = read(conformance_path("intel5300", name))
    n, _, r, t = log.shape
    assert n == ref["csi"].shape[0]
    padded = np.zeros(ref["csi"].shape, np.complex128)
    padded[:, :, :r, :t] = log.csi
    np.testing.assert_array_equal(padded, ref["csi"])
    for field in ("timestamp_low", "bfee_count", "nrx", "ntx", "rssi_a", "rssi_b", "rssi_c", "noise", "agc", "rate"):
        np.testing.assert_array_equal(getattr(log, field).astype(np.int64), ref[MATLAB_NAMES.get(field, field)],
                                      err_msg=field)
    np.testing.assert_array_equal(log.perm.astype(np.int64) + 1, ref["perm"])  # MATLAB's perm is 1-based


@pytest.mark.long
@pytest.mark.parametrize("name", ["example.dat", "log.all_csi.6.7.6"])
def test_scaled_csi_within_a_few_ulp_of_matlab(name):
    ref = np.load(conformance_path("intel5300", name + ".matlab.npz"))["csi_scaled"]
    log = read(conformance_path("intel5300", name))
    scaled = log.scaled_csi()
    assert scaled.dtype == np.complex128
    _, _, r, t = log.shape
    got = np.zeros(ref.shape, np.complex128)
    got[:, :, :r, :t] = scaled
    # MATLAB's libm differs from glibc by 1-2 ulp on some records: allow 4 ulp of the reference value.
    for part in ("real", "imag"):
        a, b = getattr(got, part), getattr(ref, part)
        np.testing.assert_array_less(np.abs(a - b), 4 * np.spacing(np.abs(b)) + 1e-300)


@pytest.mark.long
def test_mixed_shapes_are_padded_with_per_record_shape():
    log = read(conformance_path("intel5300", "log.all_csi.6.7.6"))
    assert log.shape == (29, 30, 3, 3)
    assert sorted(set(zip(log.nrx.tolist(), log.ntx.tolist()))) == [(3, 1), (3, 2), (3, 3)]
    for i in np.flatnonzero(log.ntx < 3):
        assert not log.csi[i, :, :, log.ntx[i]:].any()  # padding is zero
        assert log.csi[i, :, :, : log.ntx[i]].any()


@pytest.mark.long
@pytest.mark.parametrize("name", REAL_LOGS)
def test_kernel_equals_naive_twin_on_real_logs(name):
    data = conformance_path("intel5300", name).read_bytes()
    assert_counts_match(intel5300.count_records(conformance_path("intel5300", name)), read(data))
    assert_matches_naive(read(data), data)


@pytest.mark.long
@pytest.mark.parametrize("name", REAL_LOGS)
def test_agrees_with_csiread_except_where_the_perm_policy_differs(name):
    csiread = pytest.importorskip("csiread")
    path = conformance_path("intel5300", name)
    log = read(path)
    peer = csiread.Intel(str(path), nrxnum=log.shape[2], ntxnum=log.shape[3], if_report=False)
    peer.read()
    assert peer.count == log.n_records
    for field in ("timestamp_low", "bfee_count", "rssi_a", "rssi_b", "rssi_c", "noise", "agc", "rate"):
        np.testing.assert_array_equal(np.asarray(getattr(peer, field)).astype(np.int64),
                                      getattr(log, field).astype(np.int64), err_msg=field)
    np.testing.assert_array_equal(np.asarray(peer.Nrx), log.nrx)
    np.testing.assert_array_equal(np.asarray(peer.Ntx), log.ntx)
    np.testing.assert_array_equal(np.asarray(peer.perm), log.perm)  # both 0-based
    differs = [i for i in range(log.n_records) if not np.array_equal(peer.csi[i], log.csi[i])]
    # csiread permutes every record; the reference (and rfbench) only where Nrx > 1 and sum(perm) matches.
    # Where they disagree, the record is Nrx = 2 with a non-identity perm and csiread moved file row k
    # to row perm[k] — row 2 here, outside the record's own two rows.
    expected = [i for i in range(log.n_records)
                if log.nrx[i] == 2 and tuple(log.perm[i, :2]) != (0, 1)]
    assert differs == expected
    if name == "los_100.dat":
        assert differs == list(range(75, 83))  # the 8 records the conformance README names
    for i in differs:
        assert not log.perm_applied[i]
        for k in range(log.nrx[i]):
            np.testing.assert_array_equal(peer.csi[i][:, log.perm[i, k]], log.csi[i][:, k])


@pytest.mark.long
def test_invalid_perm_is_counted_on_los_100():
    log = read(conformance_path("intel5300", "los_100.dat"))
    # the 18 Nrx = 2 records: the reference's rule sum(perm) == 3 never holds for them
    assert log.skipped["invalid_perm"] == 18 == int((log.nrx == 2).sum())
    assert log.n_skipped == 0


@pytest.mark.long
def test_sample_0x5_summary():
    log = read(conformance_path("intel5300", "sample_0x5_64_3000.dat"))
    assert log.n_records == 2998
    assert log.non_csi == {MPDU_CODE: 2998}
    assert log.shape == (2998, 30, 3, 1)
    s = log.summary()
    assert s["shapes"] == {"3x1": 2998}
    assert s["non_csi"] == {"0xC1": 2998}
    assert 990 < s["packet_rate_hz"] < 1010


# ---------------------------------------------------------------------------------------------------------
# encoder -> parser identity
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("nrx", [1, 2, 3])
@pytest.mark.parametrize("ntx", [1, 2, 3])
def test_encoder_parser_identity_every_shape(nrx, ntx):
    rng = np.random.default_rng(100 * nrx + ntx)
    n = 25
    pairs = rng.integers(-128, 128, size=(n, 30, nrx, ntx, 2)).astype(np.int8)
    headers = {
        "timestamp_low": rng.integers(0, 1 << 32, n, dtype=np.uint64),
        "bfee_count": rng.integers(0, 1 << 16, n),
        "rssi_a": rng.integers(0, 256, n),
        "rssi_b": rng.integers(0, 256, n),
        "rssi_c": rng.integers(0, 256, n),
        "noise": rng.integers(-128, 128, n),
        "agc": rng.integers(0, 256, n),
        "antenna_sel": rng.integers(0, 256, n),
        "rate": rng.integers(0, 1 << 16, n),
    }
    log = read(encode_log(pairs, headers), raw_int8=True)
    np.testing.assert_array_equal(log.csi_int8, pairs)
    for name, values in headers.items():
        np.testing.assert_array_equal(getattr(log, name).astype(np.int64), values.astype(np.int64), err_msg=name)
    assert (log.nrx == nrx).all() and (log.ntx == ntx).all()
    complex_log = read(encode_log(pairs, headers))
    np.testing.assert_array_equal(complex_log.csi, pairs[..., 0] + 1j * pairs[..., 1].astype(np.float32))


def test_encoder_parser_identity_mixed_shapes_in_one_file():
    rng = np.random.default_rng(7)
    shapes = [(1, 1), (3, 3), (2, 1), (3, 2), (1, 3), (2, 2), (3, 1), (1, 2), (2, 3)] * 3
    n = len(shapes)
    pairs = np.zeros((n, 30, 3, 3, 2), np.int8)
    for i, (r, t) in enumerate(shapes):
        pairs[i, :, :r, :t] = random_record(rng, r, t)
    sel = rng.integers(0, 64, n)
    data = encode_log(pairs, {"antenna_sel": sel}, nrx=[s[0] for s in shapes], ntx=[s[1] for s in shapes])
    log = read(data, raw_int8=True)
    np.testing.assert_array_equal(log.csi_int8, pairs)
    assert log.nrx.tolist() == [s[0] for s in shapes]
    assert_matches_naive(read(data), data)


def test_thread_count_does_not_change_the_result():
    # an explicit thread count splits the records into that many ranges, whatever the file's size
    data = synthetic_log(3000, nrx=3, ntx=1, seed=11, non_csi_every=7)
    one = read(data, threads=1)
    for threads in (2, 3, None):
        other = read(data, threads=threads)
        np.testing.assert_array_equal(other.csi, one.csi)
        np.testing.assert_array_equal(other.perm_applied, one.perm_applied)
    np.testing.assert_array_equal(read(data, threads=2, raw_int8=True).csi_int8,
                                  read(data, threads=1, raw_int8=True).csi_int8)


def test_raw_int8_and_complex_agree():
    data = synthetic_log(50, nrx=3, ntx=2, seed=3)
    a, b = read(data), read(data, raw_int8=True)
    assert a.csi.dtype == np.complex64 and b.csi_int8.dtype == np.int8 and b.csi is None
    np.testing.assert_array_equal(b.complex_csi(), a.csi)


def test_sample_0x5_like_mimics_the_capture():
    data = sample_0x5_like(0)
    assert len(data) == 1_037_308  # 2998 x (215-byte bfee + 131-byte 0xC1), the real file's size
    log = read(data)
    assert log.n_records == 2998 and log.non_csi == {MPDU_CODE: 2998} and log.shape == (2998, 30, 3, 1)
    assert set(log.antenna_sel.tolist()) == {0b100100, 0b011000} and (log.noise == -127).all()
    assert 56 <= log.agc.min() and log.agc.max() <= 63 and (log.rate == 0x101).all()
    assert 990 < log.summary()["packet_rate_hz"] < 1010
    values = np.abs(np.concatenate([log.csi.real.ravel(), log.csi.imag.ravel()]))
    # the capture's |value| quartiles, 90th and 99th percentiles are 1, 3, 11, 27, 40
    np.testing.assert_allclose(np.quantile(values, [0.25, 0.5, 0.75, 0.9, 0.99]), [1, 3, 11, 27, 40], atol=4.5)
    assert sample_0x5_like(0) == data != sample_0x5_like(1)


def test_synthetic_log_mimics_sample_0x5_layout():
    data = synthetic_log(2998, non_csi_every=1)
    assert len(data) == 1_037_308  # 2998 x (215-byte bfee + 131-byte 0xC1), the real file's size
    log = read(data)
    assert log.n_records == 2998 and log.non_csi == {MPDU_CODE: 2998}
    assert synthetic_log(10, seed=1) == synthetic_log(10, seed=1) != synthetic_log(10, seed=2)


# ---------------------------------------------------------------------------------------------------------
# damage: each bad record is skipped and counted; good records around it survive
# ---------------------------------------------------------------------------------------------------------


def good(seed=0, nrx=3, ntx=1):
    return random_record(np.random.default_rng(seed), nrx, ntx)


@pytest.mark.parametrize(
    "bad, reason",
    [
        (dict(len_field=5), "bad_len"),
        (dict(len_field=calc_len(3, 1) + 1), "bad_len"),
        (dict(nrx_field=0), "bad_shape"),
        (dict(nrx_field=7), "bad_shape"),
        (dict(ntx_field=0), "bad_shape"),
        (dict(ntx_field=7), "bad_shape"),
        (dict(body_cut=19, field_len=20), "short_body"),  # header incomplete
        (dict(body_cut=100, field_len=101), "short_body"),  # payload incomplete, framing intact
    ],
)
def test_bad_record_between_good_ones_is_skipped_and_counted(bad, reason):
    data = (LogBuilder().bfee(good(1), timestamp_low=1).bfee(good(2), timestamp_low=2, **bad)
            .bfee(good(3), timestamp_low=3).to_bytes())
    log = read(data)
    assert log.timestamp_low.tolist() == [1, 3]
    expected = {r: 0 for r in SKIP_REASONS} | {"invalid_perm": 0, reason: 1}
    assert dict(log.skipped) == expected
    assert_matches_naive(log, data)


def test_field_len_zero_advances_two_bytes():
    # read_bf_file.m seeks field_len - 1 = -1 bytes after the code byte: the next record starts 2 bytes on.
    data = LogBuilder().bfee(good(1), timestamp_low=1).raw(b"\x00\x00").bfee(good(2), timestamp_low=2).to_bytes()
    log = read(data)
    assert log.timestamp_low.tolist() == [1, 2]
    assert log.skipped["zero_field_len"] == 1


def test_field_len_one_is_an_empty_record():
    data = LogBuilder().bfee(good(1)).record(0xBB, b"").record(0x42, b"").bfee(good(2)).to_bytes()
    log = read(data)
    assert log.n_records == 2
    assert log.skipped["short_body"] == 1  # a bfee with no body
    assert log.non_csi == {0x42: 1}


def test_field_len_65535_past_the_end_is_truncated():
    data = LogBuilder().bfee(good(1), timestamp_low=9).raw(b"\xff\xff\xbb" + bytes(50)).to_bytes()
    log = read(data)
    assert log.timestamp_low.tolist() == [9]
    assert log.skipped["truncated"] == 1


@pytest.mark.parametrize("cut", [1, 2, 3, 100, 214])
def test_truncated_tail_keeps_earlier_records(cut):
    data = LogBuilder().bfee(good(1), timestamp_low=1).bfee(good(2), timestamp_low=2).to_bytes(truncate=cut)
    log = read(data)
    assert log.timestamp_low.tolist() == [1]
    assert log.skipped["truncated"] == 1
    assert_matches_naive(log, data)


def test_unknown_codes_are_counted_not_parsed():
    data = (LogBuilder().record(0x00, b"abc").bfee(good(1)).record(0xC1, bytes(128)).record(0xFF, b"")
            .record(0xC1, bytes(3)).to_bytes())
    log = read(data)
    assert log.n_records == 1
    assert log.non_csi == {0x00: 1, 0xC1: 2, 0xFF: 1}


def test_lone_trailing_byte_is_truncated():
    data = LogBuilder().bfee(good(1)).raw(b"\x07").to_bytes()
    log = read(data)
    assert log.n_records == 1 and log.skipped["truncated"] == 1


def test_invalid_perm_policy_cases():
    # antenna_sel -> 0-based perm (p0, p1, p2) = (sel & 3, sel >> 2 & 3, sel >> 4 & 3)
    identity, swap01 = 0b100100, 0b100001  # (0,1,2), (1,0,2)
    all_twos = 0b010101  # (1,1,1) 0-based = MATLAB (2,2,2): sum 6 passes for Nrx = 3, not a permutation
    ones_and_four = 0b110000  # (0,0,3) = MATLAB (1,1,4): sum 6, out of range
    four_one_one = 0b000011  # (3,0,0) 0-based = MATLAB (4,1,1): sum 6, out of range first
    matlab_111 = 0b000000  # MATLAB (1,1,1): sum 3 passes the rule for Nrx = 2, not a permutation
    builder = LogBuilder()
    for sel, nrx in [(identity, 3), (swap01, 3), (all_twos, 3), (ones_and_four, 3), (four_one_one, 3),
                     (matlab_111, 2), (swap01, 2), (swap01, 1)]:
        builder.bfee(good(sel, nrx, 1), antenna_sel=sel, permuted=False)
    data = builder.to_bytes()
    log = read(data)
    assert log.perm_applied.tolist() == [True, True, False, False, False, False, False, False]
    assert log.skipped["invalid_perm"] == 5  # every Nrx > 1 record left unpermuted; Nrx = 1 needs none
    # the swapped record: file row 0 went to row 1 and file row 1 to row 0
    raw = good(swap01, 3, 1)
    np.testing.assert_array_equal(log.csi[1, :, 1, 0], raw[:, 0, 0, 0] + 1j * raw[:, 0, 0, 1].astype(np.float32))
    np.testing.assert_array_equal(log.csi[1, :, 0, 0], raw[:, 1, 0, 0] + 1j * raw[:, 1, 0, 1].astype(np.float32))
    assert_matches_naive(log, data)


def test_empty_and_garbage_inputs_give_empty_logs():
    assert read(b"").n_records == 0
    text = read(b"This is not a CSI log at all, just text.\n")
    assert text.n_records == 0 and text.n_skipped >= 1
    assert read(np.zeros(1000, np.uint8)).skipped["zero_field_len"] == 500


def test_read_path_errors(tmp_path):
    from rfbench.errors import FormatError

    with pytest.raises(FormatError, match="no such file"):
        read(tmp_path / "missing.dat")
    with pytest.raises(FormatError, match="directory"):
        read(tmp_path)
    with pytest.raises(TypeError):
        read(12345)


def test_memory_stays_within_output_plus_small_multiple_of_file(tmp_path):
    import tracemalloc

    data = synthetic_log(500, nrx=3, ntx=3, seed=1)
    # a hostile tail: lengths that claim far more than the file holds
    hostile = data + encode_record(0xBB, bytes(30), field_len=65535) + b"\xff"
    path = tmp_path / "x.dat"
    path.write_bytes(hostile)
    read(path)  # compile outside the measurement
    tracemalloc.start()
    log = read(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    output = log.csi.nbytes + sum(a.nbytes for a in log.headers().values())
    assert peak <= output + 3 * len(hostile) + 64_000, (peak, output, len(hostile))


# ---------------------------------------------------------------------------------------------------------
# counting without unpacking (what ingest uses)
# ---------------------------------------------------------------------------------------------------------


def _damaged_logs() -> list[bytes]:
    """Logs with every kind of bad record, of different sizes and shapes."""
    logs = [synthetic_log(40, nrx=3, ntx=1, seed=1, non_csi_every=3), synthetic_log(7, nrx=2, ntx=3, seed=2), b""]
    for cut in (1, 50, 300):
        logs.append(synthetic_log(5, nrx=1, ntx=2, seed=3)[:-cut])
    logs.append(LogBuilder().bfee(good(5)).bfee(good(6), len_field=5).raw(b"\x00\x00").bfee(good(7), nrx_field=7)
                .record(0xC1, bytes(9)).bfee(good(8, 2, 2)).bfee(good(9), body_cut=100, field_len=101)
                .bfee(good(10, 2, 1), antenna_sel=0b101010).to_bytes(truncate=30))
    return logs


def test_count_files_equals_read_file_by_file_with_errors_in_place(tmp_path):
    paths = []
    for k, data in enumerate(_damaged_logs()):
        p = tmp_path / f"log{k}.dat"
        p.write_bytes(data)
        paths.append(p)
    paths.insert(2, tmp_path / "missing.dat")
    paths.insert(5, tmp_path)  # a directory
    big = tmp_path / "big.dat"
    big.write_bytes(sample_0x5_like(0) * 3)  # larger than the reader's first buffer: it grows mid-batch
    paths.insert(4, big)
    for _ in range(2):  # the second call reuses the thread's buffers: nothing from the first may leak in
        results = intel5300.count_files(paths)
        assert len(results) == len(paths)
        for path, result in zip(paths, results):
            if path.name == "missing.dat":
                assert isinstance(result, intel5300.FormatError) and "no such file" in str(result)
            elif path.is_dir():
                assert isinstance(result, intel5300.FormatError) and "is a directory" in str(result)
            else:
                assert_counts_match(result, read(path))
                assert result.n_bytes == path.stat().st_size
        paths.reverse()


def test_count_records_matches_the_naive_twin_and_raises_for_paths(tmp_path):
    for data in _damaged_logs():
        ref = naive.naive_read_bfee(data)
        counts = intel5300.count_records(data)
        assert counts.n_records == len(ref["records"])
        assert dict(counts.skipped) == ref["skipped"] and dict(counts.non_csi) == ref["non_csi"]
    with pytest.raises(intel5300.FormatError, match="no such file"):
        intel5300.count_records(tmp_path / "nope.dat")


def test_counting_threads_do_not_mix_their_buffers(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    paths = []
    for k, data in enumerate(_damaged_logs() * 4):
        p = tmp_path / f"log{k}.dat"
        p.write_bytes(data)
        paths.append(p)
    expected = [intel5300.count_records(p) for p in paths]
    batches = [paths[i::3] for i in range(3)]
    with ThreadPoolExecutor(3) as pool:
        for _ in range(3):
            for batch, got in zip(batches, pool.map(intel5300.count_files, batches)):
                assert got == [expected[paths.index(p)] for p in batch]


def test_a_file_larger_than_its_stat_size_is_read_whole(tmp_path, monkeypatch):
    """A log that grows between stat and read (a capture still being written) is read to its end."""
    data = synthetic_log(50, nrx=3, ntx=2, seed=11)
    path = tmp_path / "growing.dat"
    path.write_bytes(data)
    real_fstat = intel5300.os.fstat

    class Small:
        def __init__(self, st):
            self.st_size = 7  # what stat said before the capture appended the rest

    monkeypatch.setattr(intel5300.os, "fstat", lambda fd: Small(real_fstat(fd)))
    log = read(path)
    assert log.n_bytes == len(data)
    assert_matches_naive(log, data)
    counts = intel5300.count_files([path, path])
    monkeypatch.undo()
    assert counts == [intel5300.count_records(data)] * 2
