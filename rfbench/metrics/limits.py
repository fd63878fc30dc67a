"""Names and bounds the metric modules and the settings share, importable without NumPy (so the command line's
options are built from them before any kernel loads). Each is defined here once and re-exported where it is
used (:mod:`rfbench.metrics.pose`, :mod:`rfbench.metrics.classify`, :mod:`rfbench.metrics.stats`)."""

import math

from rfbench.errors import ValidationError


def oks_area_value(value) -> float | None:
    """The OKS area a setting names: None for ``bbox`` (0.53 × the box's width × height), else the constant, a
    positive finite number (units²). Anything else is a ValidationError. The settings check it whether or not
    OKS is computed (:class:`rfbench.report.settings.PoseSettings`); the pose plan reads it."""
    if isinstance(value, str) and value.strip() == "bbox":
        return None
    try:
        area = float(value)
    except (TypeError, ValueError):
        area = math.nan
    if not (math.isfinite(area) and area > 0):
        raise ValidationError(f"OKS area must be 'bbox' or a positive number (units²), got {value!r}")
    return area

#: Pose metrics (DESIGN.md §5).
POSE_METRICS = ("pck", "pck-auc", "oks", "mpjpe", "pa-mpjpe")
#: PCK normalizations (``abs:T`` takes its threshold T in coordinate units; ``pair:I,J`` is the distance of
#: two joints named by index or name).
NORMALIZATIONS = ("hip-width", "torso", "bbox", "bbox-max-side", "abs:T", "pair:I,J")
#: How a joint's normalised distance is compared with k.
COMPARISONS = ("<=", "<")
#: micro: over every scoreable joint; macro: per joint, then averaged.
AVERAGINGS = ("micro", "macro")
#: Every averaging: batch-mean (PCK and PCK-AUC only: the mean over consecutive batches of rows, as some
#: published training scripts compute it) needs a batch size.
ALL_AVERAGINGS = ("micro", "macro", "batch-mean")
#: The floor below which a normalizer is degenerate: relative to the pose's box, a clamp, or none.
FLOORS = ("relative", "clamp:V", "none")
#: Whether ground-truth visibility is used or ignored.
VISIBILITIES = ("used", "ignored")
#: Precision of the distance computation.
PRECISIONS = ("float64", "float32")
#: The joints PA-MPJPE's alignment is fitted on.
PA_FITS = ("visible", "all")
#: Largest ground-truth coordinate magnitude accepted at a visible joint (in any unit system far beyond a
#: body; squares of larger values overflow).
MAX_COORDINATE = 1e100
#: Most PCK-AUC thresholds a spec may ask for (mmpose uses 20).
MAX_AUC_N = 1000
#: Largest PCK threshold k and PCK-AUC k_max, fractions of the normalizer (0.05-0.5 in the literature; past
#: 100 times a torso every prediction is within, and a k of 1e308 only printed a 309-digit label).
MAX_K = 100.0
#: Classification metrics.
CLASSIFY_METRICS = ("accuracy", "balanced-accuracy", "macro-f1", "weighted-f1", "top-k")
#: Default top-k thresholds (those below the class count are used).
DEFAULT_TOP_K = (3, 5)
#: Largest top-k threshold (score's --top-k; a claim's spec.k for top-k).
MAX_TOP_K = 100_000
#: Most clusters the bootstrap resamples.
MAX_CLUSTERS = 50_000
#: Most bootstrap replicates a report may ask for: 100,000 gives percentile intervals far finer than any
#: report shows, and bounds what a re-run (``rfbench verify``) can be made to compute.
MAX_REPLICATES = 100_000
