"""A split whose test side holds no class its train side holds is refused, whatever key was held out.

Such a side scores a constant answer at 1.000 (every test row of one class the model never saw, a majority
baseline of 0 from the train side): the held-out key stands for the class. Refusing the key by its name
(``--domain gesture``) left every other name for the same column open: a template field given both the label
and a domain role, or leave-one-domain-out over the label's own template field under any name.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from rfbench.cli import app
from rfbench.datasets.files import check_spec
from rfbench.datasets.manifest import Manifest
from rfbench.errors import ValidationError
from rfbench.protocols.leakage import audit_sides
from rfbench.protocols.split import ProtocolSplitter, assign, make_splits, split_document
from rfbench.protocols.splitfile import check_split_file


def _recordings(pairs, start=0):
    """One recording per (subject, label)."""
    return [{"id": f"r{k}", "files": [], "frames": 10, "subject": s, "label": g, "gesture": g}
            for k, (s, g) in enumerate(pairs, start=start)]


def _one_class_per_subject():
    """Each subject performed one gesture only: holding a subject out holds its class out."""
    return _recordings([(s, f"g{s}") for s in ("a", "b", "c") for _ in range(3)])


def test_cross_subject_whose_test_side_holds_only_unseen_classes_is_refused():
    manifest = Manifest("toy", ".", _one_class_per_subject())
    with pytest.raises(ValidationError, match="the test side holds no class the train side holds"):
        make_splits(manifest, "cross-subject", test=["a"])
    with pytest.raises(ValidationError, match="test classes: ga"):
        ProtocolSplitter(manifest, "cross-subject", test=["a"])


def test_a_test_side_sharing_a_class_with_training_is_a_split():
    recs = _one_class_per_subject() + _recordings([("a", "gb")], start=9)  # subject a also did b's gesture
    (outcome,) = make_splits(Manifest("toy", ".", recs), "cross-subject", test=["a"])
    assert sorted(outcome.document["test"]) == ["r0", "r1", "r2", "r9"]


def test_a_manifest_without_a_class_is_not_concerned():
    recs = [{"id": f"r{k}", "files": [], "frames": 10, "subject": s, "room": s} for k, s in enumerate("aabbcc")]
    (outcome,) = make_splits(Manifest("toy", ".", recs), "cross-subject", test=["a"])
    assert outcome.document["test"] == ["r0", "r1"]


def test_a_split_file_made_without_the_check_is_refused_when_read_back(tmp_path):
    """score, audit and windows re-check a split from its file: one written before the check (or by hand)
    is refused there too."""
    manifest = Manifest("toy", ".", _one_class_per_subject())
    mpath = tmp_path / "manifest.json"
    manifest.write(mpath)
    table = manifest.table()
    (a,) = assign(table, "cross-subject", test=["a"])
    doc = split_document(a, table, audit_sides(table, a.side, a.claims), synthetic=False, dataset="toy",
                         manifest_ref={"path": "manifest.json",
                                       "sha256": hashlib.sha256(mpath.read_bytes()).hexdigest()})
    spath = tmp_path / "split.json"
    spath.write_text(json.dumps(doc))
    with pytest.raises(ValidationError, match="split.json: cross-subject: the test side holds no class"):
        check_split_file(spath)


@pytest.mark.parametrize("roles, fields", [
    ({"label": "gesture", "subject": "gesture"}, "label and subject"),  # one field, two roles
    ({"label": "subject"}, "label and subject"),  # the template's {subject} is the subject already
])
def test_ingest_files_refuses_a_field_given_two_roles(roles, fields):
    template = "{subject}_{gesture}_{repetition}.dat" if "subject" in roles.values() and "subject" not in roles \
        else "{user}_{gesture}_{repetition}.dat"
    with pytest.raises(ValidationError, match=f"is given two roles, {fields}; a field has one role: a domain "
                                              "that is the class"):
        check_spec(template, None, roles)


def test_ingest_files_takes_one_role_per_field():
    _, _, _, roles = check_spec("{user}_{gesture}_{room}.dat", None, {"label": "gesture", "subject": "user"})
    assert roles == {"label": "gesture", "subject": "user"}


def test_leave_one_domain_out_over_the_labels_own_field_is_refused(runner, tmp_path):
    """The label came from the template field 'activity': each fold over it holds one class out."""
    recs = [{"id": f"r{k}", "files": [], "frames": 10, "user": u, "subject": u, "activity": a, "label": str(a)}
            for k, (u, a) in enumerate((u, a) for u in ("x", "y") for a in (1, 2, 3))]
    doc = Manifest("toy", "data", recs).to_dict()  # (its tree beside it: nothing is written into a corpus)
    doc["template"] = {"text": "{user}_{activity}.dat", "fields": [{"name": "user"}, {"name": "activity"}]}
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    folds = tmp_path / "folds"
    result = runner.invoke(app, ["split", str(path), "-p", "leave-one-domain-out", "--domain", "activity", "-o",
                                 str(folds)])
    assert result.exit_code == 2, result.output
    assert "the test side holds no class the train side holds" in " ".join(result.output.split())
    assert not folds.exists()
    by_user = runner.invoke(app, ["split", str(path), "-p", "leave-one-domain-out", "--domain", "user", "-o",
                                  str(folds)])
    assert by_user.exit_code == 0, by_user.output


def test_leave_one_domain_out_over_label_says_it_holds_out_a_class(runner, tmp_path):
    """'--domain label' said no recording has a 'label' (every one has: it is not a domain key)."""
    path = tmp_path / "m.json"
    path.write_text(json.dumps(Manifest("toy", ".", _one_class_per_subject()).to_dict()))
    result = runner.invoke(app, ["split", str(path), "-p", "leave-one-domain-out", "--domain", "label", "-o",
                                 str(tmp_path / "folds")])
    assert result.exit_code == 2, result.output
    assert "over 'label' holds out a class" in " ".join(result.output.split()), result.output


def test_the_constant_model_no_longer_scores_one(tmp_path):
    """The side a constant model scored 1.000 on: every test row of one class absent from training."""
    recs = _recordings([(g, g) for g in ("1", "2", "3") for _ in range(4)])
    table = Manifest("toy", ".", recs).table()
    (a,) = assign(table, "cross-subject", test=["1"])
    assert set(np.flatnonzero(a.side == 1).tolist()) == {0, 1, 2, 3}  # the split assign alone would make
    with pytest.raises(ValidationError):
        make_splits(Manifest("toy", ".", recs), "cross-subject", test=["1"])


def test_the_class_is_the_key_windows_labels_by():
    """A template corpus without --label: windows takes 'action' as the class, so leave-one-domain-out over it
    holds each class out (the refusal read 'label' only: a constant model scored 1.000, MEASURED, verify MATCH)."""
    recs = [{"id": f"r{k}", "files": [], "frames": 10, "user": u, "subject": u, "action": a}
            for k, (u, a) in enumerate((u, a) for u in ("x", "y") for a in ("1", "2", "3"))]
    doc = Manifest("toy", ".", recs).to_dict()
    doc["template"] = {"text": "{user}_{action}.dat", "fields": [{"name": "user"}, {"name": "action"}]}
    with pytest.raises(ValidationError, match=r"fold action-1\): the test side holds no class the train side"):
        make_splits(doc, "leave-one-domain-out", domain="action")
    assert len(make_splits(doc, "leave-one-domain-out", domain="user")) == 2


def test_mmfi_actions_are_held_out_for_pose():
    """A pose model is tested across MM-Fi's actions: their leave-one-domain-out is a split."""
    recs = [{"id": f"r{k}", "files": [], "frames": 10, "subject": s, "action": a}
            for k, (s, a) in enumerate((s, a) for s in ("S01", "S02") for a in ("A01", "A02"))]
    outcomes = make_splits(Manifest("mmfi", ".", recs), "leave-one-domain-out", domain="action")
    assert [o.document["test"] for o in outcomes] == [["r0", "r2"], ["r1", "r3"]]
