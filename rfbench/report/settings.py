"""The settings of a score run, declared once (numpy-free, so the command line builds its options from them).

:class:`ScoreInputs` (the files), :class:`PoseSettings` (the metric spec), :class:`GestureSettings`,
:class:`BootstrapSettings` and :class:`ReportOptions`; see :mod:`rfbench.settings` for how options, argv and
checks derive from their fields, and :mod:`rfbench.report.score` for the functions that take them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from rfbench.errors import ValidationError
from rfbench.metrics.conventions import NAMES as CONVENTIONS
from rfbench.metrics.limits import (
    ALL_AVERAGINGS,
    AVERAGINGS,
    CLASSIFY_METRICS,
    MAX_AUC_N,
    MAX_K,
    MAX_REPLICATES,
    MAX_TOP_K,
    POSE_METRICS,
    oks_area_value,
)
from rfbench.settings import SettingError, Settings, setting

__all__ = ["TASKS", "ScoreInputs", "PoseSettings", "GestureSettings", "BootstrapSettings", "ReportOptions",
           "COMPARISON_ALIASES"]

TASKS = ("pose", "gesture")
COMPARISON_ALIASES = {"le": "<=", "lt": "<"}
_U63 = 2**63 - 1


@dataclass(frozen=True)
class ScoreInputs(Settings):
    """The files a score run reads; ``role`` names each in the report's inputs. ``rows`` inputs hold one entry
    per scored row; ``split`` inputs tie the rows to a split and its training side.

    Examples
    --------
    >>> import rfbench
    >>> inputs = rfbench.ScoreInputs(pred="pred.npy", gt="gt.npy")
    >>> [(role, flag) for role, flag, path in inputs.files("pose") if path is not None]
    [('pred', '--pred'), ('gt', '--gt')]
    """

    pred: Optional[Path] = setting(None, "Predictions .npy. pose: (N, K, 2|3) joints; gesture: labels (N,) (names, "
                                         "or label-set indices) or scores (N, C) in label-set order.",
                                   kind="path", role="pred", group="rows")
    gt: Optional[Path] = setting(None, "Ground truth .npy. pose: same shape as --pred; gesture: labels (N,).",
                                 kind="path", role="gt", group="rows")
    vis: Optional[Path] = setting(None, "pose: ground-truth visibility .npy (N, K): >0 or true = visible. Default: "
                                        "all visible.", kind="path", role="vis", group="rows", tasks=("pose",))
    label_set: Optional[Path] = setting(None, "gesture: names.txt, one class name per line: fixes the class order; "
                                              "integer labels index it (from 0). Default: the sorted names seen.",
                                        kind="path", role="label-set", group="rows", tasks=("gesture",))
    rows: Optional[Path] = setting(None, "The test side's index.json from rfbench windows: the ground truth, row ids "
                                         "and training targets are then read from the dataset (no --gt, --groups, "
                                         "--train-gt, --train-groups), and --pred has one row per index row, in "
                                         "its order. Needs --split.", kind="path", role="rows", group="rows")
    split: Optional[Path] = setting(None, "split.json the rows come from (needs --groups). Re-checked against its "
                                          "manifest: its sides must be what its protocol and seed give, and its "
                                          "audit must pass.", kind="path", role="split", group="split")
    manifest: Optional[Path] = setting(None, "The split's manifest (default: the one the split names). Hashed as an "
                                             "input of the report; the split is recomputed from it.",
                                       kind="path", role="manifest", group="split")
    groups: Optional[Path] = setting(None, "Recording id per scored row .npy (strings or integers); all on the "
                                           "split's test side.", kind="path", role="groups", group="split")
    train_gt: Optional[Path] = setting(None, "Training-split ground truth .npy, for the baseline (pose: mean "
                                             "training pose; gesture: majority class and class prior).",
                                       kind="path", role="train-gt", group="split")
    train_groups: Optional[Path] = setting(None, "Recording id per --train-gt row .npy; all on the split's train "
                                                 "side.", kind="path", role="train-groups", group="split")
    train_vis: Optional[Path] = setting(None, "pose: visibility of --train-gt (N, K).", kind="path",
                                        role="train-vis", group="split", tasks=("pose",))

    #: Inputs that come from the dataset when ``rows`` (a windows index) is given.
    FROM_DATASET = ("gt", "vis", "groups", "train_gt", "train_groups", "train_vis", "label_set")

    def check(self) -> None:
        if self.rows is not None:
            given = [name for name in self.FROM_DATASET if getattr(self, name) is not None]
            if given:
                raise ValidationError(f"with `rows` the ground truth, row ids and training targets are read from the "
                                      f"dataset; drop `{given[0]}`")
            if self.split is None:
                raise ValidationError("`rows` (a windows index) needs the `split` it was built from")
        elif (self.train_gt is None) != (self.train_groups is None):
            raise ValidationError("a baseline needs both `train_gt` and `train_groups`")

    def files(self, task: str) -> list[tuple[str, str, Path | None]]:
        """``(role, flag, path)`` of every input that applies to ``task``, in declaration order."""
        from rfbench.settings import flag_of, options_of

        return [(o.role, flag_of(f), getattr(self, f.name)) for f, o in options_of(type(self))
                if o.tasks is None or task in o.tasks]


@dataclass(frozen=True)
class PoseSettings(Settings):
    """The metric spec of a pose score (DESIGN.md §5).

    Examples
    --------
    >>> import rfbench
    >>> spec = rfbench.PoseSettings(skeleton="h36m17", units="m", norm="hip-width,bbox", k="0.1,0.2")
    >>> spec.norm, spec.k
    (('hip-width', 'bbox'), (0.1, 0.2))
    >>> spec.argv()[:6]
    ['--skeleton', 'h36m17', '--units', 'm', '--norm', 'hip-width,bbox']
    """

    skeleton: Optional[str] = setting(None, "pose: joint layout: coco17, h36m17, or a .toml/.json layout file "
                                            "(required).", tasks=("pose",))
    units: str = setting("unspecified", "pose: coordinate units of --pred/--gt (m, mm, px, normalized...), part of "
                                        "every label; 'unspecified' says so in every label.", tasks=("pose",))
    norm: tuple = setting(("torso",), "pose: PCK normalizations, comma-separated: hip-width, torso, bbox, "
                                      "bbox-max-side, abs:T.", kind="strs", tasks=("pose",), distinct=True)
    k: tuple = setting((0.05, 0.1, 0.2, 0.5), "pose: PCK thresholds (fractions of the normalizer), comma-separated.",
                       kind="floats", min=0.0, max=MAX_K, tasks=("pose",), distinct=True)
    comparison: str = setting("<=", "pose: a joint is correct when distance/normalizer <= k ('<=' or 'le') or < k "
                                    "('<' or 'lt').", choices=("<=", "<"), aliases=COMPARISON_ALIASES,
                              tasks=("pose",))
    averaging: tuple = setting(AVERAGINGS, "pose: micro (over joints) and/or macro (per joint); batch-mean (the mean "
                                           "over batches of consecutive rows, with --batch-size) as some published "
                                           "code does.", kind="strs", choices=ALL_AVERAGINGS, tasks=("pose",),
                          distinct=True)
    auc_n: int = setting(20, "pose: PCK-AUC: number of thresholds k_max*i/n, i=0..n-1.", min=1, max=MAX_AUC_N,
                         tasks=("pose",))
    auc_max: float = setting(1.0, "pose: PCK-AUC: k_max.", min=0.0, min_open=True, max=MAX_K, tasks=("pose",))
    oks_area: str = setting("bbox", "pose: OKS area: bbox (0.53 x box w x h) or a constant in units².",
                            tasks=("pose",))
    metrics: Optional[tuple] = setting(None, "Comma-separated subset; pose: pck, pck-auc, oks, mpjpe, pa-mpjpe;",
                                       kind="strs", choices=POSE_METRICS, flag="--metrics", distinct=True)
    sigmas: Optional[tuple] = setting(None, "pose: OKS sigmas, one per joint, comma-separated (needed for layouts "
                                            "without published sigmas).", kind="floats", min=0.0, min_open=True,
                                      tasks=("pose",))
    convention: Optional[str] = setting(None, "pose: score as a published source does: graphpose-fi, mmfi-toolbox, "
                                              "wiflow or mmpose (sets normalization, comparison, averaging and the "
                                              "rest of the spec; --k and --batch-size combine with it; see "
                                              "docs/metric-spec.md).", choices=CONVENTIONS, tasks=("pose",))
    batch_size: Optional[int] = setting(None, "pose: rows per batch of consecutive --pred rows for batch-mean "
                                              "averaging (graphpose-fi).", kind="int", min=1, max=10_000_000,
                                        tasks=("pose",))
    trust_layout: bool = setting(False, "pose: compute layout-dependent numbers even if the skeleton fails its "
                                        "plausibility check (recorded in the report).", tasks=("pose",))

    #: Fields a named convention sets itself: never recorded beside it.
    SET_BY_CONVENTION = ("norm", "comparison", "averaging")

    def check(self) -> None:
        if self.skeleton is None:
            raise ValidationError("pose scoring needs a skeleton (coco17, h36m17, or a layout file)")
        object.__setattr__(self, "units", self.units.strip() or "unspecified")
        object.__setattr__(self, "oks_area", self.oks_area.strip())
        try:  # checked whether or not OKS is computed: a setting recorded is a valid one
            oks_area_value(self.oks_area)
        except ValidationError:
            raise SettingError(type(self).__name__, "oks_area", "--oks-area",
                               f"must be 'bbox' or a positive number (units²), got {self.oks_area!r}") from None

    def argv(self, names=None, show_path=str) -> list[str]:
        """As :meth:`Settings.argv`; with a convention, the fields it sets are left out (they are its)."""
        if self.convention is not None and names is None:
            from rfbench.settings import options_of

            names = [f.name for f, _ in options_of(type(self)) if f.name not in self.SET_BY_CONVENTION]
        return super().argv(names, show_path)


@dataclass(frozen=True)
class GestureSettings(Settings):
    """What a gesture (classification) score computes.

    Examples
    --------
    >>> import rfbench
    >>> rfbench.GestureSettings(top_k=(3,), domains="room,subject").domain_keys()
    ['room', 'subject']
    """

    metrics: Optional[tuple] = setting(None, "gesture: accuracy, balanced-accuracy, macro-f1, weighted-f1, top-k. "
                                             "Default: all that apply.", kind="strs", choices=CLASSIFY_METRICS,
                                       flag="--metrics", distinct=True)
    top_k: Optional[tuple] = setting(None, "gesture, with scores: top-k thresholds, comma-separated. Default: 3,5 "
                                           "where below the class count.", kind="ints", min=1, max=MAX_TOP_K,
                                     tasks=("gesture",), distinct=True)
    domains: str = setting("auto", "gesture: per-domain breakdown keys from the split's manifest (room, location, "
                                   "orientation, subject), auto (those present) or none.", tasks=("gesture",))

    def domain_keys(self):
        d = self.domains.strip()
        return d if d in ("auto", "none") else [t.strip() for t in d.split(",") if t.strip()]


@dataclass(frozen=True)
class BootstrapSettings(Settings):
    """The paired cluster bootstrap behind every interval.

    Examples
    --------
    >>> import rfbench
    >>> rfbench.BootstrapSettings(replicates=200, seed=7).argv()
    ['--cluster-by', 'recording', '--bootstrap', '200', '--confidence', '0.95', '--seed', '7']
    """

    cluster_by: str = setting("recording", "Bootstrap clusters: recording, or subject (from the split's manifest).",
                              choices=("recording", "subject"))
    replicates: int = setting(1000, "Cluster-bootstrap replicates (0 = no intervals).", flag="--bootstrap", min=0,
                              max=MAX_REPLICATES)
    confidence: float = setting(0.95, "Confidence level of the intervals.", min=0.0, max=1.0, min_open=True,
                                max_open=True)
    seed: int = setting(0, "Bootstrap seed.", min=0, max=_U63)


@dataclass(frozen=True)
class ReportOptions(Settings):
    """How the report is tagged and recorded.

    Examples
    --------
    >>> import rfbench
    >>> rfbench.ReportOptions(allow_partial=True).argv()
    ['--allow-partial']
    """

    synthetic: bool = setting(False, "The data is generated: tag the report SYNTHETIC (data whose manifest records "
                                     "the generators' marker is tagged so anyway).")
    allow_partial: bool = setting(False, "Allow scoring only some of the split's test recordings (refused "
                                         "otherwise); the report and its headline say how many were scored.")
    absolute_paths: bool = setting(False, "Record the reproducer's paths and folder as absolute paths (default: "
                                          "relative, so a shared report names no user's folders).")
    allow_shared_files: bool = setting(False, "Score although the split's train and test sides share a "
                                              "byte-identical dataset file or the same records or frames under "
                                              "other names (refused otherwise for a MEASURED report); the report "
                                              "and its headline say so.")
