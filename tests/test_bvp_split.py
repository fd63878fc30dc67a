"""Widar3.0's protocols on BVP manifests: in-domain (seeded, stratified, leakage-prone), the cross-domain ones,
the ``--gestures`` filter with its ``common6`` preset, and recordings of one capture kept on one side."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rfbench.cli import app
from rfbench.datasets.manifest import Manifest, RecordingTable
from rfbench.datasets.widar_bvp import COMMON6
from rfbench.errors import ValidationError
from rfbench.protocols.leakage import CHECK_CAPTURES, audit_sides
from rfbench.protocols.split import TEST, TRAIN, assign, make_splits, write_splits
from rfbench.protocols.splitfile import check_split_file


def _recordings(extra_gesture: bool = True, links: int = 1) -> list[dict]:
    """A BVP-like manifest: 2 rooms × 2 subjects × 2 locations × 2 orientations × 3 gestures × 3 repetitions."""
    out = []
    gestures = ("Clap", "Slide", "Sweep") + (("Draw-1",) if extra_gesture else ())
    for room in (1, 2):
        for subject in (f"user{room}", f"user{room + 2}"):
            for loc in (1, 2):
                for ori in (1, 2):
                    for g, gesture in enumerate(gestures, 1):
                        for rep in (1, 2, 3):
                            capture = f"2018110{room}/{subject}-{g}-{loc}-{ori}-{rep}"
                            for link in range(links):
                                out.append({"id": f"{capture}-L{link}", "files": [], "frames": 5, "room": room,
                                            "subject": subject, "location": loc, "orientation": ori,
                                            "gesture": gesture, "label": gesture, "repetition": rep,
                                            "capture": capture})
    return out


def _manifest(**kw) -> Manifest:
    return Manifest(dataset="widar3-bvp", root=".", recordings=_recordings(**kw))


def _values_on(table: RecordingTable, side: np.ndarray, key: str, which: int) -> set:
    col = table.column(key)
    return {col.values[c] for c in np.unique(col.codes[side == which])}


def test_in_domain_is_leakage_prone_stratified_and_keeps_every_domain_on_both_sides():
    table = _manifest(extra_gesture=False).table()
    with pytest.raises(ValidationError, match="leakage-prone"):
        assign(table, "in-domain")
    (a,) = assign(table, "in-domain", allow_leaky=True, seed=3)
    assert a.leakage_prone and a.claims == () and a.params == {"test_fraction": 0.2}
    for key in ("room", "subject", "location", "orientation", "gesture"):
        assert _values_on(table, a.side, key, TRAIN) == _values_on(table, a.side, key, TEST) \
            == set(table.column(key).values)
    # exactly round(0.2 · 48) = 10 captures of each gesture on test (48 = 2 rooms · 2 subjects · 2 · 2 · 3 reps)
    g = table.column("gesture")
    assert [int(np.sum((a.side == TEST) & (g.codes == k))) for k in range(3)] == [10, 10, 10]
    (b,) = assign(table, "in-domain", allow_leaky=True, seed=3)
    (c,) = assign(table, "in-domain", allow_leaky=True, seed=4)
    assert np.array_equal(a.side, b.side) and not np.array_equal(a.side, c.side)


def test_in_domain_draws_captures_and_the_audit_keeps_each_capture_on_one_side():
    table = _manifest(extra_gesture=False, links=2).table()  # two files (links) of every capture
    (a,) = assign(table, "in-domain", allow_leaky=True)
    audit = audit_sides(table, a.side)
    check = next(c for c in audit.checks if c["name"] == CHECK_CAPTURES)
    assert check["passed"], check
    # random draws captures too: links of one capture stay together
    (r,) = assign(table, "random", allow_leaky=True, seed=1, test_fraction=0.5)
    assert next(c for c in audit_sides(table, r.side).checks if c["name"] == CHECK_CAPTURES)["passed"]
    # sides separating the two links of one capture: the audit says so and fails
    capture = table.domains["capture"]
    first = int(np.flatnonzero(capture.codes == capture.codes[0])[1])
    side = r.side.copy()
    side[0], side[first] = TRAIN, TEST
    bad = audit_sides(table, side)
    check = next(c for c in bad.checks if c["name"] == CHECK_CAPTURES)
    assert not check["passed"] and not bad.passed and "one capture on both sides" in check["detail"]


def test_in_domain_refuses_a_domain_it_cannot_keep_on_both_sides():
    recs = _recordings(extra_gesture=False)
    recs.append({**recs[0], "id": "lonely", "subject": "user9", "capture": "lonely"})
    with pytest.raises(ValidationError, match="cannot keep subject user9 on both sides"):
        assign(Manifest("widar3-bvp", ".", recs).table(), "in-domain", allow_leaky=True)


@pytest.mark.parametrize("protocol,key,value", [("cross-location", "location", 2),
                                                ("cross-orientation", "orientation", 1),
                                                ("cross-room", "room", 2), ("cross-subject", "subject", "user3")])
def test_cross_domain_protocols_hold_their_key_out(protocol, key, value):
    (o,) = make_splits(_manifest(), protocol, test=[str(value)], gestures="common6")
    assert o.audit.passed and f"{key}-disjoint" in {c["name"] for c in o.audit.checks}
    table = _manifest().table()
    side = o.assignment.side
    assert _values_on(table, side, key, TEST) == {value}
    assert value not in _values_on(table, side, key, TRAIN)


def test_leave_one_domain_out_over_locations():
    outcomes = make_splits(_manifest(), "leave-one-domain-out", domain="location")
    assert [o.assignment.held_out for o in outcomes] == [(1,), (2,)]
    assert all(o.audit.passed for o in outcomes)


def test_gestures_filter_and_common6_preset():
    table = _manifest().table()
    (a,) = assign(table, "cross-subject", test=["user1"], gestures="common6")
    g = table.column("gesture")
    draw1 = g.codes == g.code_of("Draw-1")
    assert np.all(a.side[draw1] == -1) and np.all(a.side[~draw1] >= 0)
    assert a.params["gestures"] == "common6" and {"Clap", "Slide", "Sweep"} <= set(COMMON6)
    (b,) = assign(table, "cross-subject", test=["user1"], gestures=["Clap", "Sweep"])
    assert b.params["gestures"] == ["Clap", "Sweep"]
    assert _values_on(table, b.side, "gesture", TRAIN) == {"Clap", "Sweep"}
    with pytest.raises(ValidationError, match="'Clapp'"):
        assign(table, "cross-subject", test=["user1"], gestures="Clapp,Sweep")


def test_split_files_with_gestures_and_in_domain_reproduce(tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(_manifest().to_dict()))
    for protocol, kw in (("in-domain", {"allow_leaky": True}), ("cross-location", {"test": ["2"]})):
        ((split, outcome),) = write_splits(path, protocol, tmp_path / f"{protocol}.json", gestures="common6", **kw)
        checked = check_split_file(split)
        assert checked.audit.passed and not checked.differences, checked.differences
        doc = json.loads(split.read_text())
        assert doc["params"]["gestures"] == "common6" and len(doc["excluded"]) == 48  # Draw-1: 2·2·2·2·3


def test_cli_split_takes_gestures(runner, tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(_manifest().to_dict()))
    result = runner.invoke(app, ["split", str(path), "-p", "in-domain", "--allow-leaky", "--gestures", "common6",
                                 "-o", str(tmp_path / "s.json"), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "s.json").read_text())
    assert doc["protocol"] == "in-domain" and doc["leakage_prone"] is True
    result = runner.invoke(app, ["split", str(path), "-p", "in-domain", "-o", str(tmp_path / "t.json")])
    assert result.exit_code == 2 and "--allow-leaky" in result.output


def test_a_test_value_with_a_space_is_shown_with_its_space():
    """``--test " 1"`` said "no recording has orientation 1; values present: 1, 2": the space was not shown (found by
    an adversarial probe; the test fails on the code before)."""
    with pytest.raises(ValidationError, match="`test` ' 1': no recording has orientation ' 1'; values present: 1, 2"):
        make_splits(_manifest(), "cross-orientation", test=[" 1"], gestures="common6")
