"""The ESP32-CSI-Tool reader: kernels against the naive twin, hand-made lines, the bracketed list governing,
bad lines skipped and counted, and csiread 1.4.1 on the shared capture."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import naive
from rfbench.errors import FormatError
from rfbench.io import esp32
from tests.conftest import conformance_path

HEAD = "CSI_DATA,AP,3C:71:BF:6D:2A:78,-73,11,1,0,1,1,1,0,0,0,0,-93,0,1,1,80272146,0,101,0,0,80.363225,{n},[{v}]"


def _line(values, n=None, tail=" ") -> str:
    return HEAD.format(n=len(values) if n is None else n, v=" ".join(str(v) for v in values) + tail)


def _compare(log, ref):
    assert log.n_records == len(ref["records"])
    assert dict(log.skipped) == ref["skipped"]
    for i, rec in enumerate(ref["records"]):
        t = rec["csi"].size
        np.testing.assert_array_equal(log.csi[i, :t, 0, 0], rec["csi"])
        assert not log.csi[i, t:].any() and int(log.num_tones[i]) == t
        for name in naive.ESP32_INT_FIELDS:
            assert int(log.meta[name][i]) == rec[name], name
        assert log.meta["role"][i] == rec["role"] and int(log.meta["mac"][i]) == rec["mac"]
        assert float(log.meta["real_timestamp"][i]) == rec["real_timestamp"]


def test_hand_made_line():
    # values (imag, real) pairs: (3, -4) -> -4+3j, (-128, 127) -> 127-128j
    log = esp32.read((_line([3, -4, -128, 127]) + "\n").encode())
    assert log.csi.shape == (1, 2, 1, 1)
    assert log.csi[0, :, 0, 0].tolist() == [complex(-4, 3), complex(127, -128)]
    assert log.meta["rssi"][0] == -73 and log.meta["local_timestamp"][0] == 80272146
    assert log.meta["real_timestamp"][0] == 80.363225 and log.meta["mac"][0] == 0x3C71BF6D2A78
    assert not log.skipped and not log.problems and log.bandwidth_mhz == 40
    assert log.subcarriers.tolist() == [0, 1]


def test_list_governs_len_and_short_lists_are_counted_problems():
    lines = [_line([1] * 128, n=384), _line([2] * 126, n=128), _line([3] * 128)]
    log = esp32.read(("\n".join(lines) + "\n").encode())
    assert log.n_records == 3 and log.num_tones.tolist() == [64, 63, 64]
    assert log.problems == {"len_mismatch": 2, "short_list": 1} and not log.skipped
    assert not log.csi[1, 63:].any() and log.csi[1, 62, 0, 0] == complex(2, 2)
    assert log.subcarriers.shape == (3, 64) and log.subcarriers[0, 32] == -32


def test_bad_lines_skipped_and_counted():
    good = _line([1, 2, 3, 4])
    lines = [
        "type,role,mac,rssi,...",  # the CSV header: ignored
        good,
        _line([1, 2, 3]),  # odd
        _line([]),  # empty
        _line([1, 200]),  # out of int8
        _line([1, "x"]),  # not an integer
        good.replace(",-73,", ",-7a,"),  # bad field
        good.replace("3C:71", "3C-71"),  # bad MAC
        good[:-3],  # no closing bracket
        "I (123) wifi: connected",  # another line
        good,
    ]
    data = ("\r\n".join(lines) + "\r\n").encode()
    log = esp32.read(data)
    assert log.n_records == 2
    assert log.skipped == {"odd_list": 1, "empty_list": 1, "bad_value": 2, "bad_field": 2, "truncated": 1,
                           "not_csi": 1}
    _compare(log, naive.naive_read_esp32(data))


def test_random_against_naive():
    rng = np.random.default_rng(7)
    for n_values in (2, 64, 128, 384):
        data = esp32.synthesize(rng, 3, n_values=n_values)
        _compare(esp32.read(data), naive.naive_read_esp32(data))
    data = bytearray(esp32.synthesize(rng, 12))
    for _ in range(20):  # damage anywhere: flipped bytes, cuts
        at = int(rng.integers(0, len(data)))
        data[at] = int(rng.choice(list(b"0123456789 ,[]-\n.x")))
    data = bytes(data[:-37])
    _compare(esp32.read(data), naive.naive_read_esp32(data))


def test_refusal_and_sniff():
    with pytest.raises(FormatError, match="no valid ESP32-CSI-Tool"):
        esp32.read(b"hello\nworld\n")
    with pytest.raises(FormatError, match="1 odd list"):
        esp32.read((_line([1, 2, 3]) + "\n").encode())
    assert esp32.sniff(esp32.synthesize(np.random.default_rng(0), 1)[:4096])
    assert esp32.sniff(b"boot log\nCSI_DATA,STA,")
    assert not esp32.sniff(b"\x00\x01CSI_DATA,")


@pytest.mark.long
def test_shared_capture_matches_csiread():
    csiread = pytest.importorskip("csiread")
    path = str(conformance_path("hardware", "example_csi.csv"))
    log = esp32.read(path)
    ref = csiread.ESP32(path, csi_only=False, if_report=False)
    ref.read()
    assert log.n_records == ref.count == 13 and log.csi.shape == (13, 64, 1, 1)
    np.testing.assert_array_equal(log.csi[:, :, 0, 0], ref.csi)
    for name in (*esp32.INT_FIELDS, "real_timestamp"):
        np.testing.assert_array_equal(log.meta[name], getattr(ref, name))
    assert log.meta["role"].tolist() == list(ref.role)
    assert [f"{int(m):012X}" for m in log.meta["mac"]] == [m.replace(":", "") for m in ref.mac]
    assert log.problems == {"len_mismatch": 12}  # LLTF-only firmware: len 384, 128 values
    _compare(log, naive.naive_read_esp32(Path(path).read_bytes()))


def test_every_truncation_against_naive():
    data = esp32.synthesize(np.random.default_rng(12), 3, n_values=8)
    for cut in range(len(data) + 1):
        part = data[:cut]
        ref = naive.naive_read_esp32(part)
        if not ref["records"]:
            with pytest.raises(FormatError):
                esp32.read(part)
            continue
        _compare(esp32.read(part), ref)


def _garbled(rng, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(int(rng.integers(1, 30))):
        at = int(rng.integers(0, len(out)))
        kind = rng.random()
        if kind < 0.4:
            out[at] = int(rng.choice(list(b"0123456789 ,[]-+\n\r.:xA")))
        elif kind < 0.7:
            out[at:at] = rng.integers(0, 256, size=int(rng.integers(1, 20)), dtype=np.uint8).tobytes()
        else:
            del out[at:at + int(rng.integers(1, 20))]
    return bytes(out)


def test_small_fuzz_against_naive():
    rng = np.random.default_rng(13)
    for _ in range(20):
        data = _garbled(rng, esp32.synthesize(rng, 6, n_values=int(rng.choice([8, 128]))))
        ref = naive.naive_read_esp32(data)
        if ref["records"]:
            _compare(esp32.read(data), ref)


@pytest.mark.long
@pytest.mark.parametrize("two_threads", [False, True])
def test_large_fuzz_against_naive(monkeypatch, two_threads):
    if two_threads:  # every log split in two parts on two threads, damaged ones included
        monkeypatch.setattr(esp32, "SPLIT_MIN_BYTES", 0)
    rng = np.random.default_rng(14)
    for _ in range(300):
        n_values = int(rng.choice([2, 64, 128, 384]))
        data = _garbled(rng, esp32.synthesize(rng, int(rng.integers(1, 20)), n_values=n_values,
                                              header=bool(rng.random() < .5)))
        ref = naive.naive_read_esp32(data)
        if ref["records"]:
            _compare(esp32.read(data), ref)
        else:
            with pytest.raises(FormatError):
                esp32.read(data)


def test_two_part_scan_is_the_one_part_scan(monkeypatch):
    # a log cut in two after its middle newline and scanned on two threads gives the naive reader's records,
    # skips and problems: lines of both parts, a short list in the second part only (the width is both's),
    # roles (byte spans) from the second part, damage on either side of the cut
    rng = np.random.default_rng(31)
    monkeypatch.setattr(esp32, "SPLIT_MIN_BYTES", 0)
    lines = [_line([1] * 128, n=384), _line([1, 2, 3]), _line([4] * 128).replace(",AP,", ",STA,")]
    lines += [_line([5] * 126), "noise", _line([-6] * 128)]
    data = ("\n".join(lines) + "\n").encode()
    cut = esp32._halves(np.frombuffer(data, dtype=np.uint8))
    assert 0 < cut < len(data) and data[cut - 1:cut] == b"\n"
    log = esp32.read(data)
    _compare(log, naive.naive_read_esp32(data))
    assert log.problems == {"len_mismatch": 1, "short_list": 1} and log.csi.shape[1] == 64
    assert set(log.meta["role"].tolist()) == {"AP", "STA"}
    for _ in range(30):
        data = _garbled(rng, esp32.synthesize(rng, 9, n_values=int(rng.choice([8, 128]))))
        ref = naive.naive_read_esp32(data)
        if ref["records"]:
            _compare(esp32.read(data), ref)
    # no newline in the 64 KiB after the middle: read whole, as one part
    long = ("x" * 300_000 + "\n" + _line([1, 2]) + "\n").encode()
    assert esp32._halves(np.frombuffer(long, dtype=np.uint8)) == len(long)
    assert esp32.read(long).n_records == 1


def test_densest_log_fits_the_arrays():
    # the shortest line the scan keeps (77 bytes and a newline) packed as densely as a log can be: every
    # line kept, none past the arrays sized by _MIN_KEPT_LINE
    line = "CSI_DATA,,3C:71:BF:6D:2A:78" + ",1" * 22 + ",[1 1]"
    assert len(line) == 77 and esp32._MIN_KEPT_LINE <= len(line) + 1
    for n in (1, 2, 3, 500):
        data = ("\n".join([line] * n)).encode()
        log = esp32.read(data)
        assert log.n_records == n
        _compare(log, naive.naive_read_esp32(data))
