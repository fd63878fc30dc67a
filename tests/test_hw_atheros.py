"""The Atheros CSI Tool reader: kernels against their naive twins, hand-made records, layouts and byte
orders told from the bytes, bad records skipped and counted, and csiread 1.4.1 on the shared capture."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

import naive
from rfbench.errors import FormatError
from rfbench.io import atheros, hwlog
from tests.conftest import conformance_path


def _record(csi: bytes, *, tones=56, nr=1, nc=1, big=False, payload=b"", ts=7, csi_len=None) -> bytes:
    e = "big" if big else "little"
    csi_len = len(csi) if csi_len is None else csi_len
    status = ts.to_bytes(8, e) + csi_len.to_bytes(2, e) + (2437).to_bytes(2, e)
    status += bytes([0, 1, 143, 0, tones, nr, nc, 50, 40, 45, 38]) + len(payload).to_bytes(2, e)
    return (25 + csi_len + len(payload)).to_bytes(2, e) + status + csi + payload


def _pack(values) -> bytes:
    """10-bit two's complement values, least significant bit first (the inverse of fill_csi_matrix)."""
    bits = []
    for v in values:
        bits.extend(((v & 1023) >> j) & 1 for j in range(10))
    bits += [0] * (-len(bits) % 8)
    return bytes(sum(bits[i + j] << j for j in range(8)) for i in range(0, len(bits), 8))


def _compare(log, ref):
    assert log.n_records == len(ref["records"])
    assert dict(log.skipped) == ref["skipped"]
    for i, rec in enumerate(ref["records"]):
        t, r, c = rec["num_tones"], rec["nr"], rec["nc"]
        np.testing.assert_array_equal(log.csi[i, :t, :r, :c], rec["csi"])
        assert not log.csi[i, t:].any() and not log.csi[i, :, r:].any() and not log.csi[i, :, :, c:].any()
        for name in atheros.META_FIELDS:
            assert int(log.meta[name][i]) == rec[name], name
        assert int(log.meta["timestamp"][i]) == rec["timestamp"]


def test_hand_made_record():
    # 1x1, 56 tones: tone 0 is (imag 1, real -1) = bits 1000000000 1111111111 -> bytes 0x01, 0xfc, 0x0f;
    # tone 1 is (imag -512, real 511); the other tones are 0.
    values = [1, -1, -512, 511] + [0] * 108
    csi = _pack(values)
    assert csi[:3] == bytes([0x01, 0xFC, 0x0F]) and len(csi) == 140
    log = atheros.read(_record(csi))
    assert log.csi.shape == (1, 56, 1, 1)
    assert log.csi[0, 0, 0, 0] == complex(-1, 1) and log.csi[0, 1, 0, 0] == complex(511, -512)
    assert not log.csi[0, 2:].any()
    assert log.variant == "atheros" and log.bandwidth_mhz == 20
    assert log.subcarriers[0] == -28 and log.subcarriers[-1] == 28 and 0 not in log.subcarriers


def test_antenna_order_is_csi_fun_c():
    # fill_csi_matrix: for each tone, transmit antenna outermost, then receive antenna
    nr, nc = 3, 2
    values = []
    for k in range(56):
        for c in range(nc):
            for r in range(nr):
                values += [r * 10 + c, k]  # imag = 10 r + c, real = tone
    log = atheros.read(_record(_pack(values), nr=nr, nc=nc))
    for r in range(nr):
        for c in range(nc):
            np.testing.assert_array_equal(log.csi[0, :, r, c], np.arange(56) + 1j * (10 * r + c))


@pytest.mark.parametrize("endian", ["little", "big"])
@pytest.mark.parametrize("pull10", [False, True])
def test_layouts_and_orders_against_naive(endian, pull10):
    rng = np.random.default_rng(5)
    data = atheros.synthesize(rng, 4, endian=endian, pull10=pull10, nr=2, nc=3, tones=114)
    log = atheros.read(data)
    assert log.variant == ("atheros-pull10" if pull10 else "atheros")
    assert endian in log.decided["endian"] and log.bandwidth_mhz == 40
    _compare(log, naive.naive_read_atheros(data, int(pull10), endian == "big"))
    assert log.n_records == 4 and log.csi.shape == (4, 114, 2, 3)


def test_mixed_shapes_padded_against_naive():
    rng = np.random.default_rng(1)
    parts = [atheros.synthesize(rng, 1, nr=r, nc=c, tones=t, payload_len=p)
             for r, c, t, p in ((1, 1, 56, 0), (3, 3, 114, 5), (2, 1, 56, 1), (1, 2, 114, 0))]
    data = b"".join(parts)
    log = atheros.read(data)
    assert log.csi.shape == (4, 114, 3, 3)
    assert log.num_tones.tolist() == [56, 114, 56, 114] and log.n_rx.tolist() == [1, 3, 2, 1]
    assert log.subcarriers.shape == (4, 114) and log.bandwidth_mhz is None
    _compare(log, naive.naive_read_atheros(data, 0, False))


def test_random_bytes_against_naive():
    rng = np.random.default_rng(2)
    for _trial in range(6):
        data = bytearray(atheros.synthesize(rng, 5, nr=int(rng.integers(1, 4)), nc=int(rng.integers(1, 4))))
        for _ in range(3):  # damage: flipped bytes, garbage inserted, a cut
            data[int(rng.integers(27, len(data)))] ^= 0xFF
        at = int(rng.integers(27, len(data)))
        data[at:at] = rng.integers(0, 256, size=int(rng.integers(1, 40)), dtype=np.uint8).tobytes()
        data = bytes(data[: len(data) - int(rng.integers(0, 100))])
        log = atheros.read(data)
        _compare(log, naive.naive_read_atheros(data, 0, False))


def test_garbage_between_records_skipped_and_counted():
    rng = np.random.default_rng(3)
    a = atheros.synthesize(rng, 3, nr=1, nc=1)
    b = atheros.synthesize(rng, 2, nr=1, nc=1)
    log = atheros.read(a + b"\x13" * 50 + b)
    assert log.n_records == 5 and log.skipped == {"bad_header": 1}
    clean = atheros.read(a + b)
    np.testing.assert_array_equal(log.csi, clean.csi)


def test_truncated_tail_and_no_csi_record_counted():
    rng = np.random.default_rng(4)
    data = atheros.synthesize(rng, 3, nr=1, nc=1)
    log = atheros.read(data[:-10])
    assert log.n_records == 2 and log.skipped == {"truncated": 1}
    empty = _record(b"", payload=b"xy", csi_len=0)
    log = atheros.read(data + empty)
    assert log.n_records == 3 and log.skipped == {"no_csi": 1}


def test_wrong_csi_len_is_a_bad_header():
    good = _record(_pack([0] * 112))
    bad = _record(_pack([0] * 112) + b"\x00" * 10)  # csi_len 150 for 1x1x56: 10 bytes too many
    log = atheros.read(good + bad + good)
    assert log.n_records == 2 and log.skipped == {"bad_header": 1}


def test_refusals_are_one_line():
    with pytest.raises(FormatError, match="no plausible Atheros"):
        atheros.read(b"\x00" * 300)
    data = atheros.synthesize(np.random.default_rng(0), 2, endian="little")
    with pytest.raises(FormatError, match="big-endian"):
        atheros.read(data, endian="big")
    assert atheros.read(data, endian="little").decided["endian"] == "forced (little)"
    with pytest.raises(FormatError, match="endian"):
        atheros.read(data, endian="middle")


def test_sniff():
    rng = np.random.default_rng(0)
    assert atheros.sniff(atheros.synthesize(rng, 1, endian="big")[:4096])
    assert atheros.sniff(atheros.synthesize(rng, 1, pull10=True)[:100])
    assert not atheros.sniff(b"CSI_DATA,AP,aa:bb" + b"\x00" * 200)
    assert not atheros.sniff(b"")


def test_naive_twin_itself():
    # the twin's bit reader against the module's hand-made arithmetic: imag 1, real -1
    np.testing.assert_array_equal(naive.naive_atheros_csi(bytes([0x01, 0xFC, 0x0F]), 1, 1, 1), [[[complex(-1, 1)]]])


@pytest.mark.long
def test_shared_capture_matches_csiread():
    csiread = pytest.importorskip("csiread")
    path = str(conformance_path("hardware", "ath_csi_1.dat"))
    log = atheros.read(path)
    ref = csiread.Atheros(path, nrxnum=3, ntxnum=2, tones=56, if_report=False)
    ref.read(endian="little")
    assert log.n_records == ref.count == 401 and not log.skipped
    assert log.csi.shape == ref.csi.shape == (401, 56, 3, 2)
    # the same values, each tone's matrix filled tx outermost (csi_fun.c) where csiread fills rx outermost
    np.testing.assert_array_equal(log.csi.transpose(0, 1, 3, 2).reshape(401, 56, 6), ref.csi.reshape(401, 56, 6))
    names = {"rate": "Rate", "bandwidth": "bandWidth"}
    for name in ("timestamp", *atheros.META_FIELDS):
        theirs = getattr(ref, names.get(name, name))
        np.testing.assert_array_equal(log.meta[name].astype(np.int64), theirs.astype(np.int64))
    _compare(log, naive.naive_read_atheros(Path(path).read_bytes(), 0, False))


def _damaged(rng, data: bytes) -> bytes:
    """``data`` with random damage: flipped bytes, garbage inserted, a length field rewritten, a cut."""
    out = bytearray(data)
    for _ in range(int(rng.integers(0, 4))):
        out[int(rng.integers(0, len(out)))] = int(rng.integers(0, 256))
    if rng.random() < 0.5:
        at = int(rng.integers(0, len(out)))
        out[at:at] = rng.integers(0, 256, size=int(rng.integers(1, 60)), dtype=np.uint8).tobytes()
    if rng.random() < 0.5:
        at = int(rng.integers(0, max(1, len(out) - 2)))
        out[at:at + 2] = int(rng.integers(0, 65536)).to_bytes(2, "little")
    return bytes(out[: len(out) - int(rng.integers(0, 50))])


def test_every_truncation_keeps_the_whole_records():
    rng = np.random.default_rng(8)
    data = atheros.synthesize(rng, 3, nr=1, nc=1, payload_len=3)
    full = atheros.read(data)
    size = len(data) // 3
    for cut in range(atheros.HEADER_BYTES, len(data) + 1):
        log = atheros.read(data[:cut])
        assert log.n_records == cut // size
        if log.n_records:
            np.testing.assert_array_equal(log.csi, full.csi[: log.n_records])
        assert log.skipped == ({} if cut % size == 0 else {"truncated": 1})


def test_no_allocation_sized_by_a_header():
    import tracemalloc

    # one plausible record, then a header claiming the largest csi_len and payload_len the fields hold
    good = _record(_pack([1] * 112))
    liar = bytearray(good)
    liar[0:2] = (0xFFFF).to_bytes(2, "little")
    liar[10:12] = (0xFFFF).to_bytes(2, "little")
    data = good + bytes(liar)
    atheros.read(data)  # kernels loaded or compiled outside the measurement (the test alone in a process)
    tracemalloc.start()
    log = atheros.read(data)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert log.n_records == 1 and log.skipped == {"bad_header": 1}
    assert peak < 64 * 1024, peak  # the output and per-record arrays are sized by the 334 bytes, not 65535


def test_small_fuzz_against_naive():
    rng = np.random.default_rng(9)
    for _ in range(25):
        data = _damaged(rng, atheros.synthesize(rng, 3, nr=int(rng.integers(1, 4)), nc=int(rng.integers(1, 4)),
                                                endian=str(rng.choice(["little", "big"]))))
        try:
            log = atheros.read(data)
        except FormatError:
            continue  # the first header was damaged: refused, one line
        start, big = int(log.variant == "atheros-pull10"), "big-endian" in log.decided["endian"]
        _compare(log, naive.naive_read_atheros(data, start, big))


@pytest.mark.long
@pytest.mark.parametrize("two_threads", [False, True])
def test_large_fuzz_against_naive(monkeypatch, two_threads):
    if two_threads:  # every log split in two parts on two threads, damaged ones included
        monkeypatch.setattr(atheros, "SPLIT_MIN_BYTES", 0)
    rng = np.random.default_rng(10)
    for _ in range(400):
        data = _damaged(rng, atheros.synthesize(rng, int(rng.integers(1, 8)), nr=int(rng.integers(1, 4)),
                                                nc=int(rng.integers(1, 4)), tones=int(rng.choice([56, 114])),
                                                endian=str(rng.choice(["little", "big"])),
                                                pull10=bool(rng.random() < .3), payload_len=int(rng.integers(0, 40))))
        try:
            log = atheros.read(data)
        except FormatError:
            continue
        start, big = int(log.variant == "atheros-pull10"), "big-endian" in log.decided["endian"]
        _compare(log, naive.naive_read_atheros(data, start, big))


def test_two_thread_decode_is_the_one_thread_one(monkeypatch, tmp_path):
    """A log decoded in two halves on two threads gives the same bytes as one thread, mixed shapes included;
    the second thread is not taken when another read holds it."""
    rng = np.random.default_rng(26)
    data = b"".join(atheros.synthesize(rng, n, nr=nr, nc=nc, tones=t)
                    for n, nr, nc, t in ((7, 3, 2, 56), (4, 1, 1, 114), (6, 2, 3, 56)))
    path = tmp_path / "log.dat"
    path.write_bytes(data)
    monkeypatch.setattr(atheros, "SPLIT_MIN_BYTES", 1 << 62)
    one = atheros.read(path).csi.copy()
    monkeypatch.setattr(atheros, "SPLIT_MIN_BYTES", 0)
    two = atheros.read(path).csi
    assert one.tobytes() == two.tobytes() and one.shape == two.shape
    assert hwlog._SECOND_THREAD.acquire(blocking=False)
    try:
        assert atheros.read(path).csi.tobytes() == one.tobytes()
    finally:
        hwlog._SECOND_THREAD.release()


def test_an_error_on_the_second_thread_reaches_the_caller(monkeypatch, tmp_path):
    """A decode that fails on the second thread fails the read: never an array whose second half was never
    written."""
    rng = np.random.default_rng(27)
    path = tmp_path / "log.dat"
    path.write_bytes(atheros.synthesize(rng, 8, nr=3, nc=2, tones=56))
    monkeypatch.setattr(atheros, "SPLIT_MIN_BYTES", 0)
    real = atheros._unpack

    def flaky(*args):
        if threading.current_thread() is not threading.main_thread():
            raise MemoryError("second half")
        real(*args)

    monkeypatch.setattr(atheros, "_unpack", flaky)
    with pytest.raises(MemoryError, match="second half"):
        atheros.read(path)
