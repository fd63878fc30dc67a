"""Every CSI format through `rfbench parse`: told from the bytes, forced with --format, the archive's schema, the
summary and --json saying what was decided and why, refusals as one line and exit 2; the registry."""

from __future__ import annotations

import json
import os
import threading

import numpy as np
import pytest

from rfbench.cli import app
from rfbench.errors import FormatError
from rfbench.io import atheros, esp32, hwlog, parse_files
from rfbench.io.writer import synthetic_log


@pytest.fixture
def logs(tmp_path):
    rng = np.random.default_rng(11)
    paths = {
        "atheros": tmp_path / "ath.dat",
        "atheros_big": tmp_path / "router.dat",
        "esp32": tmp_path / "board.csv",
        "intel": tmp_path / "intel.dat",
    }
    paths["atheros"].write_bytes(atheros.synthesize(rng, 6, nr=3, nc=2))
    paths["atheros_big"].write_bytes(atheros.synthesize(rng, 3, endian="big", pull10=True, nr=2, nc=1, tones=114))
    paths["esp32"].write_bytes(esp32.synthesize(rng, 5))
    paths["intel"].write_bytes(synthetic_log(4, nrx=3, ntx=1, seed=2))
    return paths


def test_registry_is_lazy_and_knows_the_formats():
    assert set(hwlog.READERS) == {"atheros", "esp32", "nexmon", "picoscenes"}
    assert {"atheros", "esp32"} <= set(hwlog.available())
    assert hwlog.reader("atheros") is atheros
    with pytest.raises(FormatError, match="unknown CSI format"):
        hwlog.reader("intel9999")


def test_detect_format_from_bytes(logs):
    for name, fmt in (("atheros", "atheros"), ("atheros_big", "atheros"), ("esp32", "esp32"),
                      ("intel", "intel5300")):
        assert parse_files.detect_format(logs[name].read_bytes()) == fmt, name
    assert parse_files.detect_format(b"\x07" * 100) == "intel5300"  # nobody's: the Intel reader says why


def test_parse_each_format_one_archive_same_schema(runner, logs, tmp_path):
    out = tmp_path / "out"
    args = ["parse", *(str(p) for p in logs.values()), "-o", str(out), "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    by_name = {f["name"].rsplit("/", 1)[-1]: f for f in doc["files"]}
    assert doc["written"] == 4
    big = by_name["router.dat"]["summary"]
    assert big["format"] == "atheros" and big["variant"] == "atheros-pull10" and big["bandwidth_mhz"] == 40
    assert "big-endian" in big["decided"]["endian"] and "0xff" in big["decided"]["variant"]
    board = by_name["board.csv"]["summary"]
    assert board["format"] == "esp32" and board["problems"] == {"len_mismatch": 5} and board["bandwidth_mhz"] == 20
    assert "format" not in by_name["intel.dat"]["summary"]  # the Intel path as before
    with np.load(out / "router.npz", allow_pickle=False) as z:
        assert z["csi"].shape == (3, 114, 2, 1) and z["csi"].dtype == np.complex64
        assert str(z["format"]) == "atheros" and str(z["hardware"]) == "atheros"
        assert str(z["variant"]) == "atheros-pull10" and int(z["bandwidth_mhz"]) == 40 and str(z["chip"]) == ""
        decided = dict(zip(z["decided_keys"].tolist(), z["decided_values"].tolist()))
        assert "big-endian" in decided["endian"]
        assert z["num_tones"].tolist() == [114] * 3 and z["nrx"].tolist() == [2] * 3 and z["ntx"].tolist() == [1] * 3
        assert z["subcarriers"].tolist() == list(range(-58, -1)) + list(range(2, 59))
        for name in ("timestamp", *atheros.META_FIELDS):
            assert z[name].shape == (3,), name
        np.testing.assert_array_equal(z["csi"], atheros.read(logs["atheros_big"]).csi)
    with np.load(out / "board.csv.npz", allow_pickle=False) as z:
        assert z["csi"].shape == (5, 64, 1, 1) and str(z["format"]) == "esp32"
        assert z["problems_reasons"].tolist() == ["len_mismatch"] and z["problems_counts"].tolist() == [5]
        assert z["mac"].dtype == np.uint64 and z["role"].tolist() == ["AP"] * 5


def test_summary_says_what_was_decided(runner, logs, tmp_path):
    result = runner.invoke(app, ["parse", str(logs["atheros_big"]), str(logs["esp32"]), "-o", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    assert "atheros log read as atheros-pull10, 40 MHz" in result.stdout
    assert "big-endian headers are plausible" in result.stdout
    assert "records kept with problems: len_mismatch 5" in result.stdout


def test_format_forced_and_folder_globs(runner, logs, tmp_path):
    out = tmp_path / "o"
    result = runner.invoke(app, ["parse", str(tmp_path), "--format", "esp32", "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [f["name"] for f in doc["files"]] == ["board.csv"] and doc["patterns"] == ["*.csv"]
    result = runner.invoke(app, ["parse", str(logs["esp32"]), "--format", "atheros", "-o", str(tmp_path / "o2")])
    assert result.exit_code == 2
    assert "no plausible Atheros CSI Tool record header" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_endian_forced_and_refusals(runner, logs, tmp_path):
    out = tmp_path / "o"
    ok = runner.invoke(app, ["parse", str(logs["atheros"]), "--endian", "little", "-o", str(out), "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["files"][0]["summary"]["decided"]["endian"] == "forced (little)"
    bad = runner.invoke(app, ["parse", str(logs["atheros"]), "--endian", "big", "-o", str(out), "--force"])
    assert bad.exit_code == 2 and "big-endian" in bad.stderr
    for args, words in ((["--endian", "middle"], "--endian middle"), (["--format", "bogus"], "--format bogus")):
        r = runner.invoke(app, ["parse", str(logs["atheros"]), *args, "-o", str(out)])
        assert r.exit_code == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = runner.invoke(app, ["parse", str(logs["esp32"]), "--raw-int8", "-o", str(out)])
    assert r.exit_code == 2 and "Intel 5300 logs" in r.stderr


def test_ambiguous_bytes_refused(monkeypatch):
    monkeypatch.setattr(hwlog, "detect", lambda head: ["atheros", "esp32"])
    with pytest.raises(FormatError, match="atheros and esp32"):
        parse_files.detect_format(b"\x00" * 64)


def test_no_record_is_one_line(runner, tmp_path):
    path = tmp_path / "empty.csv"
    path.write_bytes(b"type,role,mac,rssi\nI (1) boot\n")
    r = runner.invoke(app, ["parse", str(path), "-o", str(tmp_path / "o")])
    assert r.exit_code == 2 and "no valid ESP32-CSI-Tool CSI_DATA line" in r.stderr


#: The file name ending of each format's generated corpus.
_SUFFIX = {"esp32": "csv", "nexmon": "pcap", "atheros": "dat", "picoscenes": "csi"}


def _esp32_corpus(root, records=120, fmt="esp32"):
    from rfbench.io.writer import make_hardware_log
    from rfbench.io.writer_settings import HardwareLogSettings

    seed = 0
    for user in ("ann", "bob"):
        for gesture in ("push", "wave"):
            for rep in (1, 2):
                seed += 1
                make_hardware_log(root / f"{user}_{gesture}_{rep}.{_SUFFIX[fmt]}",
                                  HardwareLogSettings(format=fmt, seed=seed, records=records))


def test_ingest_files_template_takes_other_hardware(runner, tmp_path):
    corpus = tmp_path / "corpus"
    _esp32_corpus(corpus, records=40)
    (corpus / "cal_push_9.csv").write_bytes(b"CSI_DATA,AP,zz\n")  # an ESP32 log with no valid line
    r = runner.invoke(app, ["ingest", "files", str(corpus), "-t", "{user}_{gesture}_{rep}.csv", "--label", "gesture",
                            "--subject", "user", "-o", str(tmp_path / "m.json")])
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "m.json").read_text())
    files = {f["path"]: f for rec in doc["recordings"] for f in rec["files"]}
    assert files["ann_push_1.csv"]["format"] == "esp32" and files["ann_push_1.csv"]["records"] == 40
    assert any("cal_push_9.csv" in p["path"] and "no valid ESP32-CSI-Tool CSI_DATA line" in p["reason"]
               for p in doc["problems"])


@pytest.mark.long
@pytest.mark.parametrize("fmt, antennas, length", [("esp32", "1x1", 32), ("nexmon", "1x1", 32),
                                                   ("atheros", "3x2", 32),
                                                   ("picoscenes", "3x2", 8)])  # (its frames of mixed shapes)
def test_split_windows_predict_score_verify(runner, tmp_path, monkeypatch, fmt, antennas, length):
    """A corpus of each format goes the whole chain like an Intel one; the index declares the subcarrier map."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from rfbench.io.files import write_bytes
    from rfbench.nn.onnx_export import FeatureMap, fit_nearest_centroid, nearest_centroid_model

    monkeypatch.chdir(tmp_path)
    _esp32_corpus(tmp_path / "corpus", fmt=fmt)

    def ok(args):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        return result

    ok(["ingest", "files", "corpus", "-t", "{user}_{gesture}_{rep}." + _SUFFIX[fmt], "--label", "gesture",
        "--subject", "user", "-o", "m.json"])
    ok(["split", "m.json", "-p", "cross-subject", "--test", "bob", "-o", "split.json"])
    for side in ("train", "test"):
        ok(["windows", "split.json", "--side", side, "-o", f"w-{side}", "--length", str(length), "--antennas",
            antennas, "--subcarriers", "56"])
    index = json.loads((tmp_path / "w-test" / "index.json").read_text())
    rx, tx = (int(v) for v in antennas.split("x"))
    assert index["x"]["hardware"] == fmt and index["x"]["shape"][1:] == [length, 1, 56, rx, tx]
    assert index["x"]["subcarrier_map"] == {"from": f"{fmt} data subcarriers", "to": "ht20-56", "span": "band"}
    x, y = np.load("w-train/X.npy"), np.load("w-train/y.npy")
    features = FeatureMap(row_shape=x.shape[1:], take={1: 0}, mean_axes=(0,))
    write_bytes("centroid.onnx", nearest_centroid_model(fit_nearest_centroid(features.apply(x), y, 2), features))
    ok(["predict", "centroid.onnx", "--windows", "w-test", "-o", "scores.npy"])
    ok(["score", "--task", "gesture", "--pred", "scores.npy", "--rows", "w-test/index.json", "--split", "split.json",
        "-o", "report.json"])
    assert "MATCH" in ok(["verify", "report.json"]).output
    # the report says which template field the labels are (here the gesture, not the user or the repetition)
    shown = json.loads((tmp_path / "report.json").read_text())["provenance"]["ground_truth"]
    assert shown.endswith("labels from the manifest's recordings (their 'label'), which ingest took from the file-name "
                          "template's field 'gesture'")
    assert shown in (tmp_path / "report.md").read_text()
    scaled = runner.invoke(app, ["windows", "split.json", "--side", "test", "-o", "w-s", "--antennas", antennas,
                                 "--csi", "scaled"])
    assert scaled.exit_code == 2 and "use --csi raw" in scaled.stderr


def test_windows_map_esp32_data_subcarriers():
    from rfbench.datasets.windows.hardware import read_hardware_csi

    values = []
    for k in list(range(32)) + list(range(-32, 0)):  # LLTF order; the value of subcarrier k is k (real)
        values += [0, k if -26 <= k <= 26 and k else 99]  # guard and DC bins hold 99: never read
    line = ("CSI_DATA,AP,3C:71:BF:6D:2A:78,-73,11,1,0,0,1,1,0,0,0,0,-93,0,1,1,80272146,0,101,0,0,80.363225,128,["
            + " ".join(map(str, values)) + " ]\n")
    csi = read_hardware_csi(line.encode(), "esp32", "x.csv", 56, 20).csi
    # -26..26 without 0 stretched onto -28..28 without 0 (band edges aligned): the ends are -26 and 26
    assert csi.shape == (1, 56, 1, 1) and csi[0, 0, 0, 0] == -26 and csi[0, -1, 0, 0] == 26
    assert np.all(np.abs(csi.real) <= 26)


@pytest.mark.parametrize("fmt", ["atheros", "nexmon", "esp32"])
def test_windows_map_a_log_of_mixed_subcarrier_sets_group_by_group(fmt):
    # a log whose records differ in subcarrier sets (Atheros 56 and 114 tones, nexmon 20 and 40 MHz frames, an
    # ESP32 line with a short list) maps each record from its own set: every row equals that record's row when
    # its group is read as a log of its own
    from rfbench.datasets.windows.hardware import read_hardware_csi
    from rfbench.io import nexmon

    rng = np.random.default_rng(12)
    if fmt == "atheros":
        parts = [atheros.synthesize(rng, 3, tones=56), atheros.synthesize(rng, 2, tones=114)]
        mixed = parts[0] + parts[1]
    elif fmt == "nexmon":
        a = nexmon.synthesize(1, 3, chip="bcm43455c0", bandwidth_mhz=20)
        b = nexmon.synthesize(2, 2, chip="bcm43455c0", bandwidth_mhz=40)
        parts, mixed = [a, b], a + b[24:]  # one pcap: b's records after a's
    else:
        full = esp32.synthesize(rng, 3, header=False).decode().splitlines()
        short = esp32.synthesize(rng, 2, n_values=100, header=False)
        parts = [("\n".join(full) + "\n").encode(), short]
        mixed = parts[0] + parts[1]
    log = hwlog.reader(fmt).read(mixed)
    assert np.asarray(log.subcarriers).ndim == 2  # the records differ: one row of indices each
    for grid, bandwidth in ((56, 20), (114, 40)):  # (114: the narrower sets stretched, points near DC between)
        got = read_hardware_csi(mixed, fmt, "x", grid, bandwidth).csi
        want = np.concatenate([read_hardware_csi(p, fmt, "x", grid, bandwidth).csi for p in parts])
        assert got.shape[0] == want.shape[0] == log.n_records
        r, t = want.shape[2], want.shape[3]
        np.testing.assert_array_equal(got[:, :, :r, :t], want)


@pytest.mark.long
def test_real_captures_detected():
    from tests.conftest import conformance_path

    intel = conformance_path("intel5300")
    for path in sorted(intel.glob("*")):
        if path.suffix in (".dat", ".6") or path.name.startswith("log."):
            if path.suffix == ".npz":
                continue
            assert parse_files._looks_intel(np.frombuffer(path.read_bytes(), np.uint8)), path.name
    hardware = conformance_path("hardware")
    assert parse_files.detect_format((hardware / "ath_csi_1.dat").read_bytes()) == "atheros"
    assert parse_files.detect_format((hardware / "example_csi.csv").read_bytes()) == "esp32"


def test_summary_time_span_from_any_time_field():
    log = esp32.read(esp32.synthesize(np.random.default_rng(0), 3))
    assert log.summary()["time_span_s"] == pytest.approx(0.008)  # local_timestamp 4000 µs apart
    import dataclasses

    pcap_like = dataclasses.replace(log, meta={"timestamp_sec": np.array([10, 11, 11], np.uint32),
                                               "timestamp_usec": np.array([900_000, 100_000, 400_000], np.uint32)})
    assert pcap_like.summary()["time_span_s"] == pytest.approx(0.5)
    assert pcap_like.summary()["packet_rate_hz"] == pytest.approx(4.0)


def test_windows_grid_is_symmetric_about_dc():
    from types import SimpleNamespace

    from rfbench.datasets.windows.hardware import _data_columns

    fft = SimpleNamespace(format="atheros", subcarriers=np.r_[np.arange(0, 4), np.arange(-4, 0)])  # 0..3, -4..-1
    cols, idx = _data_columns(fft)
    assert idx.tolist() == [-3, -2, -1, 0, 1, 2, 3] and cols.tolist() == [5, 6, 7, 0, 1, 2, 3]
    esp = SimpleNamespace(format="esp32", subcarriers=esp32._subcarriers(64))
    assert _data_columns(esp)[1].tolist() == list(range(-26, 0)) + list(range(1, 27))


@pytest.mark.parametrize("bandwidth, kept, edge", [(20, 56, 28), (40, 114, 58), (80, 242, 122)])
def test_windows_leave_out_nexmon_guard_and_dc_bins(bandwidth, kept, edge):
    """nexmon_csi reports every FFT bin; its guard and DC bins hold noise, not zeros (none of output-40.pcap's
    128 columns is near zero), so windows leave them out by the frame's bandwidth."""
    from rfbench.datasets.windows.hardware import _data_columns
    from rfbench.io import nexmon

    log = nexmon.read(nexmon.synthesize(np.random.default_rng(0), 2, chip="bcm43455c0", bandwidth_mhz=bandwidth))
    cols, idx = _data_columns(log)
    assert len(idx) == kept and idx.min() == -edge and idx.max() == edge
    dc = {20: {0}, 40: {-1, 0, 1}, 80: {-1, 0, 1}}[bandwidth]
    assert not dc & set(idx.tolist())
    assert np.asarray(log.subcarriers)[cols].tolist() == idx.tolist()


def _arrays(log):
    return {"csi": log.csi, "num_tones": log.num_tones, "n_rx": log.n_rx, "n_tx": log.n_tx,
            "subcarriers": log.subcarriers, **dict(log.meta)}


@pytest.mark.parametrize("fmt", ["atheros", "esp32", "nexmon", "picoscenes"])
def test_reused_read_buffer_never_shows_in_a_result(tmp_path, fmt):
    # readers that read a path into the thread's reused buffer keep no view of it: a log read before another
    # file is unchanged after, and none of its arrays shares the buffer's memory
    module = hwlog.reader(fmt)
    first, second = tmp_path / "a.bin", tmp_path / "b.bin"
    first.write_bytes(module.synthesize(np.random.default_rng(1), 5))
    second.write_bytes(module.synthesize(np.random.default_rng(2), 8))
    module.read(second)  # the buffer is now large enough for both
    log = module.read(first)
    kept = {k: np.array(v, copy=True) for k, v in _arrays(log).items()}
    module.read(second)
    buf = getattr(hwlog._REUSED, "buf", None)
    for name, values in _arrays(log).items():
        np.testing.assert_array_equal(values, kept[name], err_msg=name)
        assert buf is None or not np.shares_memory(np.asarray(values), buf), name


def test_a_file_no_reader_takes_names_every_format_tried(runner, tmp_path):
    junk = tmp_path / "notes.txt"
    junk.write_bytes(b"hello, this is no CSI log at all\n" * 20)
    job = parse_files.parse_many([(junk, None)], parse_files.ParseOptions(out_dir=tmp_path / "out"))
    error = job.files[0]["error"]
    assert error == ("no known CSI log: tried Intel 5300, Atheros, nexmon pcap, ESP32 CSV and PicoScenes, and "
                     "none fits the bytes")
    result = runner.invoke(app, ["parse", str(junk), "-o", str(tmp_path / "o")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    # forced to the Intel reader, or a file framed as Intel records, the Intel reader's own line stays
    job = parse_files.parse_many([(junk, None)], parse_files.ParseOptions(out_dir=tmp_path / "out2",
                                                                          format="intel5300"))
    assert job.files[0]["error"].startswith("no valid Intel 5300 CSI record")


def test_reused_read_of_a_file_over_the_buffer_limit(tmp_path, monkeypatch):
    # a file larger than REUSED_MAX_BYTES gets an array of its own and leaves the thread's buffer as it was
    path = tmp_path / "big.dat"
    data = atheros.synthesize(np.random.default_rng(4), 6, nr=3, nc=2)
    path.write_bytes(data)
    small = tmp_path / "small.dat"
    small.write_bytes(data[:100])
    hwlog.read_reused(small, "x")  # the thread now has a buffer
    monkeypatch.setattr(hwlog, "REUSED_MAX_BYTES", len(data) - 1)
    own, where = hwlog.read_reused(path, "x")
    assert own.tobytes() == data and where == str(path) and not np.shares_memory(own, hwlog._REUSED.buf)
    np.testing.assert_array_equal(atheros.read(path).csi, atheros.read(data).csi)
    with pytest.raises(FormatError, match="more than the 10 rfbench reads"):
        hwlog.read_reused(path, "x", cap=10)


def test_two_thread_read_gives_the_file_bytes(tmp_path, monkeypatch):
    # a file over SPLIT_READ_MIN_BYTES is read in two halves on two threads: the same bytes as one read, odd
    # sizes included, and the second thread is really used when it is free
    rng = np.random.default_rng(5)
    used = []
    real = hwlog.on_two_threads
    monkeypatch.setattr(hwlog, "on_two_threads", lambda *a, **k: used.append(real(*a, **k)) or used[-1])
    monkeypatch.setattr(hwlog, "SPLIT_READ_MIN_BYTES", 1000)
    for size in (999, 1000, 1001, 77_777):
        data = rng.integers(0, 256, size=size, dtype=np.uint8).tobytes()
        path = tmp_path / f"f{size}.bin"
        path.write_bytes(data)
        got, _ = hwlog.read_reused(path, "x")
        assert got.tobytes() == data, size
    assert len(used) == 3
    if (os.cpu_count() or 1) > 1:
        assert all(used)


def test_two_thread_read_of_a_file_that_shrinks(tmp_path, monkeypatch):
    # the second half finds the end early (the file shrank after its size was taken): what was read, from
    # the start, and never stale bytes of the buffer; a first half cut short gives only its own run
    path = tmp_path / "f.bin"
    data = bytes(range(256)) * 40
    path.write_bytes(data)
    monkeypatch.setattr(hwlog, "SPLIT_READ_MIN_BYTES", 1)
    real_read = hwlog._read_full
    for cut in (len(data) // 2 + 100, 300):
        def shrinking(fd, view, offset, cut=cut):
            os.truncate(path, cut)
            return real_read(fd, view, offset)
        path.write_bytes(data)
        monkeypatch.setattr(hwlog, "_read_full", shrinking)
        got, _ = hwlog.read_reused(path, "x")
        assert got.tobytes() == data[:cut]
        monkeypatch.setattr(hwlog, "_read_full", real_read)


def test_on_two_threads_runs_both_and_raises_either_failure():
    ran = []
    assert hwlog.on_two_threads(lambda: ran.append(1), lambda: ran.append(2), wanted=False) is False
    assert ran == [1, 2]
    ran.clear()
    hwlog.on_two_threads(lambda: ran.append(threading.get_ident()), lambda: ran.append(threading.get_ident()))
    assert len(ran) == 2 and ((os.cpu_count() or 1) < 2 or ran[0] != ran[1])
    # the one extra thread taken elsewhere: both run here, in order
    assert hwlog._SECOND_THREAD.acquire(blocking=False)
    try:
        ran.clear()
        assert hwlog.on_two_threads(lambda: ran.append(1), lambda: ran.append(2)) is False and ran == [1, 2]
    finally:
        hwlog._SECOND_THREAD.release()

    def boom():
        raise MemoryError("second")

    with pytest.raises(MemoryError, match="second"):
        hwlog.on_two_threads(lambda: None, boom)
    assert hwlog._SECOND_THREAD.acquire(blocking=False)  # released after a failure
    hwlog._SECOND_THREAD.release()


def test_word_view_holds_the_64_bit_word_at_every_byte(tmp_path):
    # one load per word wherever it starts (the Atheros groups, PicoScenes fields): words[q] is bytes q..q+7
    # little-endian, for a buffer from read_reused(pad=...) (a view, no copy) and any other array (a padded copy)
    rng = np.random.default_rng(8)
    for size in (0, 1, 7, 8, 9, 167, 1000):
        data = rng.integers(0, 256, size=size, dtype=np.uint8).tobytes()
        path = tmp_path / f"{size}.bin"
        path.write_bytes(data)
        b, _ = hwlog.read_reused(path, "x", pad=hwlog.WORD_PAD)
        for source in (b, np.frombuffer(data, dtype=np.uint8)):
            words = hwlog.byte_words(source)
            assert (words.ctypes.data == source.ctypes.data) == (source is b)  # a view of read_reused's buffer
            for q in range(max(0, size - 4)):
                want = int.from_bytes(data[q:q + 8].ljust(8, b"\0"), "little")
                assert int(words[q]) & ((1 << 40) - 1) == want & ((1 << 40) - 1), (size, q)
    # bytes input to read_reused with pad: copied, with the padding after it
    b, _ = hwlog.read_reused(b"abc", "x", pad=16)
    assert b.tobytes() == b"abc" and b.base.size >= 3 + 16
