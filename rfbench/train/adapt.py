"""Test-time adaptation: a low-rank adapter on CSI features, fitted to a self-supervised proxy objective.

The adapter maps frame features ``f`` (frames, D) to ``g = f + (f A) B`` with ``A`` (D, r) and ``B`` (r, D),
so it starts as the identity (``B = 0``) and changes at most a rank-r subspace. It is fitted by minimising

    objective = temporal_contrastive(g) + entropy_weight * entropy(g)

- **temporal-contrastive** (InfoNCE over time): with ``u_t = g_t / |g_t|`` and ``s_tj = u_t·u_j / τ``, the
  mean over t = 0..T-2 of ``-s_{t,t+1} + log Σ_{j≠t} exp(s_tj)``: neighbouring frames should be more alike
  than distant ones;
- **entropy**: with fixed prototypes ``p_k`` (unit vectors), ``q_t = softmax_k(u_t·p_k / τ)``; the mean over t
  of ``-Σ_k q_tk log q_tk``: each frame should commit to a prototype.

Both are pure functions of their arguments (:func:`temporal_contrastive`, :func:`entropy`,
:func:`objective`). The gradient is the **central finite difference of exactly that objective**,
``(F(θ + h e_i) - F(θ - h e_i)) / ((θ_i + h) - (θ_i - h))`` for every parameter, evaluated by the same
compiled function that reports the loss. Each step tries ``θ - lr·g`` and halves ``lr`` until the objective
does not increase (at most ``max_halvings`` times; if none succeeds, adaptation stops), so the loss after N
steps is never above the loss at 0 steps. The returned final loss is recomputed at the returned weights.

**No pose gain is claimed.** A lower proxy objective says nothing about pose accuracy; whether adaptation
helps a task has to be measured on labelled data with ``rfbench score``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from rfbench._jit import njit
from rfbench.errors import FormatError, ValidationError

__all__ = [
    "AdaptSettings",
    "AdaptResult",
    "NO_POSE_GAIN",
    "csi_amplitude",
    "load_amplitude",
    "standardize",
    "csi_features",
    "synthetic_features",
    "choose_prototypes",
    "apply_adapter",
    "temporal_contrastive",
    "entropy",
    "objective",
    "fd_gradient",
    "adapt",
    "adapt_file",
    "adapt_work",
    "MAX_ADAPT_WORK",
]

#: Largest feature magnitude adapted on: standardising squares the values, which overflows beyond ~1e154.
MAX_FEATURE = 1e100

#: Most arithmetic an adaptation may take, in the units of :func:`adapt_work` (about 1.4e9 a second on one core
#: of the reference machine: some 6 minutes). The work grows with frames² × dims² (each of the 2·dims·rank
#: parameters' finite difference evaluates the whole objective, whose temporal term compares every pair of
#: frames): a wide input must be refused, not run for hours.
MAX_ADAPT_WORK = 5e11

NO_POSE_GAIN = ("No pose gain is claimed: adaptation lowers a self-supervised proxy objective "
                "(temporal-contrastive + entropy), which says nothing about pose accuracy.")


# ---------------------------------------------------------------------------------------------- kernels


@njit
def _apply(f, a, b, g):
    """``g = f + (f a) b``."""
    n_t, d = f.shape
    r = a.shape[1]
    h = np.empty(r)
    for t in range(n_t):
        for k in range(r):
            acc = 0.0
            for i in range(d):
                acc += f[t, i] * a[i, k]
            h[k] = acc
        for j in range(d):
            acc = 0.0
            for k in range(r):
                acc += h[k] * b[k, j]
            g[t, j] = f[t, j] + acc


@njit
def _unit_rows(g, u):
    """``u_t = g_t / |g_t|``; a zero row stays zero."""
    for t in range(g.shape[0]):
        s = 0.0
        for j in range(g.shape[1]):
            s += g[t, j] * g[t, j]
        norm = math.sqrt(s)
        inv = 1.0 / norm if norm > 0.0 else 0.0
        for j in range(g.shape[1]):
            u[t, j] = g[t, j] * inv


@njit
def _temporal_contrastive(u, tau):
    n_t, d = u.shape
    if n_t < 2:
        return 0.0
    sims = np.empty(n_t)
    total = 0.0
    for t in range(n_t - 1):
        top = -np.inf
        for j in range(n_t):
            acc = 0.0
            for e in range(d):
                acc += u[t, e] * u[j, e]
            sims[j] = acc / tau
            if j != t and sims[j] > top:
                top = sims[j]
        s = 0.0
        for j in range(n_t):
            if j != t:
                s += math.exp(sims[j] - top)
        total += -sims[t + 1] + top + math.log(s)
    return total / (n_t - 1)


@njit
def _entropy(u, protos, tau):
    n_t, d = u.shape
    n_k = protos.shape[0]
    logits = np.empty(n_k)
    total = 0.0
    for t in range(n_t):
        top = -np.inf
        for k in range(n_k):
            acc = 0.0
            for e in range(d):
                acc += u[t, e] * protos[k, e]
            logits[k] = acc / tau
            if logits[k] > top:
                top = logits[k]
        s = 0.0
        for k in range(n_k):
            s += math.exp(logits[k] - top)
        log_s = math.log(s)
        h = 0.0
        for k in range(n_k):
            log_q = logits[k] - top - log_s
            h -= math.exp(log_q) * log_q
        total += h
    return total / n_t


@njit
def _objective(theta, f, protos, rank, tau, entropy_weight, parts):
    """Objective at flat parameters ``theta = [A.ravel(), B.ravel()]``; ``parts`` receives (tc, entropy)."""
    n_t, d = f.shape
    a = theta[: d * rank].reshape((d, rank))
    b = theta[d * rank:].reshape((rank, d))
    g = np.empty((n_t, d))
    _apply(f, a, b, g)
    u = np.empty((n_t, d))
    _unit_rows(g, u)
    tc = _temporal_contrastive(u, tau)
    ent = _entropy(u, protos, tau)
    parts[0] = tc
    parts[1] = ent
    return tc + entropy_weight * ent


@njit
def _fd_gradient(theta, f, protos, rank, tau, entropy_weight, h, grad):
    """Central differences of :func:`_objective`, one coordinate at a time."""
    parts = np.empty(2)
    work = theta.copy()
    for i in range(theta.shape[0]):
        up = theta[i] + h
        down = theta[i] - h
        work[i] = up
        f_up = _objective(work, f, protos, rank, tau, entropy_weight, parts)
        work[i] = down
        f_down = _objective(work, f, protos, rank, tau, entropy_weight, parts)
        work[i] = theta[i]
        grad[i] = (f_up - f_down) / (up - down)


# ---------------------------------------------------------------------------------------------- public


@dataclass(frozen=True)
class AdaptSettings:
    """Adaptation settings (the ``[adapt]`` section of the config holds the same names)."""

    rank: int = 2
    steps: int = 5
    learning_rate: float = 8.0
    fd_step: float = 1e-5
    temperature: float = 0.5
    entropy_weight: float = 0.1
    prototypes: int = 8
    max_halvings: int = 20
    seed: int = 0

    def __post_init__(self):
        minimum = {"rank": 1, "prototypes": 1, "steps": 0, "max_halvings": 0, "seed": 0}
        for name, low in minimum.items():
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < low:
                raise ValidationError(f"adapt {name} must be an integer >= {low}, got {v!r}")
        for name, positive in (("learning_rate", True), ("fd_step", True), ("temperature", True),
                               ("entropy_weight", False)):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0 \
                    or (positive and v == 0):
                raise ValidationError(f"adapt {name} must be a finite number {'>' if positive else '>='} 0, "
                                      f"got {v!r}")


@dataclass(frozen=True)
class AdaptResult:
    """Outcome of :func:`adapt`.

    ``loss_final`` is recomputed by :func:`objective` at the returned ``a`` and ``b``; ``history`` holds the
    objective after each accepted step, starting with the value at 0 steps.
    """

    a: np.ndarray
    b: np.ndarray
    prototypes: np.ndarray
    loss_initial: float
    loss_final: float
    temporal_contrastive_final: float
    entropy_final: float
    history: list
    steps_accepted: int
    stopped_early: bool
    evaluations: int
    settings: AdaptSettings
    notes: list = field(default_factory=list)


def _features(name: str, arr) -> np.ndarray:
    arr = np.asarray(arr)
    if arr.ndim != 2 or arr.shape[0] < 2 or arr.shape[1] < 1:
        raise ValidationError(f"{name} must be a (frames >= 2, dims >= 1) array, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.floating) and not np.issubdtype(arr.dtype, np.integer):
        raise ValidationError(f"{name} must be real-valued, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if not (np.abs(arr) <= MAX_FEATURE).all():  # False for NaN too
        if not np.isfinite(arr).all():
            raise ValidationError(f"{name} holds NaN or inf; drop or repair those frames first")
        raise ValidationError(f"{name} holds values beyond ±{MAX_FEATURE:g} (their squares overflow); check the "
                              "input's scale")
    return arr


def csi_amplitude(csi, max_frames: int | None = None) -> np.ndarray:
    """``|csi|`` flattened per record: (frames, dims) float64, the first ``max_frames`` records only if given.

    Parameters
    ----------
    csi : array_like, (records, subcarriers, ...) complex or real
        E.g. the ``csi`` array of a ``rfbench parse`` archive.
    max_frames : int, optional
    """
    csi = np.asarray(csi)
    if csi.ndim < 2:
        raise ValidationError(f"csi must have at least 2 dimensions (records, subcarriers, ...), got {csi.shape}")
    if max_frames is not None:
        csi = csi[:max_frames]
    return _features("csi amplitude", np.abs(csi).reshape(csi.shape[0], -1).astype(np.float64))


def load_amplitude(path, max_frames: int) -> np.ndarray:
    """Amplitude features (frames, dims) of the first ``max_frames`` records of a file.

    Parameters
    ----------
    path : path-like
        A CSI archive from ``rfbench parse`` (``.npz`` with ``csi`` (records, subcarriers, ...) complex, or
        ``csi_int8`` (records, subcarriers, ..., 2) integers: real and imaginary parts), or a ``.npy`` of
        features (frames, dims).
    max_frames : int
        Records read: only these are inflated and allocated, whatever the archive holds.

    Raises
    ------
    FormatError
        Not a NumPy file, no ``csi``/``csi_int8``, an object array, a mis-shaped or non-numeric array, fewer
        than 2 records, or a declared size that the file cannot hold (:func:`rfbench.io.files.load_npy`).
    """
    from pathlib import Path

    from rfbench.io.files import load_npy, load_npz_member, npz_members

    path = Path(path)
    if isinstance(max_frames, bool) or not isinstance(max_frames, (int, np.integer)) or max_frames < 2:
        raise ValidationError(f"max_frames must be an integer >= 2, got {max_frames!r}")
    if path.is_dir():
        raise FormatError(f"{path} is a folder; give one .npz archive or .npy file")
    if not path.exists():
        raise FormatError(f"{path}: no such file")
    import os

    from rfbench.io.files import NotRegularFile, open_regular

    try:  # sniffed through the safe opener: a FIFO is refused unread, never waited on
        fd = open_regular(path, True)
        try:
            head = os.read(fd, 6)
        finally:
            os.close(fd)
    except NotRegularFile:
        raise FormatError(f"{path}: not a regular file; give one .npz archive or .npy file") from None
    except OSError as exc:
        raise FormatError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if head == b"\x93NUMPY":
        features = load_npy(path, max_rows=int(max_frames))
        if features.ndim != 2:
            raise FormatError(f"{path}: a features .npy must be 2-D (frames, dims), got shape {features.shape}")
        _check_numeric(path, "features", features)
        return features
    if head[:4] != b"PK\x03\x04":
        raise FormatError(f"{path}: not a NumPy .npz/.npy file (no NumPy or zip header)")
    names = npz_members(path)
    if "csi" in names:
        csi = load_npz_member(path, "csi", max_rows=int(max_frames))
        if csi.ndim < 2:
            raise FormatError(f"{path}: csi must be (records, subcarriers, ...), got shape {csi.shape}")
        _check_numeric(path, "csi", csi)
    elif "csi_int8" in names:
        raw = load_npz_member(path, "csi_int8", max_rows=int(max_frames))
        if raw.ndim < 3 or raw.shape[-1] != 2 or not np.issubdtype(raw.dtype, np.integer):
            raise FormatError(f"{path}: csi_int8 must be (records, subcarriers, ..., 2) integers (real and "
                              f"imaginary parts), got shape {raw.shape} {raw.dtype}")
        raw = raw.astype(np.float64)
        csi = raw[..., 0] + 1j * raw[..., 1]
    else:
        raise FormatError(f"{path}: no 'csi' or 'csi_int8' array (found {', '.join(names) or 'none'}); "
                          "give an archive written by `rfbench parse`")
    if csi.shape[0] < 2:
        raise FormatError(f"{path}: the archive holds {csi.shape[0]} CSI record(s); adaptation needs at least 2")
    if 0 in csi.shape[1:]:
        raise FormatError(f"{path}: csi has an empty dimension (shape {csi.shape})")
    return csi_amplitude(csi, max_frames)


def _check_numeric(path, name: str, arr: np.ndarray) -> None:
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.number)):
        raise FormatError(f"{path}: {name} must be numeric, got dtype {arr.dtype}")


def standardize(features) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``((f - mean) / scale, mean, scale)`` per column; ``scale`` is the standard deviation, or 1 for a
    constant column (which is then only centred)."""
    f = _features("features", features)
    mean = f.mean(axis=0)
    std = (f - mean).std(axis=0)
    scale = np.where(std > 0, std, 1.0)
    return (f - mean) / scale, mean, scale


def csi_features(csi, max_frames: int | None = None) -> np.ndarray:
    """Standardised per-frame CSI amplitudes: ``standardize(csi_amplitude(csi, max_frames))[0]``."""
    return standardize(csi_amplitude(csi, max_frames))[0]


def synthetic_features(frames: int = 64, dims: int = 30, seed: int = 0) -> np.ndarray:
    """Seeded features with temporal structure: a smooth 3-D random walk mixed into ``dims`` dims, plus noise."""
    if frames < 2 or dims < 1:
        raise ValidationError(f"synthetic features need frames >= 2 and dims >= 1, got {frames}, {dims}")
    rng = np.random.default_rng(seed)
    walk = np.cumsum(rng.uniform(-1.0, 1.0, (frames, 3)), axis=0)
    mix = rng.uniform(-1.0, 1.0, (3, dims))
    raw = (walk[:, :, None] * mix[None, :, :]).sum(axis=1) + 0.3 * rng.uniform(-1.0, 1.0, (frames, dims))
    return standardize(raw)[0]


def choose_prototypes(features, count: int) -> np.ndarray:
    """``count`` unit-length prototypes: the unadapted frames at evenly spaced times (first and last included).

    Deterministic (no seed): frame ``round(k * (T - 1) / (count - 1))`` for k = 0..count-1 (frame 0 when
    ``count == 1``), normalised to unit length.
    """
    f = _features("features", features)
    if not isinstance(count, (int, np.integer)) or count < 1:
        raise ValidationError(f"prototypes must be a positive integer, got {count!r}")
    n_t = f.shape[0]
    idx = [0] if count == 1 else [int(round(k * (n_t - 1) / (count - 1))) for k in range(count)]
    protos = f[idx].copy()
    u = np.empty_like(protos)
    _unit_rows(protos, u)
    return u


def apply_adapter(features, a, b) -> np.ndarray:
    """Adapted features ``f + (f a) b``.

    Parameters
    ----------
    features : array_like, (frames, D)
    a : array_like, (D, r)
    b : array_like, (r, D)
    """
    f = _features("features", features)
    a, b = _adapter_arrays(a, b, f.shape[1])
    g = np.empty(f.shape)
    _apply(f, a, b, g)
    return g


def _adapter_arrays(a, b, d):
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] != d or b.ndim != 2 or b.shape != (a.shape[1], d) or a.shape[1] < 1:
        raise ValidationError(f"adapter shapes must be a ({d}, r) and b (r, {d}) with r >= 1, "
                              f"got a {a.shape} and b {b.shape}")
    return a, b


def _unit(g) -> np.ndarray:
    u = np.empty(g.shape)
    _unit_rows(g, u)
    return u


def temporal_contrastive(adapted, temperature: float) -> float:
    """Temporal InfoNCE of adapted features ``(frames, D)`` (see the module docstring); pure."""
    g = _features("adapted features", adapted)
    return float(_temporal_contrastive(_unit(g), float(temperature)))


def entropy(adapted, prototypes, temperature: float) -> float:
    """Mean entropy of the soft prototype assignment of adapted features (see the module docstring); pure."""
    g = _features("adapted features", adapted)
    p = np.ascontiguousarray(prototypes, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != g.shape[1] or p.shape[0] < 1:
        raise ValidationError(f"prototypes must have shape (K, {g.shape[1]}), got {p.shape}")
    return float(_entropy(_unit(g), p, float(temperature)))


def objective(features, a, b, prototypes, temperature: float, entropy_weight: float) -> tuple[float, float, float]:
    """``(total, temporal_contrastive, entropy)`` at adapter weights ``a``, ``b``; pure.

    Parameters
    ----------
    features : array_like, (frames, D)
        Unadapted features.
    a, b : array_like
        Adapter weights, (D, r) and (r, D).
    prototypes : array_like, (K, D)
        Unit-length prototypes (:func:`choose_prototypes`).
    temperature, entropy_weight : float
    """
    f = _features("features", features)
    a, b = _adapter_arrays(a, b, f.shape[1])
    p = np.ascontiguousarray(prototypes, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != f.shape[1]:
        raise ValidationError(f"prototypes must have shape (K, {f.shape[1]}), got {p.shape}")
    parts = np.empty(2)
    theta = np.concatenate([a.ravel(), b.ravel()])
    total = _objective(theta, f, p, a.shape[1], float(temperature), float(entropy_weight), parts)
    return float(total), float(parts[0]), float(parts[1])


def fd_gradient(features, a, b, prototypes, temperature: float, entropy_weight: float,
                fd_step: float) -> tuple[np.ndarray, np.ndarray]:
    """Central finite-difference gradient of :func:`objective` with respect to ``a`` and ``b``.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        d objective / d a, d objective / d b, with the shapes of ``a`` and ``b``.
    """
    f = _features("features", features)
    a, b = _adapter_arrays(a, b, f.shape[1])
    p = np.ascontiguousarray(prototypes, dtype=np.float64)
    theta = np.concatenate([a.ravel(), b.ravel()])
    grad = np.empty(theta.shape)
    _fd_gradient(theta, f, p, a.shape[1], float(temperature), float(entropy_weight), float(fd_step), grad)
    return grad[: a.size].reshape(a.shape), grad[a.size:].reshape(b.shape)


def adapt_work(frames: int, dims: int, settings: "AdaptSettings") -> float:
    """The arithmetic an adaptation of ``frames`` × ``dims`` features takes at most: per step, the objective at
    both sides of each of the ``2 · dims · rank`` parameters, and up to ``max_halvings + 1`` trials; an objective
    is about ``frames · dims · (2 rank + 1 + frames + prototypes)`` operations."""
    s = settings
    per_objective = float(frames) * dims * (2 * s.rank + 1 + frames + min(s.prototypes, frames))
    return s.steps * (4.0 * dims * s.rank + s.max_halvings + 1) * per_objective + per_objective


def adapt(features, settings: AdaptSettings = AdaptSettings(), advance=None) -> AdaptResult:
    """Fit a low-rank adapter to ``features`` by descending the proxy objective (see the module docstring).

    Parameters
    ----------
    features : array_like, (frames >= 2, D)
        Finite, unadapted features (e.g. :func:`csi_features`).
    settings : AdaptSettings
    advance : callable, optional
        Called after every step (progress bars).

    Returns
    -------
    AdaptResult
        Its ``loss_final`` is ``objective(...)`` recomputed at the returned weights, and never exceeds
        ``loss_initial``.
    """
    f = _features("features", features)
    s = settings
    n_t, d = f.shape
    if s.rank > d:
        raise ValidationError(f"adapt rank {s.rank} exceeds the feature dimension {d}; use rank <= {d}")
    work = adapt_work(n_t, d, s)
    if work > MAX_ADAPT_WORK:
        raise ValidationError(f"adapting {n_t} frames of {d} dims at rank {s.rank} for {s.steps} step(s) is about "
                              f"{work:.1e} operations, past the {MAX_ADAPT_WORK:.0e} adapt takes (minutes grow to "
                              f"hours with frames² × dims²); lower `max_frames`, `rank` or `steps`, or give fewer "
                              f"feature dims")
    protos = choose_prototypes(f, min(s.prototypes, n_t))
    rng = np.random.default_rng(s.seed)
    a0 = rng.uniform(-1.0, 1.0, (d, s.rank)) / math.sqrt(d)
    theta = np.concatenate([a0.ravel(), np.zeros(s.rank * d)])
    parts = np.empty(2)
    tau, lam = float(s.temperature), float(s.entropy_weight)
    loss = _objective(theta, f, protos, s.rank, tau, lam, parts)
    history = [float(loss)]
    evaluations = 1
    accepted = 0
    stopped_early = False
    grad = np.empty(theta.shape)
    for _ in range(s.steps):
        _fd_gradient(theta, f, protos, s.rank, tau, lam, float(s.fd_step), grad)
        evaluations += 2 * theta.size
        lr = float(s.learning_rate)
        moved = False
        for _ in range(s.max_halvings + 1):
            trial = theta - lr * grad
            trial_loss = _objective(trial, f, protos, s.rank, tau, lam, parts)
            evaluations += 1
            if trial_loss <= loss:
                theta, loss, moved = trial, trial_loss, True
                break
            lr *= 0.5
        if advance is not None:
            advance()
        if not moved:
            stopped_early = True
            break
        accepted += 1
        history.append(float(loss))
    a = theta[: d * s.rank].reshape(d, s.rank).copy()
    b = theta[d * s.rank:].reshape(s.rank, d).copy()
    final, tc, ent = objective(f, a, b, protos, tau, lam)  # recomputed at the returned weights
    notes = [NO_POSE_GAIN]
    if stopped_early:
        notes.append("stopped early: no step along the finite-difference gradient lowered the objective")
    return AdaptResult(a, b, protos, history[0], final, tc, ent, history, accepted, stopped_early,
                       evaluations + 1, s, notes)


def adapt_file(source=None, settings: AdaptSettings | None = None, *, synthetic: bool = False,
               max_frames: int = 4096, out=None, force: bool = False, config_source=None, advance=None) -> dict:
    """What ``rfbench adapt`` does: load the features (a CSI archive, a ``.npy`` of features, or seeded synthetic
    ones), fit the adapter, and write it to ``out`` (a ``.npz`` with the weights, the feature standardisation and
    the summary) when given.

    Parameters
    ----------
    source : path-like, optional
        A CSI archive from ``rfbench parse`` or a ``.npy`` of features ``(frames, dims)``; None with ``synthetic``.
    settings : AdaptSettings, optional
        The adapter's settings (default :class:`AdaptSettings`).
    synthetic : bool
        Adapt on seeded synthetic features (``min(64, max_frames)`` frames × 30 dims) instead.
    max_frames : int
        Frames read from ``source``, from the start.
    out : path-like, optional
        Where to write the adapter; checked before any work, replaced only with ``force``.
    config_source : path-like, optional
        The config file the settings came from, recorded in the summary.
    advance : callable, optional
        Called after each step.

    Returns
    -------
    dict
        The summary (``rfbench adapt --json``): losses, steps, settings, notes; ``pose_gain_claimed`` is False.

    Examples
    --------
    >>> from rfbench.train.adapt import AdaptSettings, adapt_file
    >>> summary = adapt_file(synthetic=True, settings=AdaptSettings(steps=2))
    >>> summary["loss_final"] <= summary["loss_initial"], summary["pose_gain_claimed"]
    (True, False)
    """
    from rfbench.io.files import check_writable, dumps_json, refuse_inputs, save_npz

    settings = settings or AdaptSettings()
    if (source is None) == (not synthetic):
        raise ValidationError("give a CSI archive or a .npy of features, or `synthetic` (not both)")
    if out is not None:
        check_writable(out, force)
        refuse_inputs([out], [source])
    if synthetic:
        features = synthetic_features(min(64, max_frames), 30, settings.seed)
        mean = scale = None
        described = f"synthetic features (seed {settings.seed})"
    else:
        features, mean, scale = standardize(load_amplitude(source, max_frames))
        described = str(source)
    result = adapt(features, settings, advance)
    summary = {
        "source": described,
        "frames": int(features.shape[0]),
        "dims": int(features.shape[1]),
        "parameters": int(result.a.size + result.b.size),
        "loss_initial": result.loss_initial,
        "loss_final": result.loss_final,
        "loss_final_recomputed_at_returned_weights": True,
        "temporal_contrastive_final": result.temporal_contrastive_final,
        "entropy_final": result.entropy_final,
        "history": result.history,
        "steps_requested": settings.steps,
        "steps_accepted": result.steps_accepted,
        "stopped_early": result.stopped_early,
        "evaluations": result.evaluations,
        "settings": {k: getattr(settings, k) for k in settings.__dataclass_fields__},
        "config": str(config_source) if config_source else None,
        "pose_gain_claimed": False,
        "notes": result.notes,
        "out": str(out) if out is not None else None,
    }
    if out is not None:
        arrays = {"a": result.a, "b": result.b, "prototypes": result.prototypes,
                  "history": np.asarray(result.history), "summary_json": np.asarray(dumps_json(summary))}
        if mean is not None:
            arrays.update(feature_mean=mean, feature_scale=scale)
        save_npz(out, arrays, force=force)
    return summary
