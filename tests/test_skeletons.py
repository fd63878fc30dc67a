"""Skeleton layouts, custom layout files, and the plausibility check on data."""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pytest

from posedata import COCO_TEMPLATE, H36M_TEMPLATE, coco_poses, h36m_poses
from rfbench.errors import FormatError, ValidationError
from rfbench.metrics.skeletons import (
    COCO17,
    H36M17,
    check_layout,
    get_skeleton,
    load_skeleton,
    skeleton_from_dict,
)


def test_builtin_layouts():
    assert COCO17.n_joints == H36M17.n_joints == 17
    assert COCO17.joints[COCO17.roles["left_hip"]] == "left_hip"
    assert COCO17.joints[COCO17.roles["right_hip"]] == "right_hip"
    assert COCO17.pair("hip-width") == (11, 12) and COCO17.pair("torso") == (5, 12)
    # The same indices mean other joints in the other layout: h36m17's hips are 4 (left) and 1 (right).
    assert H36M17.pair("hip-width") == (4, 1) and H36M17.pair("torso") == (11, 1)
    assert H36M17.joints[1] == "right_hip" and H36M17.joints[4] == "left_hip" and H36M17.joints[0] == "root"
    assert COCO17.sigmas[0] == pytest.approx(0.026) and COCO17.sigmas[11] == pytest.approx(0.107)
    assert H36M17.sigmas is None and "pass sigmas" in H36M17.sigmas_source
    assert get_skeleton("coco17") is COCO17


def test_check_statistics_on_the_templates_by_hand():
    # coco17: the widest face pair is ear to ear, 0.1 apart; the box diagonal is sqrt(0.9² + 1.2²) = 1.5.
    res = check_layout(COCO17, COCO_TEMPLATE[None])
    assert res["passed"] is True
    assert res["checks"][0]["value"] == pytest.approx(0.1 / 1.5)
    # h36m17: root is exactly the midpoint of the hips; the right leg is |(0, .45, -.02)| + |(0, .42, .02)|
    # and the box is 0.6 x 1.62 x 0.05.
    res = check_layout(H36M17, H36M_TEMPLATE[None])
    diag = math.sqrt(0.6 ** 2 + 1.62 ** 2 + 0.05 ** 2)
    leg = math.hypot(0.45, 0.02) + math.hypot(0.42, 0.02)
    assert res["passed"] is True
    assert res["checks"][0]["value"] == pytest.approx(0.0, abs=1e-15)
    assert res["checks"][1]["value"] == pytest.approx(leg / diag)


def test_check_tells_the_layouts_apart():
    coco = coco_poses(50, seed=1)
    h36m = h36m_poses(50, seed=2)
    assert check_layout(COCO17, coco)["passed"] is True
    assert check_layout(H36M17, h36m)["passed"] is True
    wrong = check_layout(H36M17, coco)
    assert wrong["passed"] is False and "form a leg" in wrong["reason"]
    wrong = check_layout(COCO17, h36m)
    assert wrong["passed"] is False and "face joints" in wrong["reason"]
    # Shuffled joint order fails too.
    perm = np.random.default_rng(0).permutation(17)
    assert check_layout(H36M17, h36m[:, perm])["passed"] is False


def test_check_uses_visible_frames_only_and_can_be_inconclusive():
    coco = coco_poses(10, seed=3)
    vis = np.ones((10, 17), bool)
    vis[:, 3] = False  # an ear never visible: no frame can evaluate the face check
    res = check_layout(COCO17, coco, vis)
    assert res["passed"] is None and res["checks"][0]["evaluated_on"] == 0
    vis[:4, 3] = True
    res = check_layout(COCO17, coco, vis)
    assert res["passed"] is True and res["checks"][0]["evaluated_on"] == 4


def test_custom_layout_from_toml_and_json(tmp_path):
    toml = tmp_path / "tri.toml"
    toml.write_text(
        'name = "tri"\n'
        'joints = ["pelvis", "l_hip", "r_hip", "l_sho"]\n'
        'sigmas = [0.1, 0.1, 0.1, 0.08]\n'
        '[roles]\nleft_hip = "l_hip"\nright_hip = "r_hip"\nleft_shoulder = "l_sho"\n'
        '[[checks]]\nname = "pelvis between the hips"\nkind = "midpoint"\njoints = ["pelvis", "l_hip", "r_hip"]\n'
        'bound = 0.05\n'
    )
    sk = get_skeleton(str(toml))
    digest = hashlib.sha256(toml.read_bytes()).hexdigest()
    # named with its file's sha256 prefix wherever it is shown, and identified by its sha256, not its path
    assert sk.name == f"tri@{digest[:8]}" and sk.pair("hip-width") == (1, 2) and sk.pair("torso") == (3, 2)
    assert sk.sigmas == (0.1, 0.1, 0.1, 0.08) and sk.source == f"layout file (TOML, sha256 {digest})"
    good = np.array([[[0.0, 1.0], [0.1, 1.0], [-0.1, 1.0], [0.15, 0.5]]])
    assert check_layout(sk, good)["passed"] is True
    bad = good[:, [1, 0, 2, 3]]
    assert check_layout(sk, bad)["passed"] is False
    js = tmp_path / "tri.json"
    js.write_text(json.dumps({"name": "tri2", "joints": ["a", "b"]}))
    sk2 = load_skeleton(js)
    assert sk2.sigmas is None and sk2.checks == () and check_layout(sk2, good[:, :2])["passed"] is None
    with pytest.raises(ValidationError, match="needs a left_hip joint"):
        sk2.pair("hip-width")


@pytest.mark.parametrize("data,message", [
    ({"joints": ["a"]}, "'name'"),
    ({"name": "coco17", "joints": ["a"]}, "built-in"),
    ({"name": "x", "joints": []}, "'joints'"),
    ({"name": "x", "joints": ["a", "a"]}, "unique"),
    ({"name": "x", "joints": ["a"], "roles": {"elbow": "a"}}, "unknown role"),
    ({"name": "x", "joints": ["a"], "roles": {"left_hip": "z"}}, "not in 'joints'"),
    ({"name": "x", "joints": ["a"], "sigmas": [0.1, 0.2]}, "2 sigmas given for 1 joints"),
    ({"name": "x", "joints": ["a"], "sigmas": [-0.1]}, "positive"),
    ({"name": "x", "joints": ["a", "b"], "checks": [{"kind": "angle", "joints": ["a", "b"], "bound": 1}]}, "kind"),
    ({"name": "x", "joints": ["a", "b"], "checks": [{"kind": "midpoint", "joints": ["a", "b"], "bound": 1}]},
     "exactly 3"),
    ({"name": "x", "joints": ["a", "b"], "checks": [{"kind": "chain", "joints": ["a", "b"], "bound": 0}]}, "bound"),
])
def test_custom_layout_errors(data, message):
    with pytest.raises(ValidationError, match=message):
        skeleton_from_dict(data)


def test_layout_file_errors(tmp_path):
    with pytest.raises(FormatError, match="skeleton file .*: no such file"):
        get_skeleton(str(tmp_path / "none.toml"))
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [")
    with pytest.raises(FormatError, match="not valid TOML"):
        get_skeleton(str(bad))
    with pytest.raises(ValidationError, match="unknown skeleton 'mpii'"):
        get_skeleton("mpii")
