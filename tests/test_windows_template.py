"""``rfbench windows`` over corpora ingested with ``rfbench ingest files``: one log per recording, or the files
of a recording grouped by ``recording_by`` with the remaining field as the receiver; the same model inputs as
Widar3.0 (packet windows or resampled rows, raw or scaled, amplitude and phase), odd records by policy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rfbench.datasets import files
from rfbench.datasets.windows import WindowSettings, build_windows, write_windows
from rfbench.errors import ValidationError
from rfbench.io import intel5300
from rfbench.io.writer import synthetic_log
from tests.windowsdata import write_split


def _amp(csi):
    return np.abs(csi.astype(np.complex128)).astype(np.float32)


def _put(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _mixed(n, odd, seed, odd_shape=(3, 2)):
    return b"".join(synthetic_log(1, nrx=odd_shape[0] if k in odd else 3, ntx=odd_shape[1] if k in odd else 1,
                                  seed=seed * 1000 + k) for k in range(n))


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    """{user}_{gesture}_{rep}.dat: users ann, bob, cat; gestures 1, 2, 10; one log per recording."""
    tmp = tmp_path_factory.mktemp("single")
    root = tmp / "tree"
    k = 0
    for user in ("ann", "bob", "cat"):
        for gesture in (1, 2, 10):
            for rep in (1, 2):
                k += 1
                data = _mixed(24 + k, {5} if (user, gesture, rep) == ("cat", 2, 1) else set(), seed=k)
                _put(root / f"{user}_{gesture}_{rep}.dat", data)
    _put(root / "README.md", b"not a log\n")
    manifest = tmp / "m.json"
    files.ingest(root, "{user}_{gesture}_{rep}.dat", roles={"label": "gesture", "subject": "user"},
                 dataset="toy").write(manifest)
    split = tmp / "split.json"
    write_split(manifest, split, "cross-subject", test=["cat"])
    return root, manifest, split


def test_one_log_per_recording_gives_packet_windows_of_that_log(single):
    root, _, split = single
    w = build_windows(split, "test", WindowSettings(length=8, stride=8))
    assert w.index["dataset"] == "toy" and w.index["x"]["axes"] == ["window", "packet", "feature", "subcarrier", "rx",
                                                                       "tx"]
    assert w.index["x"]["receiver_key"] is None and w.index["x"]["receivers"] == [None]
    assert all(set(r) == {"id", "start", "stop"} for r in w.index["rows"])  # no receiver: the log is the recording
    assert w.index["labels"]["names"] == ["1", "2", "10"]  # names in natural order, the same for both sides
    for k, row in enumerate(w.index["rows"]):
        log = intel5300.read(root / row["id"])
        if row["id"] == "cat_2_1.dat":
            continue  # one record of another shape: below
        np.testing.assert_array_equal(w.x[k, :, 0], _amp(log.csi[row["start"]:row["stop"]]))
        assert w.index["labels"]["names"][w.y[k]] == row["id"].split("_")[1]
    # the odd record of cat_2_1.dat (position 5, shape 3x2) is left out of its packets and listed
    assert w.index["dropped"] == [{"recording": "cat_2_1.dat", "file": "cat_2_1.dat", "record": 5,
                                   "reason": "antenna shape 3x2, not 3x1"}]
    log = intel5300.read(root / "cat_2_1.dat")
    kept = [i for i in range(log.n_records) if i != 5]
    rows = [(k, r) for k, r in enumerate(w.index["rows"]) if r["id"] == "cat_2_1.dat"]
    assert len(rows) == (log.n_records - 1) // 8
    for k, r in rows:
        np.testing.assert_array_equal(w.x[k, :, 0], _amp(log.csi[kept[r["start"]:r["stop"]], :, :, :1]))


def test_resampled_and_scaled_rows_and_phase(single):
    root, _, split = single
    w = build_windows(split, "train", WindowSettings(resample=16, features="amp,phase", csi="scaled"))
    assert w.x.shape == (12, 1, 16, 2, 30, 3, 1)
    assert w.index["x"]["axes"][:2] == ["recording", "receiver"]
    row = w.index["rows"][0]
    log = intel5300.read(root / row["id"])
    assert row["packets"] == [log.n_records] and row["stop"] == log.n_records
    from rfbench.csi.subcarrier import resample_subcarriers

    n = log.n_records
    scaled = resample_subcarriers(log.scaled_csi(), np.arange(n, dtype=np.float64), np.linspace(0, n - 1, 16), axis=0)
    np.testing.assert_array_equal(w.x[0, 0, :, 0], np.abs(scaled).astype(np.float32))
    np.testing.assert_array_equal(w.x[0, 0, :, 1], np.angle(scaled).astype(np.float32))


def test_written_windows_equal_the_in_memory_ones_and_the_odd_record_policy_applies(single, tmp_path):
    _, _, split = single
    settings = WindowSettings(length=4)
    w = build_windows(split, "test", settings)
    doc = write_windows(split, "test", tmp_path / "o", settings)
    assert doc["rows"] == w.index["rows"] and doc["dropped"] == w.index["dropped"]
    assert np.load(tmp_path / "o" / "X.npy").tobytes() == w.x.tobytes()
    w = build_windows(split, "test", WindowSettings(length=4, odd_records="drop-recording"))
    assert w.index["excluded"] == [{"id": "cat_2_1.dat", "kind": "odd-records",
                                    "reason": "the log has 1 record(s) of antenna shape 3x2 (expected 3x1)"}]
    with pytest.raises(ValidationError, match=r"^cat_2_1.dat: record 5 has antenna shape 3x2"):
        build_windows(split, "test", WindowSettings(length=4, odd_records="refuse"))


@pytest.fixture(scope="module")
def grouped(tmp_path_factory):
    """{user}_{gesture}_rx{rx}.dat grouped by user and gesture: rx 1-3 are a recording's receivers; bob_2 lacks rx3."""
    tmp = tmp_path_factory.mktemp("grouped")
    root = tmp / "tree"
    k = 0
    for user in ("ann", "bob"):
        for gesture in (1, 2, 3):
            for rx in (1, 2, 3):
                if (user, gesture, rx) == ("bob", 2, 3):
                    continue
                k += 1
                _put(root / f"{user}_{gesture}_rx{rx}.dat", synthetic_log(20 + 3 * k, seed=k))
    manifest = tmp / "m.json"
    files.ingest(root, "{user}_{gesture}_rx{rx}.dat", recording_by=["user", "gesture"],
                 roles={"label": "gesture", "subject": "user"}).write(manifest)
    split = tmp / "split.json"
    write_split(manifest, split, "cross-subject", test=["bob"])
    return root, manifest, split


def test_grouped_parts_are_receivers(grouped):
    root, _, split = grouped
    w = build_windows(split, "test", WindowSettings(length=8))
    assert w.index["x"]["receiver_key"] == "rx" and w.index["x"]["receivers"] == [1, 2, 3]
    assert w.index["excluded"] == [{"id": "bob_2_rx*.dat", "kind": "missing-part", "reason": "missing receiver rx 3"}]
    for k, row in enumerate(w.index["rows"]):
        log = intel5300.read(root / row["id"].replace("*", str(row["receiver"])))
        np.testing.assert_array_equal(w.x[k, :, 0], _amp(log.csi[row["start"]:row["stop"]]))
    assert {r["receiver"] for r in w.index["rows"]} == {1, 2, 3}
    r = build_windows(split, "train", WindowSettings(resample=10))
    assert r.x.shape == (3, 3, 10, 1, 30, 3, 1)
    assert any("receivers along axis 1: rx 1, rx 2, rx 3" in n for n in r.index["notes"])


def test_a_corpus_of_two_part_fields_is_refused_with_the_fix(tmp_path):
    root = tmp_path / "tree"
    names = [(user, g, rx, ant) for user in ("ann", "bob") for g in ("x", "y") for rx in (1, 2) for ant in "ab"]
    for k, (user, g, rx, ant) in enumerate(names):  # two recordings per class, so a split shares its classes
        _put(root / f"{user}-{g}_{rx}_{ant}.dat", synthetic_log(12, seed=k))
    manifest = tmp_path / "m.json"
    files.ingest(root, "{user}-{g}_{rx}_{ant}.dat", recording_by=["user", "g"], roles={"label": "g"}).write(manifest)
    split = tmp_path / "split.json"
    write_split(manifest, split, "random", allow_leaky=True, seed=0)
    with pytest.raises(ValidationError, match=r"named by 2 fields \(rx, ant\).*--recording-by"):
        build_windows(split, "test", WindowSettings(length=4))
