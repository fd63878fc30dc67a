"""Intel 5300 corpora (Widar-like trees of real bfee logs): packet windows per receiver, resampled recordings,
raw and scaled CSI, subcarrier interpolation, exclusions, and labels as names."""

from __future__ import annotations

import numpy as np
import pytest

from rfbench.csi.subcarrier import resample_subcarriers
from rfbench.datasets.windows import WindowSettings, build_windows, side_targets, write_windows
from rfbench.errors import ValidationError
from rfbench.io import intel5300
from tests.windowsdata import widar_case


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    return widar_case(tmp_path_factory.mktemp("widar"))


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    return widar_case(tmp_path_factory.mktemp("widar-damaged"), damage=True)


def _log(root, manifest_rec, receiver):
    (f,) = [f for f in manifest_rec["files"] if f["receiver"] == receiver]
    return intel5300.read(root / f["path"])


def _amp(csi):
    """The float32 nearest each exact amplitude: |csi| in float64, then rounded once."""
    return np.abs(csi.astype(np.complex128)).astype(np.float32)


def _records(manifest_path):
    from rfbench.datasets.manifest import read_manifest

    return {r["id"]: r for r in read_manifest(manifest_path).recordings}


def test_packet_windows_per_receiver_hold_that_receivers_amplitudes(clean):
    root, manifest, split = clean
    w = build_windows(split, "test", WindowSettings(length=8, stride=4))
    recs = _records(manifest)
    assert w.index["x"]["axes"] == ["window", "packet", "feature", "subcarrier", "rx", "tx"]
    assert w.x.shape[1:] == (8, 1, 30, 3, 1)
    rows = w.index["rows"]
    first = rows[0]["id"]
    for r in range(1, 7):
        n = _log(root, recs[first], r).n_records
        starts = [row["start"] for row in rows if row["id"] == first and row["receiver"] == r]
        assert starts == list(range(0, n - 8 + 1, 4))  # (n - 8) // 4 + 1 windows, each receiver its own count
    for k in (0, 5, len(rows) - 1):
        row = rows[k]
        csi = _log(root, recs[row["id"]], row["receiver"]).csi
        np.testing.assert_array_equal(w.x[k, :, 0], _amp(csi[row["start"]:row["stop"]]))
    assert any("not time-aligned" in n for n in w.index["notes"])
    assert w.index["x"]["receivers"] == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("settings", [WindowSettings(length=8), WindowSettings(length=5, stride=5)])
def test_non_overlapping_windows_hold_every_receivers_amplitudes_in_order(clean, settings):
    # The default stride is the length: those windows are computed straight into X (one pass less than the
    # general path), which must give exactly the windows the general path gives.
    root, manifest, split = clean
    w = build_windows(split, "test", settings)
    recs = _records(manifest)
    rows = w.index["rows"]
    length = settings.length
    for rid in sorted({row["id"] for row in rows})[:3]:
        for r in range(1, 7):
            n = _log(root, recs[rid], r).n_records
            mine = [k for k, row in enumerate(rows) if row["id"] == rid and row["receiver"] == r]
            assert [rows[k]["start"] for k in mine] == list(range(0, n // length * length, length))
            csi = _log(root, recs[rid], r).csi
            for k in mine:
                np.testing.assert_array_equal(w.x[k, :, 0], _amp(csi[rows[k]["start"]:rows[k]["stop"]]))


@pytest.mark.parametrize("kw", [{}, {"csi": "scaled"}, {"subcarriers": 56}, {"features": "amp,phase"},
                                {"features": "phase", "csi": "scaled", "subcarriers": 114}])
def test_non_overlapping_windows_equal_the_same_windows_taken_from_overlapping_ones(clean, kw):
    # Non-overlapping windows (stride = length, the default) have their features computed straight into X; the
    # windows they share with a half-stride run (computed per receiver, then cut out) must be the same bits.
    _, _, split = clean
    direct = build_windows(split, "test", WindowSettings(length=6, stride=6, **kw))
    halves = build_windows(split, "test", WindowSettings(length=6, stride=3, **kw))
    where = {(r["id"], r["receiver"], r["start"]): k for k, r in enumerate(halves.index["rows"])}
    picked = [where[(r["id"], r["receiver"], r["start"])] for r in direct.index["rows"]]
    assert len(picked) == len(direct.index["rows"]) > 0
    np.testing.assert_array_equal(direct.x, halves.x[picked])


def test_labels_are_the_gesture_names_of_the_whole_manifest(clean):
    _, manifest, split = clean
    w = build_windows(split, "test", WindowSettings(length=8))
    recs = _records(manifest)
    names = sorted({r["gesture"] for r in recs.values() if r["gesture"]})
    assert w.index["labels"]["names"] == names and w.index["labels"]["key"] == "label"  # label = gesture name
    for k, row in enumerate(w.index["rows"]):
        assert names[w.y[k]] == recs[row["id"]]["gesture"]
    train = side_targets(split, "train", WindowSettings(length=8))
    assert train.labels["names"] == names  # one label set, shared by both sides


def test_resampled_recordings_interpolate_each_receiver_over_its_packet_index(clean):
    root, manifest, split = clean
    w = build_windows(split, "test", WindowSettings(resample=7, features="amp,phase"))
    recs = _records(manifest)
    assert w.x.shape[1:] == (6, 7, 2, 30, 3, 1)
    row = w.index["rows"][2]
    csi = _log(root, recs[row["id"]], 4).csi  # receiver r4 is axis-1 position 3
    n = csi.shape[0]
    pos = np.linspace(0, n - 1, 7)
    flat = csi.reshape(n, -1).astype(np.complex128)
    at = np.arange(n)
    interp = np.stack([np.interp(pos, at, flat[:, j].real) + 1j * np.interp(pos, at, flat[:, j].imag)
                       for j in range(flat.shape[1])], axis=1).reshape(7, *csi.shape[1:])
    np.testing.assert_allclose(w.x[2, 3, :, 0], np.abs(interp), rtol=1e-6)
    np.testing.assert_allclose(w.x[2, 3, :, 1], np.angle(interp), rtol=1e-5, atol=1e-6)
    counts = [_log(root, recs[row["id"]], r).n_records for r in range(1, 7)]
    assert row["packets"] == counts and (row["start"], row["stop"]) == (0, max(counts))


def test_subcarriers_use_the_subcarrier_resampling(clean):
    root, manifest, split = clean
    recs = _records(manifest)
    for sub, dst, span in ((56, "ht20-56", "index"), (114, "ht40-114", "band")):
        w = build_windows(split, "test", WindowSettings(length=4, subcarriers=sub))
        assert w.index["x"]["subcarrier_map"] == {"from": "intel30-20", "to": dst, "span": span}
        row = w.index["rows"][1]
        csi = _log(root, recs[row["id"]], row["receiver"]).csi
        expected = _amp(resample_subcarriers(csi, "intel30-20", dst, axis=1, span=span))
        np.testing.assert_array_equal(w.x[1, :, 0], expected[row["start"]:row["stop"]])


def test_scaled_csi_by_option(clean):
    root, manifest, split = clean
    w = build_windows(split, "test", WindowSettings(length=4, csi="scaled"))
    row = w.index["rows"][0]
    log = _log(root, _records(manifest)[row["id"]], row["receiver"])
    np.testing.assert_array_equal(w.x[0, :, 0], _amp(log.scaled_csi()[:4]))


def test_damaged_recordings_are_excluded_and_listed(damaged):
    _, _, split = damaged
    w = build_windows(split, "train", WindowSettings(length=4))
    reasons = {e["id"]: e["reason"] for e in w.index["excluded"]}
    assert reasons["20181109/user1-1-1-2-1"] == "empty receiver file r3"
    assert reasons["20181117/user2-1-2-3-1"] == "missing receiver r6"
    assert reasons["20181117/user3-1-3-4-1"] == "receiver r2 has no valid CSI record"
    test = build_windows(split, "test", WindowSettings(length=4))
    assert {"id": "20181211/user4-7-1-1-1", "kind": "label", "reason": "no label (the manifest's 'label' is empty)"} \
        in test.index["excluded"]
    kinds = {e["id"]: e["kind"] for e in w.index["excluded"]}
    assert (kinds["20181109/user1-1-1-2-1"], kinds["20181117/user2-1-2-3-1"], kinds["20181117/user3-1-3-4-1"]) == \
        ("empty-part", "missing-part", "empty-part")
    assert not {e["id"] for e in w.index["excluded"]} & {r["id"] for r in w.index["rows"]}


def test_a_receiver_whose_every_record_has_another_shape_excludes_its_recording(tmp_path):
    from rfbench.io.writer import synthetic_log

    def two_rx(root):
        p = next((root / "CSI" / "20181211" / "user1").glob("*-r2.dat"))
        p.write_bytes(synthetic_log(15, nrx=2, ntx=1, seed=5))
    root, manifest, split = widar_case(tmp_path, edit_tree=two_rx)
    for policy in ("drop-records", "drop-recording"):
        w = build_windows(split, "test", WindowSettings(length=4, odd_records=policy))
        (bad,) = [e for e in w.index["excluded"] if "shape" in e["reason"]]
        assert bad["kind"] == "odd-records"
        assert bad["reason"] == ("receiver r2: every record (15) has another antenna shape than 3x1 (e.g. 2x1); set "
                                 "`antennas` to the corpus's shape")
        assert w.index["dropped"] == []  # an excluded recording lists no dropped record
    with pytest.raises(ValidationError, match="gives no row"):
        build_windows(split, "test", WindowSettings(length=4, antennas="1x1"))
    with pytest.raises(ValidationError, match=r"-r2.dat: record 0 has antenna shape 2x1, not the `antennas` 3x1 "
                                              r"\(15 such record\(s\) in this log\)"):
        build_windows(split, "test", WindowSettings(length=4, odd_records="refuse"))
    # Written, the rows announced from the manifest's packet counts include that recording: the writer finds
    # out while reading and writes again, so the file holds exactly the rows read.
    doc = write_windows(split, "test", tmp_path / "out", WindowSettings(length=4))
    assert doc["rows"] == w.index["rows"] and doc["excluded"] == w.index["excluded"]
    assert np.load(tmp_path / "out" / "X.npy").tobytes() == w.x.tobytes()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["X.npy", "index.json", "y.npy"]


def _mixed_log(n, odd, seed, nrx=3, ntx=1, odd_shape=(3, 2)):
    """A log of ``n`` records of shape nrx x ntx, except the records at positions ``odd`` (of ``odd_shape``),
    with the arrays of the kept records (csi, rssi_a) a reader must find."""
    from rfbench.io.writer import synthetic_log

    pieces = []
    for k in range(n):
        shape = odd_shape if k in odd else (nrx, ntx)
        pieces.append(synthetic_log(1, nrx=shape[0], ntx=shape[1], seed=seed * 1000 + k))
    return b"".join(pieces)


def test_odd_records_are_dropped_one_by_one_and_listed(tmp_path):
    odd = {2, 3, 9}

    def mixed(root):
        p = next((root / "CSI" / "20181211" / "user1").glob("*-r2.dat"))
        p.write_bytes(_mixed_log(20, odd, seed=7))
    root, manifest, split = widar_case(tmp_path, edit_tree=mixed, records=(20, 20))
    w = build_windows(split, "test", WindowSettings(length=4))
    path = next(f["path"] for r in _records(manifest).values() for f in r["files"]
                if f["path"].startswith("CSI/20181211/user1/") and f["path"].endswith("-r2.dat"))
    rid = next(r["id"] for r in _records(manifest).values() if any(f["path"] == path for f in r["files"]))
    assert w.index["dropped"] == [{"recording": rid, "file": path, "record": k, "reason": "antenna shape 3x2, not 3x1"}
                                  for k in sorted(odd)]
    assert rid not in {e["id"] for e in w.index["excluded"]}
    # the receiver's windows are cut from its 17 fitting records, in order: 4 windows of 4
    log = intel5300.read(root / path)
    kept = [k for k in range(20) if k not in odd]
    rows = [(k, r) for k, r in enumerate(w.index["rows"]) if r["id"] == rid and r["receiver"] == 2]
    assert [r["start"] for _, r in rows] == [0, 4, 8, 12]
    for k, r in rows:
        np.testing.assert_array_equal(w.x[k, :, 0], _amp(log.csi[kept[r["start"]:r["stop"]], :, :3, :1]))
    # the other policies: the recording excluded, or an error naming the first odd record
    w2 = build_windows(split, "test", WindowSettings(length=4, odd_records="drop-recording"))
    assert {"id": rid, "kind": "odd-records", "reason": "receiver r2 has 3 record(s) of antenna shape 3x2 (expected "
            "3x1)"} in w2.index["excluded"] and w2.index["dropped"] == []
    with pytest.raises(ValidationError, match="record 2 has antenna shape 3x2"):
        build_windows(split, "test", WindowSettings(length=4, odd_records="refuse"))
    # resampled rows use the same 17 records
    r = build_windows(split, "test", WindowSettings(resample=5))
    (row,) = [row for row in r.index["rows"] if row["id"] == rid]
    assert row["packets"][1] == 17 and len(r.index["dropped"]) == 3


def test_written_packet_windows_equal_the_in_memory_ones(clean, tmp_path):
    _, _, split = clean
    for settings in (WindowSettings(length=8, stride=3, features="amp,phase"), WindowSettings(resample=5)):
        w = build_windows(split, "train", settings)
        doc = write_windows(split, "train", tmp_path / "out", settings, force=True)
        assert doc["rows"] == w.index["rows"]
        assert np.load(tmp_path / "out" / "X.npy").tobytes() == w.x.tobytes()
        assert np.load(tmp_path / "out" / "y.npy").tolist() == w.y.tolist()


def test_integer_looking_labels_are_names_in_natural_order(tmp_path):
    def relabel(doc):
        for k, rec in enumerate(doc["recordings"]):
            rec["label"] = ("10", "2", "7")[k % 3]  # integer-looking names stay names (manifests store text)
    _, manifest, split = widar_case(tmp_path, edit=relabel)
    w = build_windows(split, "test", WindowSettings(length=8))
    # names, listed 2, 7, 10 (natural order), never read as indices: "2" is class 0
    assert w.index["labels"]["names"] == ["2", "7", "10"] and w.index["labels"]["key"] == "label"
    recs = _records(manifest)
    for k, row in enumerate(w.index["rows"]):
        assert w.index["labels"]["names"][w.y[k]] == str(recs[row["id"]]["label"])


def test_a_label_set_file_fixes_the_order_and_excludes_other_labels(clean, tmp_path):
    _, manifest, split = clean
    names = tmp_path / "names.txt"
    names.write_text("Sweep\nClap\n")  # the test side holds Push&Pull and Sweep recordings
    w = build_windows(split, "test", WindowSettings(length=8, label_set=str(names)))
    assert w.index["labels"]["names"] == ["Sweep", "Clap"] and w.index["labels"]["source"] == "label-set"
    recs = _records(manifest)
    assert w.y.tolist() == [0] * len(w.y)
    assert {recs[row["id"]]["gesture"] for row in w.index["rows"]} == {"Sweep"}
    others = [e for e in w.index["excluded"] if "not in the label set" in e["reason"]]
    assert others and {recs[e["id"]]["gesture"] for e in others} == {"Push&Pull"}
    assert others[0]["reason"] == "label 'Push&Pull' is not in the label set"


def test_a_log_that_parses_to_another_record_count_than_ingest_is_refused(tmp_path):
    def miscount(doc):
        doc["recordings"][-1]["files"][0]["records"] += 1
    _, _, split = widar_case(tmp_path, edit=miscount)
    with pytest.raises(ValidationError, match="but ingest counted"):
        build_windows(split, "test", WindowSettings(length=4))


def test_raw_features_are_the_nearest_float32_for_every_int8_pair():
    from rfbench.datasets.windows.features import features

    re, im = np.meshgrid(np.arange(-128, 128), np.arange(-128, 128))
    pairs = np.stack([re, im], axis=-1).astype(np.int8).reshape(-1, 1, 1, 1, 2)  # all 65,536 raw values
    csi = (re + 1j * im).astype(np.complex64).reshape(-1, 1, 1, 1)
    got = features(pairs, ("amp", "phase"), "all-pairs")
    np.testing.assert_array_equal(got[:, 0], _amp(csi))
    np.testing.assert_array_equal(got[:, 1], np.angle(csi.astype(np.complex128)).astype(np.float32))
    np.testing.assert_array_equal(features(pairs, ("amp",), "all-pairs")[:, 0], _amp(csi))
    np.testing.assert_array_equal(features(csi, ("amp", "phase"), "complex"), got)  # the complex path agrees


def test_both_sides_at_once_with_odd_records_are_the_files_of_one_run_per_side(tmp_path):
    # the test side holds a log with records of another antenna shape: its rows are counted again as it is read
    def mixed(root):
        p = next((root / "CSI" / "20181211" / "user1").glob("*-r2.dat"))
        p.write_bytes(_mixed_log(20, {2, 3, 9}, seed=7))
    _, _, split = widar_case(tmp_path, edit_tree=mixed, records=(20, 20))
    settings = WindowSettings(length=4)
    docs = write_windows(split, "both", tmp_path / "both", settings)
    assert docs["test"]["dropped"] and not docs["train"]["dropped"]
    for side in ("train", "test"):
        write_windows(split, side, tmp_path / "one" / side, settings)
        for name in ("X.npy", "y.npy", "index.json"):
            assert (tmp_path / "both" / side / name).read_bytes() == (tmp_path / "one" / side / name).read_bytes()
