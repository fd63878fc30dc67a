"""Pictures of a report, as PNG files beside it (the optional extra ``rfbench[plot]``: matplotlib).

Pose reports get a PCK-vs-threshold curve (model and mean-pose baseline, each with its cluster-bootstrap
band, one panel per normalization) and a per-joint bar chart (macro PCK at one threshold, model beside the
baseline). Gesture reports get the confusion matrix as a heat map.

The pictures are drawn from the same arrays and the same kernels as the report's numbers, but the curve's
extra thresholds are **not** written into the report: the JSON holds only what ``rfbench verify`` re-runs and
compares. Matplotlib runs with its non-interactive Agg backend and never opens a window.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from rfbench.errors import MissingDependencyError

# rfbench draws into files, with Agg only. A backend MPLBACKEND names (for windows on a screen) is checked when
# matplotlib is imported, and a misspelt one failed every drawing command with a traceback; the variable is
# replaced before matplotlib is imported here (the one module that imports it) and in the processes started after.
if os.environ.get("MPLBACKEND"):
    os.environ["MPLBACKEND"] = "agg"

__all__ = ["PLOT_HINT", "have_matplotlib", "pck_curves", "PckCurve", "picture_paths", "unlinkable_picture",
           "write_pictures", "png_bytes", "write_picture"]

#: What to do when the extra is missing (one line, used by every command that draws).
PLOT_HINT = "matplotlib is not installed; pictures need the plot extra: pip install 'rfbench[plot]'"

#: Thresholds of the curve: ``K_POINTS`` evenly spaced values from 0 to max(0.5, the report's largest k).
K_POINTS = 51


def plot_engine() -> str:
    """The library and version that draws the pictures (``matplotlib 3.11.2``): recorded with each picture, since
    another version may draw other bytes."""
    import matplotlib

    return f"matplotlib {matplotlib.__version__}"


def have_matplotlib() -> bool:
    """Whether the optional extra can be imported (it is imported, with the Agg backend, when it can)."""
    try:
        _pyplot()
    except MissingDependencyError:
        return False
    return True


def drawing_defaults():
    """A context in which pictures are drawn with matplotlib's own defaults, whatever the user's matplotlibrc
    or style says: a picture is bound to its report by sha256 and drawn again by verify, so the verifier's
    settings file (fonts, sizes, colours) must not change its bytes."""
    import matplotlib.style

    return matplotlib.style.context("default")


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt
    except ImportError:
        raise MissingDependencyError(PLOT_HINT) from None

    return plt


@dataclass(frozen=True)
class PckCurve:
    """PCK at each threshold ``ks`` for one normalization: model and baseline values with their bands
    (NaN where undefined or absent)."""

    normalization: str
    label: str
    ks: np.ndarray
    model: np.ndarray
    model_low: np.ndarray
    model_high: np.ndarray
    baseline: np.ndarray | None
    baseline_low: np.ndarray | None
    baseline_high: np.ndarray | None
    level: float | None
    clusters: int | None


def _curve_label(spec: Mapping[str, Any]) -> str:
    """The spec's label with ``k`` left free: ``PCK@k hip-width(left_hip–right_hip) h36m17 <= micro, units m``."""
    norm = spec["normalization"]
    joints = spec.get("normalizer_joints")
    if joints:
        norm = f"{norm}({joints[0]}–{joints[1]})"
    elif norm.startswith("abs:"):
        norm = f"abs(T={norm[4:]} {spec['units']})"
    return f"PCK@k {norm} {spec['skeleton']} {spec['comparison']} micro, units {spec['units']}"


def pck_curves(report: Mapping[str, Any], captured: Mapping[str, Any], n_points: int = K_POINTS) -> list[PckCurve]:
    """PCK (micro) against the threshold k for each normalization of a pose report.

    Parameters
    ----------
    report : mapping
        The pose report (its PCK specs give the normalizations, comparison, units and bootstrap settings).
    captured : mapping
        What :func:`rfbench.report.pose.pose_report` put in its ``capture`` dict.
    n_points : int
        Number of thresholds, evenly spaced from 0 to an upper end chosen per normalization: 1.25 × the first
        threshold at which every curve reaches 0.995 (so that a loose normalizer's curve is not squeezed against
        the axis), at most max(0.5, the report's largest k).

    Returns
    -------
    list of PckCurve
        One per normalization, in the report's order; empty when the report has no PCK.
    """
    from rfbench.metrics.pose_plan import PosePlan
    from rfbench.metrics.stats import make_segments
    from rfbench.report.common import paired_intervals

    # Curves against k: an absolute threshold (abs:T) has no k, so its single value stays in the table.
    # A convention's or batch-mean value is not re-drawn under the default spec: it stays in the table too.
    specs = [r["spec"] for r in report.get("results", []) if r.get("metric") == "pck" and r["spec"].get("k") is not None
             and not r["spec"].get("convention") and r["spec"].get("averaging") != "batch-mean"]
    if not specs:
        return []
    norms = list(dict.fromkeys(s["normalization"] for s in specs))
    first = {s["normalization"]: s for s in reversed(specs)}
    k_max = max(0.5, max(float(s["k"]) for s in specs))
    pred, gt, vis = captured["pred"], captured["gt"], captured["vis"]
    clusters = captured.get("clusters")
    segments = make_segments(gt.shape[0], clusters)
    base_pose = captured.get("baseline_pose")
    boot = report.get("bootstrap") or {}
    level = float(boot["level"]) if clusters is not None and boot.get("method") else None

    def run(norm: str, ks: list[float], with_bands: bool):
        plan = PosePlan.create(skeleton=captured["skeleton"], units=specs[0]["units"], dims=gt.shape[2],
                               metrics=["pck"], normalizations=[norm], ks=ks, comparison=specs[0]["comparison"],
                               averaging=["micro"])
        table = plan.table(pred, gt, vis, segments)
        base_table = None
        if base_pose is not None:
            base_table = plan.table(np.ascontiguousarray(base_pose[None]), gt, vis, segments)
        values = {"model": _values(plan.scores(table))}
        if base_table is not None:
            values["baseline"] = _values(plan.scores(base_table))
        n = len(ks)
        lows = {side: np.full(n, np.nan) for side in values}
        highs = {side: np.full(n, np.nan) for side in values}
        if with_bands and level is not None:
            intervals = paired_intervals(table, {"baseline": base_table} if base_table is not None else {},
                                         [plan.statistic(i) for i in range(n)], n_boot=int(boot["replicates"]),
                                         level=level, seed=int(boot["seed"]))
            for (side, *rest), iv in intervals.items():
                if side in lows and len(rest) == 1 and iv.low is not None:
                    lows[side][rest[0]], highs[side][rest[0]] = iv.low, iv.high
        return values, lows, highs

    out = []
    for norm in norms:
        # Range: up to where every curve has (nearly) saturated, so a loose normalizer's curve is not a step
        # squeezed against the axis; never below the report's largest k.
        coarse = [k_max * i / (n_points - 1) for i in range(n_points)]
        values, _, _ = run(norm, coarse, False)
        done = np.ones(n_points, dtype=bool)
        for v in values.values():
            done &= np.nan_to_num(v, nan=1.0) >= 0.995
        hi = coarse[int(np.argmax(done))] * 1.25 if done.any() else k_max
        hi = min(k_max, max(hi, 0.02))
        ks = [hi * i / (n_points - 1) for i in range(n_points)]
        values, lows, highs = run(norm, ks, True)
        base = "baseline" in values
        out.append(PckCurve(
            normalization=norm, label=_curve_label(first[norm]), ks=np.array(ks), model=values["model"],
            model_low=lows["model"], model_high=highs["model"], baseline=values["baseline"] if base else None,
            baseline_low=lows["baseline"] if base else None, baseline_high=highs["baseline"] if base else None,
            level=level, clusters=boot.get("clusters") if level is not None else None))
    return out


def _values(scores) -> np.ndarray:
    return np.array([np.nan if s.value is None else s.value for s in scores], dtype=float)


def picture_paths(report_path: Path, task: str) -> list[Path]:
    """Where the pictures of ``report_path`` go: ``<stem>-pck.png`` and ``<stem>-joints.png`` (pose),
    ``<stem>-confusion.png`` (gesture)."""
    stem = report_path.with_suffix("")
    names = ("-pck.png", "-joints.png") if task == "pose" else ("-confusion.png",)
    return [stem.with_name(stem.name + n) for n in names]


def unlinkable_picture(report_path: Path, task: str) -> str | None:
    """The first name :func:`picture_paths` gives ``report_path``'s pictures that report.md cannot link (not
    :data:`rfbench.report.render.PICTURE_NAME`: a space, a bracket, non-ASCII, a leading '-'), or None: ``score
    --plots`` refuses such a report name, and verify's score re-run writes under ``report.json`` instead."""
    from rfbench.report.render import PICTURE_NAME

    return next((p.name for p in picture_paths(report_path, task) if not PICTURE_NAME.fullmatch(p.name)), None)


def png_bytes(plt, fig, **savefig) -> bytes:
    """The PNG of ``fig`` rendered in memory (``savefig``'s options: the very bytes it would write to a file),
    and the figure closed."""
    import io

    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", **savefig)
    finally:
        plt.close(fig)
    return buf.getvalue()


def write_picture(path: Path, data: bytes) -> Path:
    """Write a picture's bytes atomically (:func:`rfbench.io.files.atomic_write`: a temporary file beside
    ``path``, renamed over it): never half-written, a symbolic link at ``path`` replaced and never followed, and
    a FIFO, socket or device there refused with one line naming ``path``."""
    from rfbench.io.files import write_bytes

    return write_bytes(path, data, force=True)


def _save(plt, fig, path: Path) -> None:
    """Render to memory, then write atomically (a picture is never half-written)."""
    write_picture(path, png_bytes(plt, fig, dpi=110))


def _xlabel(norm: str, units: str) -> str:
    if norm.startswith("abs:"):
        return f"threshold k (a joint counts when its error ≤ k × {norm[4:]} {units})"
    return f"threshold k (fraction of the {norm} normalizer; dimensionless)"


def _tag(report: Mapping[str, Any]) -> str:
    tag = str(report.get("evidence"))
    if (report.get("split") or {}).get("leakage_prone"):
        tag += ", LEAKAGE-PRONE split"
    return tag


def _pck_figure(plt, report, curves: Sequence[PckCurve], path: Path) -> None:
    fig, axes = plt.subplots(1, len(curves), figsize=(6.4 * len(curves), 4.8), squeeze=False, sharey=True)
    report_ks = sorted({float(r["spec"]["k"]) for r in report["results"]
                        if r.get("metric") == "pck" and r["spec"].get("k") is not None})
    for ax, c in zip(axes[0], curves):
        band = f", {100 * c.level:g}% band" if c.level is not None else ""
        ax.plot(c.ks, c.model, color="tab:blue", lw=2, label=f"model{band}")
        if c.level is not None:
            ax.fill_between(c.ks, c.model_low, c.model_high, color="tab:blue", alpha=0.2, lw=0)
        if c.baseline is not None:
            ax.plot(c.ks, c.baseline, color="tab:orange", lw=2, ls="--", label=f"mean-pose baseline{band}")
            if c.level is not None:
                ax.fill_between(c.ks, c.baseline_low, c.baseline_high, color="tab:orange", alpha=0.2, lw=0)
        for k in report_ks:
            ax.axvline(k, color="0.6", lw=0.8, ls=":")
        ax.set_title(c.label, fontsize=9)
        ax.set_xlabel(_xlabel(c.normalization, report["results"][0]["spec"]["units"]), fontsize=9)
        ax.set_xlim(0, c.ks[-1])
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    axes[0][0].set_ylabel("PCK (fraction of scoreable joints within k)")
    boot = report.get("bootstrap") or {}
    how = (f"bands: {boot.get('replicates')}-replicate cluster bootstrap over {boot.get('clusters')} "
           f"{boot.get('cluster_by')}s" if boot.get("method") else "no bootstrap band: " + str(boot.get("reason")))
    fig.suptitle(f"PCK vs threshold — {_tag(report)}; dotted lines: the report's thresholds; {how}", fontsize=9)
    fig.tight_layout()
    _save(plt, fig, path)


def _joints_figure(plt, report, path: Path) -> bool:
    macro = [r for r in report["results"] if r.get("metric") == "pck" and r["spec"]["averaging"] == "macro"
             and r["spec"].get("k") is not None and not r["spec"].get("convention")
             and (r.get("model") or {}).get("per_joint")]
    if not macro:
        return False
    r = min(macro, key=lambda r: (r["spec"]["normalization"] != macro[0]["spec"]["normalization"],
                                  abs(float(r["spec"]["k"]) - 0.2)))
    joints = list((report.get("skeleton") or {}).get("joints") or r["model"]["per_joint"])
    model = np.array([np.nan if r["model"]["per_joint"].get(j) is None else r["model"]["per_joint"][j]
                      for j in joints], dtype=float)
    base_pj = (r.get("baseline") or {}).get("per_joint")
    y = np.arange(len(joints))
    fig, ax = plt.subplots(figsize=(7.5, 0.32 * len(joints) + 1.8))
    h = 0.4 if base_pj else 0.7
    ax.barh(y - (h / 2 if base_pj else 0), model, height=h, color="tab:blue", label="model")
    if base_pj:
        base = np.array([np.nan if base_pj.get(j) is None else base_pj[j] for j in joints], dtype=float)
        ax.barh(y + h / 2, base, height=h, color="tab:orange", label="mean-pose baseline")
    ax.set_yticks(y, joints, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel(f"PCK at k = {r['spec']['k']:g} (fraction of that joint's scoreable frames)")
    ax.set_title(f"Per joint: {r['label']}, units {r['spec']['units']}\n{_tag(report)}", fontsize=9, pad=22)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=8, frameon=False)
    fig.tight_layout()
    _save(plt, fig, path)
    return True


def _confusion_figure(plt, report, path: Path) -> bool:
    conf = report.get("confusion") or {}
    if conf.get("matrix") is None:
        return False
    names = list(conf["classes"])
    m = np.array(conf["matrix"], dtype=float)
    used = [i for i in range(len(names)) if m[i].sum() or m[:, i].sum()]  # classes in the truth or predictions
    m = m[np.ix_(used, used)]
    names = [names[i] for i in used]
    size = max(5.0, 0.45 * len(names) + 3.0)
    fig, ax = plt.subplots(figsize=(size + 1.5, size))
    im = ax.imshow(m, cmap="Blues", vmin=0, vmax=max(1.0, float(m.max())))
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            if m[i, j]:
                ax.text(j, i, f"{int(m[i, j])}", ha="center", va="center", fontsize=8,
                        color="white" if m[i, j] > m.max() / 2 else "black")
    acc = np.trace(m) / m.sum() if m.sum() else float("nan")
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_xlabel("predicted class")
    ax.set_ylabel("true class")
    left_out = len(conf["classes"]) - len(names)
    extra = f"\n{left_out} declared class(es) in neither truth nor predictions not drawn" if left_out else ""
    ax.set_title(f"Confusion matrix of the {int(m.sum())} test rows (accuracy {acc:.3f}) — {_tag(report)}{extra}",
                 fontsize=9)
    fig.colorbar(im, ax=ax, label="test rows", fraction=0.046, pad=0.04)
    fig.tight_layout()
    _save(plt, fig, path)
    return True


def write_pictures(report: Mapping[str, Any], captured: Mapping[str, Any] | None, report_path: Path,
                   force: bool = False) -> list[tuple[str, Path]]:
    """Draw the pictures of a report beside ``report_path``; returns ``(caption, path)`` of each written.

    Raises
    ------
    MissingDependencyError
        matplotlib is not installed (``pip install 'rfbench[plot]'``).
    OutputExistsError
        A picture exists and ``force`` is false.
    """
    from rfbench.io.files import check_writable

    plt = _pyplot()
    paths = picture_paths(Path(report_path), report["task"])
    for p in paths:
        check_writable(p, force)
    written: list[tuple[str, Path]] = []
    with drawing_defaults():
        if report["task"] == "pose":
            curves = pck_curves(report, captured) if captured else []
            if curves:
                _pck_figure(plt, report, curves, paths[0])
                written.append(("PCK against the threshold k, model and mean-pose baseline", paths[0]))
            if _joints_figure(plt, report, paths[1]):
                written.append(("PCK per joint (macro entry), model and mean-pose baseline", paths[1]))
        elif _confusion_figure(plt, report, paths[0]):
            written.append(("Confusion matrix of the test rows", paths[0]))
    return written
