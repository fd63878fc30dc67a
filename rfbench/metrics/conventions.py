"""Named metric conventions: the spec a published WiFi-pose number was computed under, read from its code.

A convention sets every part of the :class:`~rfbench.metrics.pose.MetricSpec` that its source computes —
normalization (by joint index, as the source writes it), comparison, averaging, normalizer floor,
visibility, per-axis normalisation, precision, Procrustes fit — quirks included: each quirk is named in the
label (``[graphpose-fi: ...]``) and the report's notes. Values are fractions; a source that returns percent
is noted. A metric the source does not compute is an error, never an approximation.

Each convention equals a transliteration of its source function (``tests/transliterations.py``) to 1e-12
on seeded random poses. Sources, as read:

``graphpose-fi``
    Cirrick/GraphPose-Fi @ 6c8fd66fb35b9ed2ea1b6d5424f58893192cbaaf, ``utils.py`` ``compute_pck_pckh``
    (``dataset='mmfi-csi'``) and ``calulate_error``, as ``train.py`` calls them on its validation loader.
``mmfi-toolbox``
    ybhbingo/MMFi_dataset @ 41e404b636ce87736a6d8ce93f5d94d6c2be7f81, ``mmfi_lib/evaluate.py``
    ``calulate_error`` (MPJPE and PA-MPJPE; the toolbox computes no PCK).
``wiflow``
    DY2434/WiFlow-WiFi-Pose-Estimation-with-Spatio-Temporal-Decoupling @
    df8f030348ebcb002d375bdc1a400d00582affdd, ``utils/metrics.py`` ``calculate_pck`` and ``calculate_mpjpe``,
    as ``train.py`` calls them; joint names from ``config.py`` ``KEYPOINT_NAMES`` (the ``wiflow15`` skeleton).
``mmpose``
    open-mmlab/mmpose @ db4ebd6e0cf1b113e20a7cbf94cdaba4ca2fcb85,
    ``mmpose/evaluation/functional/keypoint_eval.py`` ``keypoint_pck_accuracy``, ``keypoint_auc`` and
    ``keypoint_mpjpe``; ``compute_similarity_transform`` of ``mesh_eval.py`` as stored in the fork
    wux024/mmpose @ adfed18fa25e653c0f48922bdfcc34b77ec8bea8 (the open-mmlab copy is not in the stored
    code); the AUC metric's default ``norm_factor`` (30) from ``mmpose/evaluation/metrics/keypoint_2d_metrics.py``
    @ 016ee42913efa72adc82f638e10ad3fdb6ae7439.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from rfbench.errors import ValidationError

__all__ = ["Rule", "Convention", "CONVENTIONS", "get_convention", "NAMES"]


@dataclass(frozen=True)
class Rule:
    """How a convention's source computes one metric (the MetricSpec pieces it sets).

    ``normalization`` and ``comparison`` apply to PCK and PCK-AUC; ``averaging`` is ``micro``, ``macro`` or
    ``batch-mean``; ``floor`` is ``relative`` (rfbench's default: a degenerate normalizer makes the sample
    unscoreable), ``clamp:V`` or ``none``; ``visibility`` is ``used`` or ``ignored`` (every joint scored);
    ``precision`` ``float64`` or ``float32`` (normalised distances rounded as the source stores them);
    ``result_precision`` ``float32`` when the source returns its fraction as float32;
    ``pa_fit`` ``visible`` or ``all`` (the joints the Procrustes alignment is fitted on); ``dims`` the
    coordinate counts the source accepts. ``function`` names the source function; ``quirks`` are rendered in
    the label.
    """

    function: str
    normalization: str | None = None
    comparison: str | None = None
    averaging: str = "micro"
    floor: str = "relative"
    visibility: str = "used"
    per_axis: bool = False
    precision: str = "float64"
    result_precision: str = "float64"
    pa_fit: str = "visible"
    dims: tuple[int, ...] = (2, 3)
    quirks: tuple[str, ...] = ()


@dataclass(frozen=True)
class Convention:
    """A named convention: its source and one :class:`Rule` per metric it computes."""

    name: str
    title: str
    repository: str
    commit: str
    files: tuple[str, ...]
    rules: Mapping[str, Rule]
    #: The source's PCK is in percent (rfbench reports the fraction and says so).
    percent: bool = False
    #: What the source's own script used for the batch size of batch-mean averaging (or None).
    batch_hint: str | None = None
    #: The joint layout the source's indices refer to.
    own_skeleton: str | None = None
    #: Facts about how the source's script uses the function that rfbench does not reproduce.
    notes: tuple[str, ...] = ()
    #: What each joint index of a pair normaliser is called in the source's comments.
    pair_comment: str | None = None

    def rule(self, metric: str) -> Rule:
        """The rule for ``metric``; a ValidationError naming what the source computes otherwise."""
        if metric not in self.rules:
            raise ValidationError(
                f"convention {self.name} does not define {metric}: its source ({self.repository} "
                f"{', '.join(self.files)}) computes {', '.join(self.rules)} only"
            )
        return self.rules[metric]

    @property
    def source(self) -> str:
        return f"{self.repository} @ {self.commit[:12]}: {', '.join(self.files)}"

    @property
    def visibility(self) -> str:
        return next(iter(self.rules.values())).visibility

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "repository": self.repository, "commit": self.commit,
                "files": list(self.files), "metrics": list(self.rules), "percent": self.percent,
                "batch_hint": self.batch_hint, "own_skeleton": self.own_skeleton, "notes": list(self.notes)}


_GPF = "Cirrick/GraphPose-Fi"
_WIFLOW = "DY2434/WiFlow-WiFi-Pose-Estimation-with-Spatio-Temporal-Decoupling"

CONVENTIONS: dict[str, Convention] = {
    "graphpose-fi": Convention(
        name="graphpose-fi",
        title="GraphPose-Fi (compute_pck_pckh, dataset mmfi-csi; calulate_error)",
        repository=_GPF,
        commit="6c8fd66fb35b9ed2ea1b6d5424f58893192cbaaf",
        files=("utils.py", "train.py"),
        rules={
            "pck": Rule("compute_pck_pckh", normalization="pair:5,12", comparison="<=", averaging="batch-mean",
                        floor="none", visibility="ignored",
                        quirks=("source in percent",)),
            "mpjpe": Rule("calulate_error", visibility="ignored"),
            "pa-mpjpe": Rule("calulate_error", visibility="ignored", pa_fit="all"),
        },
        percent=True,
        batch_hint=("GraphPose-Fi's train.py scores its validation loader in batches of --batch_size, default 256 "
                    "(a short last batch weighs like a full one; its configs' validation_loader.batch_size is "
                    "not read by train.py)"),
        own_skeleton="h36m17",
        pair_comment="right shoulder--left hip",
        notes=("train.py takes the best of each metric separately over epochs, on the split it reports",
               "train.py's tensors are float32 (feeder/mmfi.py collate_fn_padd); rfbench computes in float64",
               "joints 5 and 12 of its own h36m17 order are left_knee and left_elbow; its comment says 'right "
               "shoulder--left hip'"),
    ),
    "mmfi-toolbox": Convention(
        name="mmfi-toolbox",
        title="MM-Fi toolbox (mmfi_lib/evaluate.py calulate_error)",
        repository="ybhbingo/MMFi_dataset",
        commit="41e404b636ce87736a6d8ce93f5d94d6c2be7f81",
        files=("mmfi_lib/evaluate.py",),
        rules={
            "mpjpe": Rule("calulate_error", visibility="ignored", quirks=("no root alignment",)),
            "pa-mpjpe": Rule("calulate_error", visibility="ignored", pa_fit="all"),
        },
    ),
    "wiflow": Convention(
        name="wiflow",
        title="WiFlow (utils/metrics.py calculate_pck, calculate_mpjpe)",
        repository=_WIFLOW,
        commit="df8f030348ebcb002d375bdc1a400d00582affdd",
        files=("utils/metrics.py", "train.py"),
        rules={
            "pck": Rule("calculate_pck", normalization="pair:2,12", comparison="<=", floor="clamp:0.01",
                        visibility="ignored", result_precision="float32"),
            "mpjpe": Rule("calculate_mpjpe", visibility="ignored"),
        },
        own_skeleton="wiflow15",
        pair_comment="neck--pelvis",
        notes=("calculate_pck returns each fraction as float32 (.float().mean()); so does rfbench (result-float32)",
               "joints 2 and 12 of its own wiflow15 order are left_shoulder and right_hip; its comment says "
               "'neck--pelvis'",
               "train.py averages the per-batch values weighted by batch size (the mean over rows) and tests "
               "with drop_last=True, so rows past the last full batch are not scored there; rfbench scores "
               "every row",),
    ),
    "mmpose": Convention(
        name="mmpose",
        title="mmpose (keypoint_pck_accuracy, keypoint_auc, keypoint_mpjpe)",
        repository="open-mmlab/mmpose",
        commit="db4ebd6e0cf1b113e20a7cbf94cdaba4ca2fcb85",
        files=("mmpose/evaluation/functional/keypoint_eval.py", "mmpose/evaluation/functional/mesh_eval.py"),
        rules={
            "pck": Rule("keypoint_pck_accuracy", normalization="bbox-max-side", comparison="<", averaging="macro",
                        per_axis=True, precision="float32", dims=(2,)),
            "pck-auc": Rule("keypoint_auc", normalization="abs:30", comparison="<", averaging="macro",
                            per_axis=True, precision="float32", dims=(2,),
                            quirks=("norm_factor 30: the AUC metric's default, in px",)),
            "mpjpe": Rule("keypoint_mpjpe(alignment='none')"),
            "pa-mpjpe": Rule("keypoint_mpjpe(alignment='procrustes')", pa_fit="all", dims=(3,)),
        },
        notes=("PCK: norm_factor is the longest side of the visible ground-truth keypoints' box, on both axes",
               "PA-MPJPE: the alignment is fitted on every joint, masked ones included, as keypoint_mpjpe does",
               "mmpose's PCKAccuracy metric takes norm_factor from the annotated person box "
               "(np.max(bboxes[0][2:]) of an xyxy box in keypoint_2d_metrics.py @016ee42); rfbench has no "
               "annotation boxes and uses the longest side of the visible ground-truth keypoints' box",
               "with no valid joint mmpose's average is 0; rfbench reports 'unscoreable' (None)"),
    ),
}

NAMES = tuple(CONVENTIONS)


def get_convention(name: str | Convention) -> Convention:
    """A convention by name (``graphpose-fi``, ``mmfi-toolbox``, ``wiflow``, ``mmpose``)."""
    if isinstance(name, Convention):
        return name
    text = str(name).strip()
    if text not in CONVENTIONS:
        raise ValidationError(f"unknown convention {text!r}; use one of {', '.join(NAMES)}")
    return CONVENTIONS[text]
