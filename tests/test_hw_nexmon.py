"""nexmon_csi pcaps: rfbench.io.nexmon against csiread 1.4.1, the naive twin and hand-made frames."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import naive
from conftest import conformance_path
from rfbench.errors import FormatError
from rfbench.io import nexmon


def frames(words_list, **fields):
    """A pcap of original-layout frames around each list of uint32 CSI words, ``fields`` as frame_payload's."""
    return nexmon.encode_frames([nexmon.frame_payload(np.asarray(w, dtype=np.uint32), **fields) for w in words_list])


def assert_same_as_naive(log, data, chip, **options):
    ref = naive.naive_read_nexmon(data, chip, **options)
    assert log.variant == ref["variant"]
    assert {k: v for k, v in log.skipped.items()} == ref["skipped"]
    assert log.n_records == len(ref["records"])
    for i, rec in enumerate(ref["records"]):
        k = len(rec["csi"])
        assert log.num_tones[i] == k
        np.testing.assert_array_equal(log.csi[i, :k, 0, 0], np.array(rec["csi"], dtype=np.complex64))
        assert not log.csi[i, k:].any()
        for name, value in rec.items():
            if name != "csi":
                assert int(log.meta[name][i]) == value, (i, name)


# ---------------------------------------------------------------------------------------------------------
# hand-made frames
# ---------------------------------------------------------------------------------------------------------


def test_int16_pairs_are_read_little_endian_real_first():
    words = np.zeros(64, dtype=np.uint32)
    words[0] = 0xFFFE_0003  # real 3, imaginary -2
    words[63] = 0x8000_7FFF  # real 32767, imaginary -32768
    log = nexmon.read(frames([words], chanspec=0xD024, chip_version=0x0065))
    assert log.chip == "bcm43455c0" and log.bandwidth_mhz == 20 and log.csi.shape == (1, 64, 1, 1)
    assert log.csi[0, 0, 0, 0] == 3 - 2j and log.csi[0, 63, 0, 0] == 32767 - 32768j
    assert not log.csi[0, 1:63].any()
    assert log.subcarriers[:3].tolist() == [0, 1, 2] and log.subcarriers[31:34].tolist() == [31, -32, -31]


def test_packed_floats_by_hand():
    # bcm4358: 9-bit mantissa (8 magnitude bits), 5-bit exponent. Word 0: real magnitude 1 (bit 14), imaginary
    # 0, exponent 0: its top bit is bit 0, so maxbit = 0 + 0 = 0 and every value is shifted by 10 - 0 = 10:
    # real 1 << 10 = 1024. Word 1: imaginary magnitude 3 (bits 5-6), imaginary sign (bit 13), exponent -2
    # (0b11110 = 30): 3 << (-2 + 10) = 768, negative. Word 2: real magnitude 5 with exponent -12 < -9 = e_zero
    # after the shift (-12 + 10 = -2 is not below -9: 5 >> 2 = 1).
    words = np.zeros(64, dtype=np.uint32)
    words[0] = 1 << 14
    words[1] = (1 << 13) | (3 << 5) | 30
    words[2] = (5 << 14) | ((-12) & 31)
    log = nexmon.read(frames([words], chanspec=0xD024, chip_version=0xDEAD))
    assert log.chip == "bcm4358"
    assert log.csi[0, :3, 0, 0].tolist() == [1024, -768j, 1]
    assert naive.naive_unpack_float(words.tolist(), 9, 5)[:6] == [1024, 0, 0, -768, 1, 0]


def test_an_all_zero_record_decodes_to_zeros():
    log = nexmon.read(frames([np.zeros(64, np.uint32)], chanspec=0xD024, chip_version=0xE834))
    assert log.chip == "bcm4366c0" and not log.csi.any()


@pytest.mark.parametrize("chip", nexmon.CHIPS)
@pytest.mark.parametrize("variant", nexmon.VARIANTS)
@pytest.mark.parametrize("bw", [20, 80])
def test_synthesized_files_match_the_naive_twin(chip, variant, bw):
    data = nexmon.synthesize(7, 6, chip=chip, bandwidth_mhz=bw, variant=variant)
    log = nexmon.read(data, chip=chip)
    assert log.variant == variant and log.bandwidth_mhz == bw and log.n_records == 6 and log.n_skipped == 0
    assert_same_as_naive(log, data, chip)
    if variant == "nexmon-pull46":
        assert log.meta["rssi"].dtype == np.int8 and (log.meta["rssi"] < 0).all()


def test_mixed_bandwidths_are_padded_with_per_record_indices():
    a = nexmon.frame_payload(np.arange(64, dtype=np.uint32), chanspec=0xD024)
    b = nexmon.frame_payload(np.arange(128, dtype=np.uint32), chanspec=0xD826)
    data = nexmon.encode_frames([a, b])
    log = nexmon.read(data)
    assert log.csi.shape == (2, 128, 1, 1) and log.num_tones.tolist() == [64, 128]
    assert log.subcarriers.shape == (2, 128) and log.subcarriers[0, 32] == -32 and log.subcarriers[1, 64] == -64
    assert "differ" in log.decided["bandwidth_mhz"]
    assert_same_as_naive(log, data, "bcm43455c0")


def test_big_endian_and_nanosecond_pcaps():
    data = bytearray(nexmon.synthesize(3, 3, chip="bcm4339", bandwidth_mhz=20))
    little = nexmon.read(bytes(data), chip="bcm4339")
    # rewrite the global and record headers big-endian, nanosecond magic
    out = bytearray(struct.pack(">IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1))
    pos = 24
    while pos < len(data):
        sec, usec, caplen, wirelen = struct.unpack("<IIII", data[pos:pos + 16])
        out += struct.pack(">IIII", sec, usec * 1000, caplen, wirelen) + data[pos + 16:pos + 16 + caplen]
        pos += 16 + caplen
    big = nexmon.read(bytes(out), chip="bcm4339")
    np.testing.assert_array_equal(big.csi, little.csi)
    np.testing.assert_array_equal(big.meta["timestamp_nsec"], little.meta["timestamp_usec"] * 1000)
    assert "nanoseconds" in big.decided["timestamp"]


def test_core_and_spatial_stream_are_bits_of_the_16_bit_field():
    # nexmon_csi: the low three bits are the core, the next three the spatial stream. 0x0813 -> core 3, stream 2;
    # csiread ORs the two bytes first ((0x13 | 0x08) >> 3 & 7 = 3): a difference whenever the high byte is set.
    payload = bytearray(nexmon.frame_payload(np.zeros(64, np.uint32), chanspec=0xD024))
    payload[12:14] = (0x0813).to_bytes(2, "little")
    log = nexmon.read(nexmon.encode_frames([bytes(payload)]))
    assert (log.meta["core"][0], log.meta["spatial_stream"][0]) == (3, 2)


# ---------------------------------------------------------------------------------------------------------
# chip, variant and bandwidth decisions
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("version", "chip"), [(0x0065, "bcm43455c0"), (0xE834, "bcm4366c0"), (0xDEAD, "bcm4358")])
def test_the_chip_version_field_decides_the_chip(version, chip):
    log = nexmon.read(nexmon.synthesize(1, 2, chip=chip, bandwidth_mhz=20, chip_version=version))
    assert log.chip == chip and f"0x{version:04x}" in log.decided["chip"]


def test_an_unknown_chip_version_is_refused_with_the_candidates():
    data = nexmon.synthesize(1, 2, chip="bcm4339", bandwidth_mhz=20)
    with pytest.raises(FormatError) as err:
        nexmon.read(data)
    message = str(err.value)
    assert "0x4339" in message and "`chip`" in message and "\n" not in message
    for chip in nexmon.CHIPS:
        assert chip in message
    assert nexmon.read(data, chip="bcm4339").chip == "bcm4339"


def test_mixed_chip_versions_are_refused():
    a = nexmon.frame_payload(np.zeros(64, np.uint32), chanspec=0xD024, chip_version=0x0065)
    b = nexmon.frame_payload(np.zeros(64, np.uint32), chanspec=0xD024, chip_version=0xE834)
    with pytest.raises(FormatError, match="0x0065, 0xe834"):
        nexmon.read(nexmon.encode_frames([a, b]))


def test_a_given_chip_wins_and_the_disagreement_is_recorded():
    log = nexmon.read(nexmon.synthesize(1, 2, chip="bcm43455c0", bandwidth_mhz=20), chip="bcm4339")
    assert log.chip == "bcm4339" and "bcm43455c0" in log.decided["chip"]
    with pytest.raises(FormatError, match="not a nexmon_csi chip"):
        nexmon.read(nexmon.synthesize(1, 2, bandwidth_mhz=20), chip="4358")


def test_bandwidth_option_and_bad_chanspec():
    a = nexmon.frame_payload(np.zeros(64, np.uint32), chanspec=0xD024)
    bad = nexmon.frame_payload(np.zeros(64, np.uint32), chanspec=0x0024)  # bandwidth code 0
    log = nexmon.read(nexmon.encode_frames([a, bad]))
    assert log.n_records == 1 and log.skipped["bad_chanspec"] == 1
    forced = nexmon.read(nexmon.encode_frames([a, bad]), bandwidth_mhz=20)
    assert forced.n_records == 2 and forced.decided["bandwidth_mhz"] == "given (`bandwidth_mhz`)"
    # a frame shorter than the CSI its bandwidth needs is skipped, never read past
    with pytest.raises(FormatError, match="no nexmon_csi frame"):
        nexmon.read(nexmon.encode_frames([a]), bandwidth_mhz=40)


def test_a_pull46_frame_whose_rssi_and_fc_are_0x11_is_read_as_pull46_with_the_rest():
    words = np.zeros(64, np.uint32)
    odd = nexmon.frame_payload(words, "nexmon-pull46", chanspec=0xD024, rssi=0x11, frame_control=0x11)
    other = nexmon.frame_payload(words, "nexmon-pull46", chanspec=0xD024, rssi=-40)
    log = nexmon.read(nexmon.encode_frames([odd, other]))
    assert log.variant == "nexmon-pull46" and log.meta["rssi"].tolist() == [17, -40]
    alone = nexmon.read(nexmon.encode_frames([odd]))
    assert alone.variant == "nexmon"  # indistinguishable alone; `variant` forces it
    assert nexmon.read(nexmon.encode_frames([odd]), variant="nexmon-pull46").meta["rssi"].tolist() == [17]


# ---------------------------------------------------------------------------------------------------------
# bad input: skipped and counted, never a crash
# ---------------------------------------------------------------------------------------------------------


def test_not_a_pcap_and_pcapng_are_refused_in_one_line():
    for data, match in [(b"", "not a pcap"), (b"\x00" * 100, "not a pcap"),
                        (b"\x0a\x0d\x0d\x0a" + b"\x00" * 60, "pcapng")]:
        with pytest.raises(FormatError, match=match):
            nexmon.read(data)
    header = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 127)  # radiotap
    with pytest.raises(FormatError, match="link type 127"):
        nexmon.read(header)


def test_sniff():
    data = nexmon.synthesize(0, 2, bandwidth_mhz=20)
    assert nexmon.sniff(data[:4096]) and nexmon.sniff(data[:24])
    assert not nexmon.sniff(b"") and not nexmon.sniff(b"\x00" * 4096) and not nexmon.sniff(data[:30])
    other = bytearray(data)
    other[24 + 16 + 36] = 0  # the first frame's UDP destination port 5500 -> 0x007c
    other[24 + 16 + 34] = 0
    assert not nexmon.sniff(bytes(other))


def test_other_packets_are_counted_not_read():
    good = nexmon.frame_payload(np.ones(64, np.uint32), chanspec=0xD024)
    data = bytearray(nexmon.encode_frames([good, b"\x22\x22" + good[2:], good]))
    log = nexmon.read(bytes(data))
    assert log.n_records == 2 and log.skipped["not_csi"] == 1


def test_truncation_at_every_length_keeps_the_whole_frames():
    data = nexmon.synthesize(5, 3, chip="bcm4358", bandwidth_mhz=20)
    size = (len(data) - 24) // 3
    for cut in range(24, len(data) + 1, 7):
        whole = (cut - 24) // size
        if whole == 0:
            with pytest.raises(FormatError):
                nexmon.read(data[:cut])
            continue
        log = nexmon.read(data[:cut])
        assert log.n_records == whole
        assert log.skipped["truncated"] == (0 if (cut - 24) % size == 0 else 1)
        assert_same_as_naive(log, data[:cut], "bcm4358")


def test_garbage_between_records_is_skipped_and_counted():
    data = nexmon.synthesize(6, 4, chip="bcm43455c0", bandwidth_mhz=20)
    size = (len(data) - 24) // 4
    garbage = bytes(range(97)) * 3
    damaged = data[:24 + size] + garbage + data[24 + size:24 + 3 * size] + b"\xff" * 5 + data[24 + 3 * size:]
    log = nexmon.read(damaged)
    assert log.n_records == 4 and log.skipped["garbage"] == 2
    np.testing.assert_array_equal(log.csi, nexmon.read(data).csi)
    assert_same_as_naive(log, damaged, "bcm43455c0")


def test_a_lying_captured_length_costs_one_record():
    data = bytearray(nexmon.synthesize(8, 4, chip="bcm43455c0", bandwidth_mhz=20))
    size = (len(data) - 24) // 4
    data[24 + size + 8:24 + size + 12] = (0xFFFFFFF0).to_bytes(4, "little")  # 2nd record: caplen 4 GB
    log = nexmon.read(bytes(data))
    assert log.n_records == 3 and log.skipped["garbage"] == 1
    assert_same_as_naive(log, bytes(data), "bcm43455c0")


def test_short_payloads_are_skipped():
    good = nexmon.frame_payload(np.ones(64, np.uint32), chanspec=0xD024)
    log = nexmon.read(nexmon.encode_frames([good, good[:100], good[:10], good]))
    assert log.n_records == 2 and log.skipped["short_payload"] == 2


def test_small_fuzz_never_crashes():
    rng = np.random.default_rng(26)
    base = nexmon.synthesize(9, 5, chip="bcm4366c0", bandwidth_mhz=20, variant="nexmon-pull46")
    for _ in range(40):
        data = bytearray(base)
        for pos in rng.integers(24, len(data), size=rng.integers(1, 8)):
            data[pos] = rng.integers(0, 256)
        try:
            log = nexmon.read(bytes(data), chip="bcm4366c0")
        except FormatError:
            continue
        assert log.n_records + log.n_skipped >= 1
        assert_same_as_naive(log, bytes(data), "bcm4366c0")


def _one_walk(monkeypatch, data, **options):
    """``nexmon.read`` with the two-part walk and the two-thread decode switched off."""
    with monkeypatch.context() as m:
        m.setattr(nexmon, "SPLIT_MIN_BYTES", 1 << 62)
        m.setattr(nexmon, "SPLIT_MIN_FRAMES", 1 << 62)
        return nexmon.read(data, **options)


def assert_same_logs(a, b):
    assert a.csi.tobytes() == b.csi.tobytes() and a.csi.shape == b.csi.shape
    assert dict(a.skipped) == dict(b.skipped) and a.variant == b.variant
    assert a.meta.keys() == b.meta.keys()
    for name in a.meta:
        np.testing.assert_array_equal(a.meta[name], b.meta[name], err_msg=name)


def test_two_part_walk_and_two_thread_decode_are_the_one_walk(monkeypatch):
    # a capture walked in two parts from a plausible record past its middle, and decoded in two halves: the one
    # walk's frames, skips and values, with garbage, a truncated tail and a record whose payload holds a whole
    # fake record (so the second part may start inside a packet and is then dropped), int16 and packed floats
    monkeypatch.setattr(nexmon, "SPLIT_MIN_BYTES", 0)
    monkeypatch.setattr(nexmon, "SPLIT_MIN_FRAMES", 0)
    rng = np.random.default_rng(46)
    for chip in ("bcm43455c0", "bcm4366c0"):
        data = nexmon.synthesize(11, 40, chip=chip, bandwidth_mhz=20)
        size = (len(data) - 24) // 40
        damaged = data[:24 + 7 * size] + bytes(range(60)) + data[24 + 7 * size:-50]
        for case in (data, damaged):
            got = nexmon.read(case)
            assert_same_logs(got, _one_walk(monkeypatch, case))
            assert_same_as_naive(got, case, chip)
    # a fake record inside the payload of the record that spans the middle
    inner = nexmon.synthesize(12, 1, chip="bcm43455c0", bandwidth_mhz=20)[24:]
    good = nexmon.frame_payload(rng.integers(0, 1 << 32, size=64, dtype=np.uint64).astype(np.uint32),
                                chanspec=0xD024)
    carrier = good + inner + b"\x00" * 7
    data = nexmon.encode_frames([good, carrier, good])
    cut = int(nexmon.next_plausible(np.frombuffer(data, dtype=np.uint8), len(data) // 2, nexmon._MIN_FRAME,
                                    nexmon._resumes_at, False, nexmon._LINKS[1]))
    starts = {24, 24 + 16 + 42 + len(good), len(data) - 16 - 42 - len(good)}  # the three real records
    assert 0 < cut < len(data) and cut not in starts  # the second part starts inside the carrier
    one = _one_walk(monkeypatch, data)
    assert one.n_records == 3
    assert_same_logs(nexmon.read(data), one)
    for _ in range(30):
        base = bytearray(nexmon.synthesize(int(rng.integers(1 << 30)), int(rng.integers(2, 30)), chip="bcm43455c0",
                                           bandwidth_mhz=20))
        for pos in rng.integers(24, len(base), size=rng.integers(1, 10)):
            base[pos] = rng.integers(0, 256)
        try:
            one = _one_walk(monkeypatch, bytes(base))
        except FormatError:
            with pytest.raises(FormatError):
                nexmon.read(bytes(base))
            continue
        assert_same_logs(nexmon.read(bytes(base)), one)


@pytest.mark.long
@pytest.mark.parametrize("two_threads", [False, True])
def test_large_fuzz_against_the_naive_twin(monkeypatch, two_threads):
    if two_threads:  # every log split in two parts on two threads, damaged ones included
        monkeypatch.setattr(nexmon, "SPLIT_MIN_BYTES", 0)
        monkeypatch.setattr(nexmon, "SPLIT_MIN_FRAMES", 0)
    rng = np.random.default_rng(2026)
    for case in range(300):
        chip = nexmon.CHIPS[case % 4]
        base = bytearray(nexmon.synthesize(case, int(rng.integers(1, 12)), chip=chip,
                                           bandwidth_mhz=int(rng.choice([20, 40])),
                                           variant=nexmon.VARIANTS[case % 2]))
        kind = case % 3
        if kind == 0:
            for pos in rng.integers(24, len(base), size=rng.integers(1, 30)):
                base[pos] = rng.integers(0, 256)
        elif kind == 1:
            at = int(rng.integers(24, len(base)))
            base[at:at] = rng.integers(0, 256, size=int(rng.integers(1, 400))).astype(np.uint8).tobytes()
        else:
            base = base[:int(rng.integers(24, len(base)))]
        data = bytes(base)
        try:
            log = nexmon.read(data, chip=chip)
        except FormatError:
            assert not naive.naive_read_nexmon(data, chip)["records"]
            continue
        assert_same_as_naive(log, data, chip)


# ---------------------------------------------------------------------------------------------------------
# csiread 1.4.1
# ---------------------------------------------------------------------------------------------------------


def csiread_nexmon(path, chip, bw, pull46=False):
    csiread = pytest.importorskip("csiread")
    cls = csiread.NexmonPull46 if pull46 else csiread.Nexmon
    c = cls(str(path), chip=chip, bw=bw, if_report=False)
    c.read()
    return c


def assert_same_as_csiread(log, c, pull46=False):
    assert log.n_records == c.count
    np.testing.assert_array_equal(log.csi[:, :, 0, 0], c.csi)
    pairs = [("timestamp_sec", "sec"), ("timestamp_usec", "usec"), ("captured_length", "caplen"),
             ("wire_length", "wirelen"), ("magic", "magic"), ("sequence", "seq"), ("core", "core"),
             ("spatial_stream", "spatial"), ("chanspec", "chan_spec"), ("chip_version", "chip_version")]
    if pull46:
        pairs += [("rssi", "rssi"), ("frame_control", "fc")]
    for ours, theirs in pairs:
        np.testing.assert_array_equal(log.meta[ours].astype(np.int64), getattr(c, theirs).astype(np.int64), ours)
    mac = np.zeros(c.count, dtype=np.uint64)
    for k in range(6):
        mac = (mac << np.uint64(8)) | c.src_addr[:, k].astype(np.uint64)
    np.testing.assert_array_equal(log.meta["source_mac"], mac)


@pytest.mark.parametrize("chip", ["bcm4339", "bcm43455c0", "bcm4358", "bcm4366c0"])
def test_synthesized_original_layout_matches_csiread(tmp_path, chip):
    path = tmp_path / "f.pcap"
    path.write_bytes(nexmon.synthesize(4, 5, chip=chip, bandwidth_mhz=40))
    log = nexmon.read(path, chip=chip)
    assert_same_as_csiread(log, csiread_nexmon(path, chip[3:], 40))


def test_pull46_int16_matches_csiread_and_floats_follow_nexmon_csi(tmp_path):
    path = tmp_path / "p.pcap"
    path.write_bytes(nexmon.synthesize(5, 5, chip="bcm43455c0", bandwidth_mhz=20, variant="nexmon-pull46"))
    assert_same_as_csiread(nexmon.read(path), csiread_nexmon(path, "43455c0", 20, pull46=True), pull46=True)
    # Packed floats: the same CSI words in both layouts decode alike here (autoscale on, as nexmon_csi's
    # unpack_float.c gateway passes), equal to csiread's Nexmon on the original layout; csiread's NexmonPull46
    # decodes them with autoscale off and so differs.
    rng = np.random.default_rng(3)
    words = [nexmon.synthesize(rng, 1, chip="bcm4358", bandwidth_mhz=20) for _ in range(3)]
    csi_words = [np.frombuffer(w[24 + 16 + 42 + 18:], dtype="<u4") for w in words]
    orig, pull = tmp_path / "o.pcap", tmp_path / "q.pcap"
    orig.write_bytes(frames(csi_words, chanspec=0xD024, chip_version=0xDEAD))
    pull.write_bytes(nexmon.encode_frames([nexmon.frame_payload(w, "nexmon-pull46", chanspec=0xD024,
                                                                chip_version=0xDEAD) for w in csi_words]))
    ours = nexmon.read(pull)
    assert ours.variant == "nexmon-pull46"
    np.testing.assert_array_equal(ours.csi[:, :, 0, 0], csiread_nexmon(orig, "4358", 20).csi)
    assert not np.array_equal(ours.csi[:, :, 0, 0], csiread_nexmon(pull, "4358", 20, pull46=True).csi)


@pytest.mark.long
@pytest.mark.parametrize(("name", "chip", "bw", "n", "version"),
                         [("example.pcap", "bcm4358", 80, 4, 0xDEAD),
                          ("output-40.pcap", "bcm43455c0", 40, 4000, 0x0065)])
def test_shared_captures_match_csiread_bit_for_bit(name, chip, bw, n, version):
    path = conformance_path("hardware", name)
    log = nexmon.read(path)  # chip and bandwidth from the bytes
    assert (log.chip, log.bandwidth_mhz, log.n_records, log.variant) == (chip, bw, n, "nexmon")
    assert log.n_skipped == 0 and f"0x{version:04x}" in log.decided["chip"]
    assert_same_as_csiread(log, csiread_nexmon(path, chip[3:], bw))
    if n < 10:
        assert_same_as_naive(log, path.read_bytes(), chip)


def test_the_output_cannot_exceed_the_array_limit(monkeypatch):
    data = nexmon.synthesize(1, 5, bandwidth_mhz=20)
    monkeypatch.setenv("RFBENCH_MAX_ARRAY_BYTES", "1000")
    with pytest.raises(FormatError, match="RFBENCH_MAX_ARRAY_BYTES"):
        nexmon.read(data)


def test_frames_smaller_than_the_first_take_a_second_pass():
    big = nexmon.frame_payload(np.ones(256, np.uint32), chanspec=0xE29B)
    small = nexmon.frame_payload(np.ones(64, np.uint32), chanspec=0xD024)
    data = nexmon.encode_frames([big] + [small] * 40)
    log = nexmon.read(data)
    assert log.n_records == 41 and log.n_skipped == 0
    assert_same_as_naive(log, data, "bcm43455c0")
