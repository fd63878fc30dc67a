"""PicoScenes .csi files: rfbench.io.picoscenes against csiread 1.4.1, the naive twin and hand-made frames."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import naive
from conftest import conformance_path
from rfbench.errors import FormatError
from rfbench.io import picoscenes as ps

#: The ``pl_size`` csiread needs for each shared capture (the README's command).
CSIREAD_SHAPES = {"rx_by_iwl5300.csi": [30, 3, 2], "rx_by_qca9300.csi": [56, 3, 1]}


def assert_same_as_naive(log, data):
    ref = naive.naive_read_picoscenes(data)
    assert dict(log.skipped) == ref["skipped"]
    assert log.n_records == len(ref["records"])
    for i, rec in enumerate(ref["records"]):
        csi = np.array(rec["csi"], dtype=np.complex64)
        t, r, x = csi.shape
        assert (log.num_tones[i], log.n_rx[i], log.n_tx[i]) == (t, r, x)
        np.testing.assert_array_equal(log.csi[i, :t, :r, :x], csi)
        rest = log.csi[i].copy()
        rest[:t, :r, :x] = 0
        assert not rest.any()
        for name, value in rec.items():
            if name not in ("csi", "device"):
                assert int(log.meta[name][i]) == value, (i, name)
        assert log.meta["csi_device_type"][i] == rec["device"]
    counts = {k: v for k, v in ref["other"].items()}
    shown = log.decided["segments_skipped"]
    assert shown == (", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: ps.OTHER_SEGMENTS.index(
        kv[0]))) if counts else "none")


# ---------------------------------------------------------------------------------------------------------
# hand-made frames
# ---------------------------------------------------------------------------------------------------------


def one_frame(device, csi, **options):
    return ps.encode_frame([ps.basic_segment(device, num_rx=csi.shape[1]), ps.csi_segment(device, csi, **options)])


def test_iwl5300_values_by_hand():
    # 30 tones, 1 rx, 1 tx: per tone 3 skipped bits then real and imaginary int8. Tone 0 = 5 - 3j, tone 29 =
    # -128 + 127j, all else 0; the payload is calc_len(1, 1) = (30 * 19 + 7) // 8 = 72 bytes (+ padding to 72).
    csi = np.zeros((30, 1, 1), dtype=complex)
    csi[0, 0, 0] = 5 - 3j
    csi[29, 0, 0] = -128 + 127j
    log = ps.read(one_frame(0x5300, csi))
    assert log.chip == "iwl5300" and log.csi.shape == (1, 30, 1, 1)
    np.testing.assert_array_equal(log.csi[0, :, 0, 0], csi[:, 0, 0].astype(np.complex64))
    assert log.subcarriers[:2].tolist() == [-28, -26] and log.subcarriers[14] == -1 and log.subcarriers[29] == 28


def test_qca9300_values_by_hand():
    # 56 tones, 3 rx, 1 stream: value pos = tone*3 + rx; five bytes hold (imag, real) of two values, 10 bits each
    csi = np.zeros((56, 3, 1), dtype=complex)
    csi[0, 0, 0] = 511 - 512j
    csi[0, 2, 0] = -1 + 1j
    csi[55, 1, 0] = 7 - 7j
    log = ps.read(one_frame(0x9300, csi))
    np.testing.assert_array_equal(log.csi[0], csi.astype(np.complex64))
    assert log.subcarriers.tolist() == list(range(-28, 0)) + list(range(1, 29))


def test_mvm_keeps_every_tone_and_skips_the_firmware_gap():
    rng = np.random.default_rng(1)
    csi = rng.integers(-3000, 3000, size=(242, 2, 2)) + 1j * rng.integers(-3000, 3000, size=(242, 2, 2))
    log = ps.read(one_frame(0x2100, csi, packet_format=3, version=4, firmware=60))
    np.testing.assert_array_equal(log.csi[0], csi.astype(np.complex64))
    assert log.chip == "iwlmvm-ax210" and len(log.subcarriers) == 242 and log.subcarriers[121] == 2
    # firmware 68, VHT 160 MHz: tones 242-255 of the 498 in the file are not CSI
    wide = rng.integers(-9, 9, size=(498, 1, 1)) + 0j
    log = ps.read(one_frame(0x2000, wide, packet_format=2, cbw=160, version=4, firmware=68))
    assert log.num_tones[0] == 484
    np.testing.assert_array_equal(log.csi[0, :, 0, 0], np.concatenate([wide[:242, 0, 0], wide[256:, 0, 0]]))
    assert_same_as_naive(log, one_frame(0x2000, wide, packet_format=2, cbw=160, version=4, firmware=68))


def test_sdr_values_and_indices_come_from_the_segment():
    csi = np.arange(56).reshape(56, 1, 1) * (0.5 - 0.25j) + 1e-9
    log = ps.read(one_frame(0x1234, csi))
    np.testing.assert_array_equal(log.csi[0], csi.astype(np.complex64))
    assert log.subcarriers[0] == -28 and "complex64" in log.decided["precision"]


@pytest.mark.parametrize("version", [1, 2, 3, 4])
@pytest.mark.parametrize("device", [0x5300, 0x9300])
def test_every_csi_segment_version(version, device):
    rng = np.random.default_rng(version)
    shape, lim = ((30, 2, 2), 127) if device == 0x5300 else ((56, 2, 1), 511)
    csi = rng.integers(-lim, lim + 1, size=shape) + 1j * rng.integers(-lim, lim + 1, size=shape)
    data = one_frame(device, csi, version=version)
    log = ps.read(data)
    np.testing.assert_array_equal(log.csi[0], csi.astype(np.complex64))
    assert_same_as_naive(log, data)


def test_extra_streams_come_from_the_buffer_length():
    # two spatial streams recorded with numTx = 1 (one extension stream): both are read, as csiread does
    csi = np.ones((30, 1, 2)) * (1 + 2j)
    log = ps.read(one_frame(0x5300, csi, num_tx=1))
    assert log.n_tx[0] == 2 and log.meta["csi_num_tx"][0] == 1 and log.meta["csi_num_ess"][0] == 1


@pytest.mark.parametrize("front_end", ["iwl5300", "qca9300", "iwlmvm-ax200", "iwlmvm-ax210"])
def test_synthesized_files_match_the_naive_twin(front_end):
    data = ps.synthesize(3, 7, front_end=front_end)
    log = ps.read(data)
    assert log.n_records == 7 and log.n_skipped == 0
    assert log.decided["segments_skipped"] == "PilotCSI 2"
    assert log.meta["segments_skipped"].tolist() == [0, 0, 1] * 2 + [0]
    assert_same_as_naive(log, data)


def test_mixed_shapes_are_padded():
    data = ps.synthesize(11, 12, front_end="iwl5300")
    log = ps.read(data)
    assert log.csi.shape[2:] == (3, 2) and len(set(zip(log.n_rx.tolist(), log.n_tx.tolist()))) > 1
    assert_same_as_naive(log, data)


def test_extra_info_fields_follow_the_feature_code():
    fields = {"extra_length": 9, "extra_chansel": 0x12345678, "extra_pll_refdiv": 3, "extra_pll_clock_select": 5,
              "extra_cfo": -77, "extra_temperature": -5, "extra_sampling_rate": 40_000_000}
    csi = np.zeros((30, 1, 1))
    log = ps.read(ps.encode_frame([ps.extra_info_segment(fields), ps.csi_segment(0x5300, csi)]))
    for name, value in fields.items():
        assert int(log.meta[name][0]) == value, name
    assert log.meta["extra_agc"][0] == 0 and not log.meta["basic_present"][0]


def test_rxsbasic_rssi_of_v1_is_relative_to_the_noise_floor():
    csi = np.zeros((30, 1, 1))
    log = ps.read(ps.encode_frame([ps.basic_segment(0x5300, noise_floor=-95, rssi=40), ps.csi_segment(0x5300, csi)]))
    assert log.meta["rssi"][0] == -55 and log.meta["noise_floor"][0] == -95


# ---------------------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------------------


def test_not_picoscenes_is_refused():
    for data in (b"", b"\x00" * 64, struct.pack("<II", 100, 0x12345678) + b"\x00" * 100):
        with pytest.raises(FormatError, match="not a PicoScenes file"):
            ps.read(data)
    assert ps.sniff(ps.synthesize(0, 1)) and not ps.sniff(b"\x00" * 32)


def test_frames_without_csi_and_unknown_devices_are_counted():
    csi = np.zeros((30, 1, 1))
    good = one_frame(0x5300, csi)
    no_csi = ps.encode_frame([ps.basic_segment(0x5300)])
    odd = bytearray(one_frame(0x5300, csi))
    at = odd.index(b"CSI") + 5
    odd[at:at + 2] = (0x4242).to_bytes(2, "little")  # device type 0x4242
    log = ps.read(good + no_csi + bytes(odd) + good)
    assert log.n_records == 2 and log.skipped["no_csi"] == 1 and log.skipped["bad_csi"] == 1


def test_a_segment_overrunning_its_frame_skips_the_frame():
    csi = np.zeros((30, 1, 1))
    good = one_frame(0x5300, csi)
    bad = bytearray(good)
    bad[11:15] = (10_000).to_bytes(4, "little")  # the first segment's length
    log = ps.read(good + bytes(bad) + good)
    assert log.n_records == 2 and log.skipped["bad_segment"] == 1


def test_a_csi_buffer_longer_than_its_segment_is_skipped():
    csi = np.zeros((30, 1, 1))
    bad = bytearray(one_frame(0x5300, csi))
    at = bad.index(b"CSI") + 5 + 33
    bad[at:at + 4] = (1 << 30).to_bytes(4, "little")  # csiBufferLength
    with pytest.raises(FormatError, match="1 bad csi"):
        ps.read(bytes(bad))


def test_truncation_at_every_length_keeps_whole_frames():
    data = ps.synthesize(4, 3, front_end="qca9300")
    sizes = []
    pos = 0
    while pos < len(data):
        pos += 4 + struct.unpack_from("<I", data, pos)[0]
        sizes.append(pos)
    for cut in range(1, len(data) + 1, 13):
        whole = sum(1 for s in sizes if s <= cut)
        if whole == 0:
            with pytest.raises(FormatError):
                ps.read(data[:cut])
            continue
        log = ps.read(data[:cut])
        assert log.n_records == whole
        assert_same_as_naive(log, data[:cut])


def test_garbage_between_frames_is_skipped_and_counted():
    data = ps.synthesize(5, 4, front_end="iwl5300")
    first = 4 + struct.unpack_from("<I", data, 0)[0]
    damaged = data[:first] + bytes(range(200)) + data[first:] + b"\x15\x03\x15\x20" * 3
    log = ps.read(damaged)
    assert log.n_records == 4 and log.skipped["garbage"] == 1 and log.skipped["truncated"] == 1
    np.testing.assert_array_equal(log.csi, ps.read(data).csi)
    assert_same_as_naive(log, damaged)


def test_metadata_on_a_second_thread_is_the_one_thread_read(monkeypatch):
    # many frames: the CSI decoded on this thread while another reads the metadata; the same log, every array
    # equal, and equal to the naive twin; a failure of the metadata thread fails the read
    rng = np.random.default_rng(55)
    data = ps.synthesize(rng, 30, front_end="qca9300") + ps.synthesize(rng, 20, front_end="iwl5300")
    monkeypatch.setattr(ps, "SPLIT_MIN_FRAMES", 1 << 62)
    one = ps.read(data)
    monkeypatch.setattr(ps, "SPLIT_MIN_FRAMES", 0)
    two = ps.read(data)
    assert one.csi.tobytes() == two.csi.tobytes() and one.meta.keys() == two.meta.keys()
    for name in one.meta:
        np.testing.assert_array_equal(one.meta[name], two.meta[name], err_msg=name)
    assert_same_as_naive(two, data)

    def broken(*args):
        raise MemoryError("metadata")

    monkeypatch.setattr(ps, "_metadata", broken)
    with pytest.raises(MemoryError, match="metadata"):
        ps.read(data)


def test_small_fuzz_never_crashes():
    rng = np.random.default_rng(7)
    base = ps.synthesize(8, 4, front_end="iwl5300") + ps.synthesize(9, 2, front_end="qca9300")
    for _ in range(40):
        data = bytearray(base)
        for pos in rng.integers(0, len(data), size=rng.integers(1, 6)):
            data[pos] = rng.integers(0, 256)
        try:
            log = ps.read(bytes(data))
        except FormatError:
            continue
        assert_same_as_naive(log, bytes(data))


@pytest.mark.long
@pytest.mark.parametrize("two_threads", [False, True])
def test_large_fuzz_against_the_naive_twin(monkeypatch, two_threads):
    if two_threads:  # every log split in two parts on two threads, damaged ones included
        monkeypatch.setattr(ps, "SPLIT_MIN_FRAMES", 0)
    rng = np.random.default_rng(2026)
    fronts = ["iwl5300", "qca9300", "iwlmvm-ax200"]
    for case in range(200):
        base = bytearray(ps.synthesize(case, int(rng.integers(1, 6)), front_end=fronts[case % 3]))
        kind = case % 4
        if kind == 0:
            for pos in rng.integers(0, len(base), size=rng.integers(1, 40)):
                base[pos] = rng.integers(0, 256)
        elif kind == 1:
            at = int(rng.integers(0, len(base)))
            base[at:at] = rng.integers(0, 256, size=int(rng.integers(1, 500))).astype(np.uint8).tobytes()
        elif kind == 2:
            base = base[:int(rng.integers(1, len(base)))]
        else:  # lengths: a frame or segment length field set to a random value
            at = int(rng.integers(0, len(base) - 4))
            base[at:at + 4] = int(rng.integers(0, 1 << 32)).to_bytes(4, "little")
        data = bytes(base)
        try:
            log = ps.read(data)
        except FormatError:
            assert not naive.naive_read_picoscenes(data)["records"] if ps.sniff(data) else True
            continue
        assert_same_as_naive(log, data)


# ---------------------------------------------------------------------------------------------------------
# csiread 1.4.1
# ---------------------------------------------------------------------------------------------------------


def csiread_picoscenes(path, shape):
    csiread = pytest.importorskip("csiread")
    sizes = {"CSI": shape, "PilotCSI": [0, 0, 0], "LegacyCSI": [0, 0, 0], "BasebandSignals": [0, 0, 0],
             "PreEQSymbols": [0, 0, 0], "MPDU": 1522}
    c = csiread.Picoscenes(str(path), sizes, if_report=False)
    c.read()
    return c.raw


def assert_same_as_csiread(log, raw):
    assert log.n_records == len(raw)
    t, r, x = log.csi.shape[1:]
    np.testing.assert_array_equal(log.csi, raw["CSI"]["CSI"][:, :t, :r, :x])
    basic = raw["RxSBasic"]
    for ours, theirs in [("device_type", "DeviceType"), ("timestamp", "Timestamp"), ("center_freq", "CenterFreq"),
                         ("control_freq", "ControlFreq"), ("cbw", "CBW"), ("packet_format", "PacketFormat"),
                         ("guard_interval", "GI"), ("mcs", "MCS"), ("num_sts", "NumSTS"), ("num_rx", "NumRx"),
                         ("noise_floor", "NoiseFloor"), ("rssi", "RSSI"), ("rssi_ctl0", "RSSI1"),
                         ("rssi_ctl1", "RSSI2"), ("rssi_ctl2", "RSSI3")]:
        np.testing.assert_array_equal(log.meta[ours].astype(np.int64), basic[theirs].astype(np.int64), ours)
    extra = raw["RxExtraInfo"]
    for ours, theirs in [("extra_length", "Length"), ("extra_version", "Version"), ("extra_chansel", "CHANSEL"),
                         ("extra_bmode", "BMode"), ("extra_tx_chainmask", "TxChainMask"),
                         ("extra_rx_chainmask", "RxChainMask"), ("extra_tx_power", "TxPower"), ("extra_cf", "CF"),
                         ("extra_tx_tsf", "TxTSF"), ("extra_last_hw_tx_tsf", "LastTXTSF"),
                         ("extra_channel_flags", "ChannelFlags"), ("extra_tx_ness", "TXNESS"),
                         ("extra_tuning_policy", "TuningPolicy"), ("extra_pll_rate", "PLLRate"),
                         ("extra_agc", "AGC"), ("extra_sampling_rate", "SF"), ("extra_cfo", "CFO"),
                         ("extra_sfo", "SFO"), ("extra_temperature", "Temperature")]:
        np.testing.assert_array_equal(log.meta[ours].astype(np.int64), extra[theirs].astype(np.int64), ours)
    info = raw["CSI"]["Info"]
    for ours, theirs in [("csi_device_type", "DeviceType"), ("csi_packet_format", "PacketFormat"),
                         ("csi_cbw", "CBW"), ("csi_carrier_freq", "CarrierFreq"),
                         ("csi_sampling_rate", "SamplingRate"), ("csi_num_tones", "NumTones"),
                         ("csi_num_tx", "NumTx"), ("csi_num_rx", "NumRx"), ("csi_num_ess", "NumESS")]:
        np.testing.assert_array_equal(log.meta[ours].astype(np.int64), info[theirs].astype(np.int64), ours)
    np.testing.assert_array_equal(log.meta["sequence"], raw["StandardHeader"]["Sequence"])
    mac = np.zeros(len(raw), dtype=np.uint64)
    for k in range(6):
        mac = (mac << np.uint64(8)) | raw["StandardHeader"]["Addr2"][:, k].astype(np.uint64)
    np.testing.assert_array_equal(log.meta["source_mac"], mac)


@pytest.mark.parametrize("front_end", ["iwl5300", "qca9300"])
def test_synthesized_files_match_csiread(tmp_path, front_end):
    path = tmp_path / "f.csi"
    path.write_bytes(ps.synthesize(2, 9, front_end=front_end))
    log = ps.read(path)
    assert_same_as_csiread(log, csiread_picoscenes(path, [30, 3, 2] if front_end == "iwl5300" else [56, 3, 1]))


@pytest.mark.long
@pytest.mark.parametrize(("name", "n", "front_end", "shape"),
                         [("rx_by_iwl5300.csi", 383, "iwl5300", (30, 3, 2)),
                          ("rx_by_qca9300.csi", 1000, "qca9300", (56, 3, 1))])
def test_shared_captures_match_csiread_bit_for_bit(name, n, front_end, shape):
    path = conformance_path("hardware", name)
    log = ps.read(path)
    assert (log.n_records, log.chip, log.csi.shape[1:], log.n_skipped) == (n, front_end, shape, 0)
    raw = csiread_picoscenes(path, CSIREAD_SHAPES[name])
    assert_same_as_csiread(log, raw)
    np.testing.assert_array_equal(log.subcarriers, raw["CSI"]["SubcarrierIndex"][0][:shape[0]])
    assert_same_as_naive(log, path.read_bytes())


def test_a_repeated_segment_is_read_once_and_the_repeat_counted():
    first = np.full((30, 1, 1), 3 + 0j)
    second = np.full((30, 1, 1), -7 + 0j)
    data = ps.encode_frame([ps.csi_segment(0x5300, first), ps.csi_segment(0x5300, second)])
    log = ps.read(data)
    assert log.csi[0, 0, 0, 0] == 3 and log.decided["segments_skipped"] == "other 1"
    assert_same_as_naive(log, data)


def test_padding_cannot_ask_for_more_than_the_array_limit(monkeypatch):
    data = ps.synthesize(1, 5, front_end="iwl5300")
    monkeypatch.setenv("RFBENCH_MAX_ARRAY_BYTES", "1000")
    with pytest.raises(FormatError, match="RFBENCH_MAX_ARRAY_BYTES"):
        ps.read(data)


@pytest.mark.long
def test_csiread_swaps_the_pll_fields_of_extra_info():
    # ExtraInfo's layout (RXSExtraInfo.hxx, as csiread's own _picoscenes.h transcribes it: ... pll_rate,
    # pll_refdiv, pll_clock_select ...; feature bits 16, 17, 18 in that order) puts the reference divider
    # first. csiread's parse_ExtraInfoV1 reads the clock select first: on this capture (both bits set) it
    # calls the 5 the clock select and the 0 the divider; rfbench reads refdiv 5, clock select 0.
    path = conformance_path("hardware", "rx_by_qca9300.csi")
    log = ps.read(path)
    raw = csiread_picoscenes(path, CSIREAD_SHAPES["rx_by_qca9300.csi"])
    assert (log.meta["extra_feature_code"] >> 17 & 3 == 3).all()
    assert (log.meta["extra_pll_refdiv"] == 5).all() and (log.meta["extra_pll_clock_select"] == 0).all()
    np.testing.assert_array_equal(log.meta["extra_pll_refdiv"], raw["RxExtraInfo"]["PLLClockSelect"])
    np.testing.assert_array_equal(log.meta["extra_pll_clock_select"], raw["RxExtraInfo"]["PLLRefDiv"])


def test_frames_smaller_than_the_first_take_a_second_pass():
    big = ps.synthesize(1, 1, front_end="qca9300")
    small = ps.encode_frame([ps.csi_segment(0x5300, np.ones((30, 1, 1)))])
    data = big + small * 40
    log = ps.read(data)
    assert log.n_records == 41 and log.n_skipped == 0
    assert_same_as_naive(log, data)


def test_an_sdr_matrix_larger_than_its_index_list_is_read_within_the_segment():
    # numTones 8: eight indices, then a signal matrix of 56 x 1 x 1 complex doubles
    values = np.zeros((56, 1, 1, 2), dtype="<f8")
    values[..., 0], values[..., 1] = 1, -1
    payload = (np.arange(-28, -20, dtype="<i2").tobytes() + b"BBv1" + bytes([3]) + struct.pack("<III", 56, 1, 1)
               + b"CdFR" + values.tobytes())
    head = struct.pack("<HbHQQIHBBBBhI", 0x1234, 1, 20, 2_412_000_000, 20_000_000, 312500, 8, 1, 1, 0, 0, 0,
                       len(payload))
    log = ps.read(ps.encode_frame([ps.segment("CSI", 2, head + payload)]))
    assert log.num_tones[0] == 56 and log.csi[0, 55, 0, 0] == 1 - 1j
    assert log.subcarriers[:8].tolist() == list(range(-28, -20)) and not log.subcarriers[8:].any()


def test_sdr_and_mvm_fuzz_never_crashes():
    # (the naive twin does not decode SDR frames: here only the contract is checked)
    rng = np.random.default_rng(12)
    base = ps.synthesize(1, 3, front_end="usrp") + ps.synthesize(2, 2, front_end="iwlmvm-ax210")
    for _ in range(60):
        data = bytearray(base)
        for pos in rng.integers(0, len(data), size=rng.integers(1, 10)):
            data[pos] = rng.integers(0, 256)
        try:
            log = ps.read(bytes(data))
        except FormatError:
            continue
        assert log.csi.shape[0] == log.n_records == len(log.num_tones)
        assert (log.num_tones <= log.csi.shape[1]).all() and (log.n_rx <= log.csi.shape[2]).all()


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_csi_header_fields_of_every_version(version):
    csi = np.zeros((56, 2, 1))
    data = ps.encode_frame([ps.csi_segment(0x9300, csi, version=version, carrier_freq=5_200_000_000, antsel=5,
                                           subcarrier_offset=-3, firmware=66, cbw=20)])
    meta = ps.read(data).meta
    assert (meta["csi_device_type"][0], meta["csi_carrier_freq"][0], meta["csi_sampling_rate"][0]) == (
        0x9300, 5_200_000_000, 20_000_000)
    shape = (meta["csi_num_tones"][0], meta["csi_num_rx"][0], meta["csi_num_tx"][0], meta["csi_cbw"][0])
    assert shape == (56, 2, 1, 20)
    assert meta["csi_antenna_selection"][0] == 5 and meta["csi_num_csi"][0] == 1
    assert meta["csi_subcarrier_offset"][0] == (-3 if version >= 2 else 0)  # v1 has no offset field
    assert meta["csi_firmware_version"][0] == (66 if version == 4 else 0)  # only v4 has one
    assert meta["csi_subcarrier_offset"].dtype == np.int16 and meta["csi_carrier_freq"].dtype == np.uint64


@pytest.mark.parametrize("version", [2, 3])
def test_rxsbasic_v2_and_v3_layouts(version):
    # v2: v1 plus numUser and userIndex before the noise floor; v3: a control frequency after the centre one,
    # the bandwidth before the packet format, a packet bandwidth, and RSSI stored as is (no noise floor added)
    if version == 2:
        body = struct.pack("<HQhBHHBBBBBBbbbbb", 0x9300, 123456789, 5200, 1, 40, 800, 7, 2, 0, 3, 1, 0, -90, 30,
                           31, 32, 33)
    else:
        body = struct.pack("<HQhhHBHHBBBBBBbbbbb", 0x9300, 123456789, 5200, 5190, 40, 1, 20, 800, 7, 2, 0, 3, 1, 0,
                           -90, -60, -61, -62, -63)
    data = ps.encode_frame([ps.segment("RxSBasic", version, body), ps.csi_segment(0x9300, np.zeros((56, 3, 1)))])
    meta = ps.read(data).meta
    assert (meta["timestamp"][0], meta["center_freq"][0], meta["cbw"][0], meta["num_rx"][0]) == (123456789, 5200,
                                                                                                   40, 3)
    assert meta["noise_floor"][0] == -90 and meta["basic_present"][0]
    if version == 2:
        assert (meta["control_freq"][0], meta["packet_cbw"][0], meta["rssi"][0], meta["rssi_ctl2"][0]) == (
            5200, 40, -60, -57)
    else:
        assert (meta["control_freq"][0], meta["packet_cbw"][0], meta["rssi"][0], meta["rssi_ctl2"][0]) == (
            5190, 20, -60, -63)
