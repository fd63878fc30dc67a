"""Skeleton layouts: joint names, the joints each normalization needs, OKS sigmas, and a plausibility check.

A pose number means nothing until the joint order is known: ``hip-width`` and ``torso`` pick two joints
by *role* (``left_hip``, ``right_hip``, ``left_shoulder``), never by a literal index, and OKS weighs each
joint by its own sigma. Two layouts are built in:

``coco17``
    The 17 COCO keypoints (nose, eyes, ears, shoulders, elbows, wrists, hips, knees, ankles) with the
    COCO OKS sigmas (``pycocotools/cocoeval.py``, ``Params.setKpParams``).
``h36m17``
    The 17-joint Human3.6M order used by VideoPose3D and mmpose (``root`` = pelvis, right leg, left leg,
    spine, thorax, neck base, head, left arm, right arm). Human3.6M publishes no OKS sigmas, so OKS on
    this layout needs sigmas passed explicitly (``sigmas=`` / ``--sigmas``).
``wiflow15``
    WiFlow's 15 2D joints in its own order (neck, chest, left arm, right arm, pelvis, left leg, right leg;
    ``config.py`` ``KEYPOINT_NAMES`` of its repository). It declares no plausibility check, so reports say the
    layout is unverified.

A custom layout is a small TOML or JSON file (see :func:`load_skeleton`).

A declared layout is checked on the ground truth (:func:`check_layout`): each layout carries geometric
checks that hold for its own joint order and fail for the other common orders (for instance, under
h36m17 joint 0 lies at the midpoint of joints 1 and 4, and joints 1-2-3 form a leg; under coco17 the
five face joints lie close together relative to body size). ``rfbench score`` runs the check, reports it,
and refuses the layout-dependent metrics (``hip-width``, ``torso``, OKS with the layout's sigmas) when it
does not pass, unless overridden explicitly.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from rfbench.errors import FormatError, ValidationError
from rfbench.io.files import read_input_bytes

__all__ = [
    "Skeleton",
    "LayoutCheck",
    "COCO17",
    "H36M17",
    "WIFLOW15",
    "BUILTIN",
    "ROLES",
    "get_skeleton",
    "load_skeleton",
    "skeleton_from_dict",
    "check_layout",
    "COCO_SIGMAS",
]

#: Joint roles a normalization may need; a layout maps each role it supports to one of its joints.
ROLES = ("left_hip", "right_hip", "left_shoulder", "right_shoulder")

#: COCO keypoint OKS sigmas, in COCO keypoint order (pycocotools ``Params.setKpParams``).
COCO_SIGMAS = (0.26, 0.25, 0.25, 0.35, 0.35, 0.79, 0.79, 0.72, 0.72, 0.62, 0.62,
               1.07, 1.07, 0.87, 0.87, 0.89, 0.89)
COCO_SIGMAS = tuple(s / 10.0 for s in COCO_SIGMAS)

_CHECK_KINDS = ("midpoint", "spread", "chain")


@dataclass(frozen=True)
class LayoutCheck:
    """One geometric property a layout's ground truth must show, as a median over frames.

    Every statistic is a length divided by the frame's body size (the diagonal of the bounding box of its
    visible ground-truth joints), evaluated on frames where all the joints it names are visible.

    ``midpoint``
        ``|x[joints[0]] - (x[joints[1]] + x[joints[2]]) / 2| / size`` must be ``<= bound``.
    ``spread``
        the largest distance between any two of ``joints``, over size, must be ``<= bound``.
    ``chain``
        the summed length of the segments ``joints[0]-joints[1]-...``, over size, must be ``>= bound``.
    """

    name: str
    kind: str
    joints: tuple[int, ...]
    bound: float

    @property
    def op(self) -> str:
        return ">=" if self.kind == "chain" else "<="


@dataclass(frozen=True)
class Skeleton:
    """A joint layout.

    Attributes
    ----------
    name : str
        Layout name (``coco17``, ``h36m17`` or a custom name).
    joints : tuple of str
        Joint names in the data's joint order.
    roles : dict
        Role (see :data:`ROLES`) to joint index, for the roles this layout supports.
    sigmas : tuple of float or None
        OKS sigmas per joint, or None when the layout has no published sigmas.
    sigmas_source : str
        Where the sigmas come from.
    checks : tuple of LayoutCheck
        Plausibility checks run on the ground truth.
    source : str
        ``builtin`` or the path of the file the layout was read from.
    """

    name: str
    joints: tuple[str, ...]
    roles: Mapping[str, int] = field(default_factory=dict)
    sigmas: tuple[float, ...] | None = None
    sigmas_source: str = ""
    checks: tuple[LayoutCheck, ...] = ()
    source: str = "builtin"

    @property
    def n_joints(self) -> int:
        return len(self.joints)

    def role(self, role: str, needed_by: str) -> int:
        """Index of the joint playing ``role``; a clear error when this layout does not define it."""
        if role not in self.roles:
            raise ValidationError(
                f"normalization {needed_by!r} needs a {role} joint, which skeleton {self.name!r} does not "
                f"define; add it under [roles] in the layout file or choose bbox, bbox-max-side or abs:T"
            )
        return self.roles[role]

    def pair(self, normalization: str) -> tuple[int, int]:
        """The two joints a pair normalization measures: ``hip-width`` (left_hip, right_hip) or ``torso``
        (left_shoulder, right_hip)."""
        if normalization == "hip-width":
            return self.role("left_hip", normalization), self.role("right_hip", normalization)
        if normalization == "torso":
            return self.role("left_shoulder", normalization), self.role("right_hip", normalization)
        raise ValidationError(f"{normalization!r} is not a joint-pair normalization (hip-width, torso)")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (what the report records)."""
        return {
            "name": self.name,
            "source": self.source,
            "joints": list(self.joints),
            "roles": {r: self.joints[i] for r, i in sorted(self.roles.items())},
            "sigmas": list(self.sigmas) if self.sigmas is not None else None,
            "sigmas_source": self.sigmas_source,
            "checks": [
                {"name": c.name, "kind": c.kind, "joints": [self.joints[i] for i in c.joints], "op": c.op,
                 "bound": c.bound}
                for c in self.checks
            ],
        }


_COCO_JOINTS = ("nose", "left_eye", "right_eye", "left_ear", "right_ear", "left_shoulder", "right_shoulder",
                "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_hip", "right_hip",
                "left_knee", "right_knee", "left_ankle", "right_ankle")

COCO17 = Skeleton(
    name="coco17",
    joints=_COCO_JOINTS,
    roles={"left_hip": 11, "right_hip": 12, "left_shoulder": 5, "right_shoulder": 6},
    sigmas=COCO_SIGMAS,
    sigmas_source="COCO keypoints (pycocotools cocoeval.py Params.setKpParams)",
    checks=(
        # The face (nose, eyes, ears) spans ~0.15 m; a whole body's box diagonal is ~1.9 m and an upper
        # body's ~0.9 m, so the ratio stays below ~0.17. Under h36m17's order joints 0-4 are pelvis, right
        # leg and left hip: ~0.9 m apart, ratio ~0.45.
        LayoutCheck("face joints 0-4 close together", "spread", (0, 1, 2, 3, 4), 0.25),
    ),
)

_H36M_JOINTS = ("root", "right_hip", "right_knee", "right_foot", "left_hip", "left_knee", "left_foot", "spine",
                "thorax", "neck_base", "head", "left_shoulder", "left_elbow", "left_wrist", "right_shoulder",
                "right_elbow", "right_wrist")

H36M17 = Skeleton(
    name="h36m17",
    joints=_H36M_JOINTS,
    roles={"left_hip": 4, "right_hip": 1, "left_shoulder": 11, "right_shoulder": 14},
    sigmas=None,
    sigmas_source="none published for Human3.6M: pass sigmas explicitly for OKS",
    checks=(
        # Human3.6M's pelvis joint is the midpoint of the two hip joints (within a few mm).
        LayoutCheck("joint 0 at the midpoint of joints 1 and 4", "midpoint", (0, 1, 4), 0.05),
        # Thigh + shank ~0.9 m against a ~1.9 m diagonal (~0.46; more when sitting). Under coco17's order
        # joints 1-2-3 are left eye, right eye, left ear: ~0.05.
        LayoutCheck("joints 1-2-3 form a leg", "chain", (1, 2, 3), 0.25),
        LayoutCheck("joints 4-5-6 form a leg", "chain", (4, 5, 6), 0.25),
    ),
)

# WiFlow's 15 2D joints, in its own order and with its own names (config.py KEYPOINT_NAMES of
# DY2434/WiFlow-WiFi-Pose-Estimation-with-Spatio-Temporal-Decoupling @ df8f030348ebcb002d375bdc1a400d00582affdd):
# 0 Neck, 1 Chest, 2 L_Shoulder, 3 L_Elbow, 4 L_Wrist, 5 R_Shoulder, 6 R_Elbow, 7 R_Wrist, 8 Pelvis, 9 L_Hip,
# 10 L_Knee, 11 L_Ankle, 12 R_Hip, 13 R_Knee, 14 R_Ankle.
_WIFLOW_JOINTS = ("neck", "chest", "left_shoulder", "left_elbow", "left_wrist", "right_shoulder", "right_elbow",
                  "right_wrist", "pelvis", "left_hip", "left_knee", "left_ankle", "right_hip", "right_knee",
                  "right_ankle")

WIFLOW15 = Skeleton(
    name="wiflow15",
    joints=_WIFLOW_JOINTS,
    roles={"left_hip": 9, "right_hip": 12, "left_shoulder": 2, "right_shoulder": 5},
    sigmas=None,
    sigmas_source="none published for WiFlow's layout: pass sigmas explicitly for OKS",
    # No plausibility check: WiFlow publishes its joint names and bones (config.py SKELETON_CONNECTIONS), not
    # the geometry of its labels, so the layout is reported as unverified rather than checked against a guess.
    checks=(),
)

BUILTIN: dict[str, Skeleton] = {"coco17": COCO17, "h36m17": H36M17, "wiflow15": WIFLOW15}


def get_skeleton(name_or_path: str | Path | Skeleton) -> Skeleton:
    """A built-in layout by name (``coco17``, ``h36m17``, ``wiflow15``), or a custom one from a ``.toml``/``.json``
    file.

    Raises
    ------
    ValidationError
        Unknown name that is not a layout file either.
    """
    if isinstance(name_or_path, Skeleton):
        return name_or_path
    text = str(name_or_path)
    if text in BUILTIN:
        return BUILTIN[text]
    path = Path(text)
    if path.suffix.lower() in (".toml", ".json"):
        return load_skeleton(path)
    raise ValidationError(
        f"unknown skeleton {text!r}: use coco17, h36m17, wiflow15, or a layout file ending in .toml or .json"
    )


def load_skeleton(path: str | Path) -> Skeleton:
    """Read a custom layout from a TOML or JSON file.

    The file holds ``name``, ``joints`` (names in the data's order), optionally ``sigmas`` (one positive
    number per joint, for OKS) with ``sigmas_source``, ``roles`` (role → joint name, roles from
    :data:`ROLES`, needed by ``hip-width``/``torso``) and ``checks`` (plausibility checks: a list of
    ``{name, kind, joints, bound}`` with ``kind`` one of ``midpoint``, ``spread``, ``chain`` and ``joints``
    given by name; see :class:`LayoutCheck`). Example (TOML)::

        name = "mpii16"
        joints = ["r_ankle", "r_knee", "r_hip", "l_hip", "l_knee", "l_ankle", "pelvis", ...]
        [roles]
        left_hip = "l_hip"
        right_hip = "r_hip"
        [[checks]]
        name = "pelvis between the hips"
        kind = "midpoint"
        joints = ["pelvis", "l_hip", "r_hip"]
        bound = 0.05
    """
    import hashlib

    from rfbench.io.documents import MAX_TOML_BYTES, parse_json_text, parse_toml_text

    path = Path(path)
    raw = read_input_bytes(path, "skeleton file", cap=MAX_TOML_BYTES, expected="a layout file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise FormatError(f"{path}: not UTF-8 text, expected a layout file") from None
    if path.suffix.lower() == ".toml":
        data = parse_toml_text(text, str(path))
    else:
        data = parse_json_text(text, str(path))
    if not isinstance(data, dict):
        raise FormatError(f"{path}: a layout file holds a table/object with name and joints")
    digest = hashlib.sha256(raw).hexdigest()
    kind = "TOML" if path.suffix.lower() == ".toml" else "JSON"
    return skeleton_from_dict(data, source=f"layout file ({kind}, sha256 {digest})", digest=digest)


def skeleton_from_dict(data: Mapping[str, Any], source: str = "dict", digest: str | None = None) -> Skeleton:
    """Build a :class:`Skeleton` from the mapping described in :func:`load_skeleton`.

    A custom layout's name may not read as a built-in one (after NFKC, case folding and removing spaces and
    invisible characters), and the layout is named ``NAME@SHA8`` everywhere it is shown — ``SHA8`` the first 8
    hex digits of the layout file's sha256 (``digest``), or of the mapping's canonical JSON — so its numbers
    can never be read as a built-in layout's, nor as another file's of the same name."""
    import hashlib

    where = source
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ValidationError(f"{where}: 'name' must be a non-empty string")
    from rfbench.names import plain_name

    plain = plain_name(name)
    if plain in {plain_name(b) for b in BUILTIN} or not plain:
        raise ValidationError(f"{where}: name {name!r} reads as the built-in layout {plain!r}; give the custom "
                              f"layout its own name")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}", name.strip()):
        raise ValidationError(f"{where}: name {name!r}: a layout name is 1-64 letters, digits or _ . + - (starting "
                              f"with a letter or digit)")
    if digest is None:
        digest = hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode("utf-8")).hexdigest()
    joints = data.get("joints")
    if (not isinstance(joints, list) or not joints
            or not all(isinstance(j, str) and j.strip() for j in joints)):
        raise ValidationError(f"{where}: 'joints' must be a non-empty list of joint names")
    if len(set(joints)) != len(joints):
        dup = sorted({j for j in joints if joints.count(j) > 1})
        raise ValidationError(f"{where}: joint names must be unique; repeated: {', '.join(dup)}")
    index = {j: i for i, j in enumerate(joints)}

    def joint(ref: Any, what: str) -> int:
        if not isinstance(ref, str) or ref not in index:
            raise ValidationError(f"{where}: {what} names joint {ref!r}, which is not in 'joints'")
        return index[ref]

    roles_in = data.get("roles", {})
    if not isinstance(roles_in, dict):
        raise ValidationError(f"{where}: 'roles' must be a table of role = joint name")
    roles = {}
    for role, ref in roles_in.items():
        if role not in ROLES:
            raise ValidationError(f"{where}: unknown role {role!r}; roles are {', '.join(ROLES)}")
        roles[role] = joint(ref, f"role {role}")

    sigmas = data.get("sigmas")
    if sigmas is not None:
        sigmas = validate_sigmas(sigmas, len(joints), where)
    sigmas_source = data.get("sigmas_source", "declared in the layout file" if sigmas is not None else "")
    if not isinstance(sigmas_source, str):
        raise ValidationError(f"{where}: 'sigmas_source' must be a string")

    checks_in = data.get("checks", [])
    if not isinstance(checks_in, list):
        raise ValidationError(f"{where}: 'checks' must be a list of tables")
    checks = []
    for n, c in enumerate(checks_in):
        if not isinstance(c, dict):
            raise ValidationError(f"{where}: check {n} must be a table with name, kind, joints, bound")
        kind = c.get("kind")
        if kind not in _CHECK_KINDS:
            raise ValidationError(f"{where}: check {n} kind must be one of {', '.join(_CHECK_KINDS)}, got {kind!r}")
        refs = c.get("joints")
        need = {"midpoint": (3, 3), "spread": (2, None), "chain": (2, None)}[kind]
        if not isinstance(refs, list) or len(refs) < need[0] or (need[1] and len(refs) != need[1]):
            raise ValidationError(f"{where}: check {n} ({kind}) needs "
                                  f"{'exactly 3' if kind == 'midpoint' else 'at least 2'} joint names")
        idx = tuple(joint(r, f"check {n}") for r in refs)
        bound = c.get("bound")
        if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not math.isfinite(bound) or bound <= 0:
            raise ValidationError(f"{where}: check {n} 'bound' must be a positive number")
        cname = c.get("name", f"{kind} {'/'.join(refs)}")
        checks.append(LayoutCheck(str(cname), kind, idx, float(bound)))
    return Skeleton(name=f"{name.strip()}@{digest[:8]}", joints=tuple(joints), roles=roles, sigmas=sigmas,
                    sigmas_source=sigmas_source, checks=tuple(checks), source=source)


def validate_sigmas(sigmas: Any, n_joints: int, where: str = "sigmas") -> tuple[float, ...]:
    """Sigmas as a tuple of ``n_joints`` positive finite floats, or a ValidationError."""
    try:
        values = tuple(float(s) for s in sigmas)
    except (TypeError, ValueError):
        raise ValidationError(f"{where}: sigmas must be a list of numbers") from None
    if len(values) != n_joints:
        raise ValidationError(f"{where}: {len(values)} sigmas given for {n_joints} joints; give one per joint")
    if not all(math.isfinite(s) and s > 0 for s in values):
        raise ValidationError(f"{where}: every sigma must be a positive finite number")
    return values


def check_layout(skeleton: Skeleton, gt, vis=None) -> dict[str, Any]:
    """Run a layout's plausibility checks on ground-truth poses.

    Parameters
    ----------
    skeleton : Skeleton
        The declared layout.
    gt : array_like, (N, K, D)
        Ground-truth joints, K = ``skeleton.n_joints``, D = 2 or 3, finite where visible.
    vis : array_like of bool, (N, K), optional
        Ground-truth visibility (default: all visible).

    Returns
    -------
    dict
        ``{"passed": True | False | None, "checks": [...], "reason": str}``. Each check records its median
        ratio (``value``), ``bound``, ``op`` and how many frames it was ``evaluated_on``. ``passed`` is None
        when the layout declares no check or no frame could be evaluated: the layout is then unverified
        (scoring proceeds and the report says so).
    """
    import numpy as np

    gt = np.asarray(gt, dtype=np.float64)
    n, k = gt.shape[0], gt.shape[1]
    vis = np.ones((n, k), dtype=bool) if vis is None else np.asarray(vis, dtype=bool)
    if not skeleton.checks:
        return {"passed": None, "checks": [], "reason": f"skeleton {skeleton.name!r} declares no plausibility check"}
    # Body size per frame: diagonal of the box around the visible joints (0 when fewer than two differ).
    lo = np.where(vis[..., None], gt, np.inf).min(axis=1)
    hi = np.where(vis[..., None], gt, -np.inf).max(axis=1)
    any_vis = vis.any(axis=1)
    size = np.where(any_vis, np.sqrt(np.sum(np.where(any_vis[:, None], hi - lo, 0.0) ** 2, axis=1)), 0.0)
    results = []
    for c in skeleton.checks:
        j = list(c.joints)
        ok = vis[:, j].all(axis=1) & (size > 0)
        pts = gt[ok][:, j, :]
        s = size[ok]
        if c.kind == "midpoint":
            stat = np.linalg.norm(pts[:, 0] - (pts[:, 1] + pts[:, 2]) / 2.0, axis=-1) / s
        elif c.kind == "spread":
            diff = pts[:, :, None, :] - pts[:, None, :, :]
            stat = np.sqrt((diff ** 2).sum(-1)).reshape(len(s), -1).max(axis=1) / s if len(s) else np.empty(0)
        else:  # chain
            stat = np.linalg.norm(np.diff(pts, axis=1), axis=-1).sum(axis=1) / s if len(s) else np.empty(0)
        frames = int(stat.shape[0])
        value = float(np.median(stat)) if frames else None
        passed = None if value is None else bool(value >= c.bound if c.op == ">=" else value <= c.bound)
        results.append({"name": c.name, "kind": c.kind, "joints": [skeleton.joints[i] for i in j], "op": c.op,
                        "bound": c.bound, "value": value, "evaluated_on": frames, "passed": passed})
    if any(r["passed"] is False for r in results):
        failed = [r for r in results if r["passed"] is False]
        reason = "; ".join(f"{r['name']}: median {r['value']:.3g} of body size, expected {r['op']} {r['bound']:g}"
                           for r in failed)
        return {"passed": False, "checks": results, "reason": reason}
    if any(r["passed"] is None for r in results):
        missing = [r["name"] for r in results if r["passed"] is None]
        return {"passed": None, "checks": results,
                "reason": "no frame has all the joints of: " + "; ".join(missing)}
    return {"passed": True, "checks": results, "reason": "every check holds"}
