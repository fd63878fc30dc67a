"""The training proof: a seeded synthetic training run whose weights must hash to a committed baseline.

What it proves
--------------
1. **Determinism**: the same code and pinned dependencies produce bit-identical weights, on any x86-64 CPU
   (the sha256 of the trained weights equals the committed ``fixtures/expected_proof.sha256``).
2. **The optimiser moves the loss**: the training loss falls by at least :data:`MIN_LOSS_DECREASE`.

What it does not prove: accuracy, generalisation, or anything about real CSI. The data are synthetic and
the model tiny; a PASS says nothing about pose error.

Verdicts (DESIGN.md §1, §8)
---------------------------
- **FAIL** (exit 1): the loss fell by less than the margin (checked even with no baseline), or a baseline
  exists and a hash differs, or the baseline file is unreadable.
- **SKIP** (exit 3): the loss fell enough but there is no committed baseline: nothing was compared, so this is
  never a pass.
- **PASS** (exit 0): the loss fell enough and both the weights hash and the data hash equal the baseline.

What determinism depends on
---------------------------
- numpy (PCG64 stream of ``Generator.random``), numba and llvmlite at the versions in ``constraints.txt``;
- IEEE-754 double arithmetic with the default rounding mode and no flush-to-zero (every x86-64 CPU, SSE2);
- code generation without fastmath: no reassociation, no fused multiply-add (``rfbench/_jit.py``);
- serial kernels with a written summation order (no threads, so the thread count cannot matter);
- no BLAS (``@``, ``np.dot``, ``np.matmul`` pick CPU-specific kernels) and no libm transcendental: the only
  ``exp`` is :func:`rfbench.nn.layers.exp`, built from ``+ - * /`` and an exact ``ldexp``;
- the data are generated here from the seed and hashed too, so a changed generator is told apart from a
  changed optimiser.

Canonical byte layout (hashed with sha256)
------------------------------------------
``b"rfbench.proof.<kind>/1\\n"``, then for each array in order: its name in ASCII and ``b"\\n"``, its number
of dimensions and each dimension as little-endian int64, then its values as little-endian float64 in C order.
``<kind>`` is ``weights`` (the parameters in :func:`rfbench.nn.model.param_shapes` order) or ``data``
(``x`` then ``y``).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from rfbench._jit import njit
from rfbench.errors import ValidationError
from rfbench.nn import model as _model

__all__ = [
    "MIN_LOSS_DECREASE",
    "PROOF_SPEC",
    "DEFAULTS",
    "DEFAULT_HASH_FILE",
    "PROVES",
    "DOES_NOT_PROVE",
    "DETERMINISM_DEPENDS_ON",
    "synthetic_pose_data",
    "hash_arrays",
    "weights_sha256",
    "data_sha256",
    "train",
    "run_proof",
    "ProofRun",
    "Baseline",
    "read_baseline",
    "format_baseline",
    "judge",
    "Verdict",
    "prove",
    "Proof",
]

#: The smallest loss decrease that counts as the optimiser moving the loss.
MIN_LOSS_DECREASE = 1e-4
#: The model the proof trains.
PROOF_SPEC = _model.ModelSpec()
#: Default run: the committed baseline was generated with exactly these.
DEFAULTS = {"seed": 0, "steps": 40, "lr": 0.1, "samples": 64}
_N_LATENT = 4
_NOISE_SCALE = 0.1
#: The committed baseline, relative to the source tree (present in a clone, absent from an installed wheel).
DEFAULT_HASH_FILE = Path(__file__).resolve().parents[2] / "fixtures" / "expected_proof.sha256"

PROVES = ("the training run is bit-for-bit deterministic (weights hash equals the committed baseline) and "
          "the optimiser lowers the training loss by at least MIN_LOSS_DECREASE")
DOES_NOT_PROVE = ("accuracy, generalisation, or anything about real CSI: the data are synthetic and the model "
                  "tiny, so a PASS says nothing about pose error")
DETERMINISM_DEPENDS_ON = (
    "numpy, numba and llvmlite at the versions pinned in constraints.txt",
    "IEEE-754 double arithmetic, default rounding, no flush-to-zero (any x86-64 CPU)",
    "Numba code generation without fastmath: no reassociation, no fused multiply-add",
    "serial kernels with a fixed summation order (the thread count cannot matter)",
    "no BLAS and no libm exp/log: rfbench's own exp from + - * / and ldexp",
)

_HEX64 = re.compile(r"^[0-9a-fA-F]{64}$")


# ------------------------------------------------------------------------------------------------ data


@njit
def _synthetic(z, patterns, noise, base_pose, pose_basis, noise_scale, x, y):
    """``x[n] = sum_l z[n, l]*patterns[l] + noise_scale*noise[n]``; ``y[n] = base_pose + sum_l z[n, l]*basis[l]``."""
    n_samples, n_latent = z.shape
    for n in range(n_samples):
        for f in range(x.shape[1]):
            acc = 0.0
            for la in range(n_latent):
                acc += z[n, la] * patterns[la, f]
            x[n, f] = acc + noise_scale * noise[n, f]
        for o in range(y.shape[1]):
            acc = 0.0
            for la in range(n_latent):
                acc += z[n, la] * pose_basis[la, o]
            y[n, o] = base_pose[o] + acc


def _uniform_symmetric(rng: np.random.Generator, shape) -> np.ndarray:
    u = rng.random(math.prod(shape))
    out = np.empty(u.shape)
    _model._symmetric(u, 1.0, out)
    return out.reshape(shape)


def synthetic_pose_data(n_samples: int, spec: _model.ModelSpec, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded synthetic CSI windows and poses that share a low-dimensional latent.

    ``n_latent = 4`` latents ``z`` uniform in [-1, 1); each window is a latent-weighted sum of fixed random
    patterns plus 0.1 × uniform noise; each pose is a fixed base pose plus a latent-weighted sum of fixed
    joint offsets. Uniforms come from PCG64 (``Generator.random``), in the order z, patterns, noise, base
    pose, pose basis; all arithmetic runs in a serial kernel.

    Returns
    -------
    x : numpy.ndarray, (n_samples, antennas, subcarriers, frames)
    y : numpy.ndarray, (n_samples, keypoints, coords)
    """
    if not isinstance(n_samples, int) or isinstance(n_samples, bool) or n_samples < 1:
        raise ValidationError(f"n_samples must be a positive integer, got {n_samples!r}")
    rng = np.random.Generator(np.random.PCG64(int(seed)))
    n_in = spec.antennas * spec.subcarriers * spec.frames
    n_out = spec.keypoints * spec.coords
    z = _uniform_symmetric(rng, (n_samples, _N_LATENT))
    patterns = _uniform_symmetric(rng, (_N_LATENT, n_in))
    noise = _uniform_symmetric(rng, (n_samples, n_in))
    base_pose = _uniform_symmetric(rng, (n_out,))
    pose_basis = _uniform_symmetric(rng, (_N_LATENT, n_out))
    x = np.empty((n_samples, n_in))
    y = np.empty((n_samples, n_out))
    _synthetic(z, patterns, noise, base_pose, pose_basis, _NOISE_SCALE, x, y)
    return (x.reshape(n_samples, spec.antennas, spec.subcarriers, spec.frames),
            y.reshape(n_samples, spec.keypoints, spec.coords))


# ---------------------------------------------------------------------------------------------- hashing


def hash_arrays(kind: str, arrays: dict[str, np.ndarray]) -> str:
    """sha256 hex digest of ``arrays`` in the canonical byte layout (see the module docstring).

    Parameters
    ----------
    kind : str
        ``"weights"`` or ``"data"``; part of the hashed header.
    arrays : dict
        Name → array, hashed in the dict's order; values are converted to little-endian float64.
    """
    h = hashlib.sha256(f"rfbench.proof.{kind}/1\n".encode("ascii"))
    for name, arr in arrays.items():
        a = np.ascontiguousarray(arr, dtype="<f8")
        h.update(name.encode("ascii") + b"\n")
        h.update(struct.pack(f"<{1 + a.ndim}q", a.ndim, *a.shape))
        h.update(a.tobytes(order="C"))
    return h.hexdigest()


def weights_sha256(params: dict[str, np.ndarray], spec: _model.ModelSpec = PROOF_SPEC) -> str:
    """Hash of model parameters in the canonical order of :func:`rfbench.nn.model.param_shapes`."""
    return hash_arrays("weights", {name: params[name] for name in _model.param_shapes(spec)})


def data_sha256(x: np.ndarray, y: np.ndarray) -> str:
    """Hash of the synthetic training set (``x`` then ``y``)."""
    return hash_arrays("data", {"x": x, "y": y})


# --------------------------------------------------------------------------------------------- training


@njit
def _sgd_step(w, g, lr):
    """``w <- w - lr * g``, element by element."""
    for i in range(w.shape[0]):
        w[i] = w[i] - lr * g[i]


def train(params: dict, x: np.ndarray, y: np.ndarray, spec: _model.ModelSpec, steps: int, lr: float,
          advance: Callable[[], None] | None = None) -> tuple[dict, list[float]]:
    """Full-batch gradient descent with a fixed learning rate.

    Returns
    -------
    (dict, list of float)
        The trained parameters (new arrays) and the loss before each step followed by the final loss
        (``steps + 1`` values; the last is recomputed at the returned weights).
    """
    params = {k: np.array(v, dtype=np.float64, copy=True) for k, v in params.items()}
    losses = []
    for _ in range(steps):
        loss, grads = _model.loss_and_grads(params, x, y, spec)
        losses.append(loss)
        for name, g in grads.items():
            _sgd_step(params[name].reshape(-1), g.reshape(-1), float(lr))
        if advance is not None:
            advance()
    losses.append(_model.loss_and_grads(params, x, y, spec)[0])
    return params, losses


@dataclass(frozen=True)
class ProofRun:
    """One training run: settings, losses, hashes and the trained weights."""

    settings: dict
    losses: list
    weights_sha256: str
    data_sha256: str
    params: dict = field(repr=False)
    wall_time_s: float = 0.0

    @property
    def loss_initial(self) -> float:
        return self.losses[0]

    @property
    def loss_final(self) -> float:
        return self.losses[-1]

    @property
    def loss_decrease(self) -> float:
        return self.losses[0] - self.losses[-1]


def run_proof(seed: int = DEFAULTS["seed"], steps: int = DEFAULTS["steps"], lr: float = DEFAULTS["lr"],
              samples: int = DEFAULTS["samples"], spec: _model.ModelSpec = PROOF_SPEC,
              advance: Callable[[], None] | None = None) -> ProofRun:
    """Generate the seeded data, initialise the model from the seed, train, hash.

    Parameters
    ----------
    seed : int
        Seeds both the data and the initial weights (non-negative).
    steps : int
        Gradient steps (0 gives no decrease, hence a FAIL verdict).
    lr : float
        Learning rate (>= 0 and finite).
    samples : int
        Training-set size.
    spec : ModelSpec
        Model sizes; the baseline is for :data:`PROOF_SPEC`.
    advance : callable, optional
        Called after every step (progress bars).
    """
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
        raise ValidationError(f"steps must be a non-negative integer, got {steps!r}")
    lr = float(lr)
    if not math.isfinite(lr) or lr < 0:
        raise ValidationError(f"lr must be a finite number >= 0, got {lr!r}")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValidationError(f"seed must be a non-negative integer, got {seed!r}")
    start = time.perf_counter()
    x, y = synthetic_pose_data(samples, spec, seed)
    params = _model.init_params(spec, seed)
    trained, losses = train(params, x, y, spec, steps, lr, advance)
    return ProofRun(
        settings={"seed": seed, "steps": steps, "lr": lr, "samples": samples},
        losses=[float(v) for v in losses],
        weights_sha256=weights_sha256(trained, spec),
        data_sha256=data_sha256(x, y),
        params=trained,
        wall_time_s=time.perf_counter() - start,
    )


# --------------------------------------------------------------------------------------------- baseline


@dataclass(frozen=True)
class Baseline:
    """A parsed baseline file. ``problem`` is set (and the digests may be None) when it is unreadable."""

    path: Path
    weights: str | None
    data: str | None
    comments: tuple = ()
    problem: str | None = None


#: A baseline file is a few lines of digests and comments.
MAX_BASELINE_BYTES = 1 << 20


def read_baseline(path: str | Path) -> Baseline | None:
    """Parse a baseline file; ``None`` when it does not exist or holds nothing but blanks and comments.

    Format: ``#`` comment lines, then ``<sha256 hex>  weights`` and ``<sha256 hex>  data`` (a line with a bare
    digest is the weights digest). Anything else — a line of another form, or a digest missing — makes the
    baseline unreadable, which the verdict treats as a mismatch, never as a pass.
    """
    path = Path(path)
    if path.is_dir():
        raise ValidationError(f"{path} is a folder; `hash_file` needs a file path")
    from rfbench.io.files import NotRegularFile, read_regular

    try:  # a regular file of at most 1 MiB (a FIFO or /dev/zero is refused unread, never waited on or filled)
        text = read_regular(path, MAX_BASELINE_BYTES, "a proof baseline", ValidationError,
                            follow=True).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None
    except NotRegularFile:
        raise ValidationError(f"{path}: not a regular file; `hash_file` needs a file path") from None
    comments, entries = [], {}
    problem = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            comments.append(line.lstrip("#").strip())
            continue
        parts = line.split()
        label = parts[1] if len(parts) > 1 else ("weights" if "weights" not in entries else None)
        if len(parts) > 2 or not _HEX64.match(parts[0]) or label not in ("weights", "data") or label in entries:
            problem = problem or f"line {number} is not '<sha256 hex>  weights|data': {line[:80]!r}"
            continue
        entries[label] = parts[0].lower()
    if not entries and problem is None:
        return None
    if "weights" not in entries and problem is None:
        problem = "it holds no weights digest"
    if "data" not in entries and problem is None:  # a PASS needs both: a data generator change would go unseen
        problem = "it holds no data digest (a PASS compares both the weights and the data)"
    return Baseline(path, entries.get("weights"), entries.get("data"), tuple(comments), problem)


def format_baseline(run: ProofRun) -> str:
    """The text ``--generate-hash`` writes for ``run``."""
    s = run.settings
    return (
        "# rfbench proof baseline, written by `rfbench proof --generate-hash`.\n"
        "# sha256 of the trained weights and of the synthetic data, canonical layouts in rfbench/train/proof.py.\n"
        f"# settings: seed={s['seed']} steps={s['steps']} lr={s['lr']!r} samples={s['samples']}\n"
        f"# versions: {_versions()}\n"
        f"{run.weights_sha256}  weights\n"
        f"{run.data_sha256}  data\n"
    )


def _versions() -> str:
    import llvmlite
    import numba

    return f"numpy={np.__version__} numba={numba.__version__} llvmlite={llvmlite.__version__}"


def _mismatch_notes(baseline: Baseline, run: ProofRun) -> str:
    """Say which recorded settings or library versions differ from this run's, if any."""
    s = run.settings
    mine = {"settings": f"seed={s['seed']} steps={s['steps']} lr={s['lr']!r} samples={s['samples']}",
            "versions": _versions()}
    notes = []
    for c in baseline.comments:
        key, _, recorded = c.partition(":")
        if key in mine and recorded.strip() != mine[key]:
            notes.append(f"the baseline was made with {recorded.strip()}; this run used {mine[key]}")
    return f" ({'; '.join(notes)})" if notes else ""


@dataclass(frozen=True)
class Verdict:
    """The outcome: ``verdict`` PASS/FAIL/SKIP, its ``exit_code`` 0/1/3, and the reasons and checks."""

    verdict: str
    exit_code: int
    reasons: list
    checks: list


def judge(run: ProofRun, baseline: Baseline | None) -> Verdict:
    """Decide PASS / FAIL / SKIP for ``run`` against ``baseline`` (None = no committed baseline).

    FAIL when the loss fell by less than :data:`MIN_LOSS_DECREASE` (whatever the baseline), when a baseline
    exists and a digest differs, or when the baseline is unreadable; otherwise SKIP without a baseline and
    PASS with a matching one.
    """
    checks, fails = [], []
    dec = run.loss_decrease
    ok = bool(dec >= MIN_LOSS_DECREASE)  # NaN compares False
    detail = f"loss {run.loss_initial:.6g} -> {run.loss_final:.6g}, decrease {dec:.6g} (margin {MIN_LOSS_DECREASE!r})"
    checks.append({"name": "loss_decrease", "passed": ok, "detail": detail})
    if not ok:
        fails.append(f"the loss fell by {dec:.6g}, less than MIN_LOSS_DECREASE = {MIN_LOSS_DECREASE!r}")
    if baseline is None:
        checks.append({"name": "weights_hash", "passed": None, "detail": "no baseline to compare with"})
        if fails:
            return Verdict("FAIL", 1, fails, checks)
        return Verdict("SKIP", 3, ["no committed baseline: nothing was compared, so this is not a pass "
                                   "(write one with --generate-hash and commit it)"], checks)
    if baseline.problem:
        checks.append({"name": "baseline_readable", "passed": False, "detail": baseline.problem})
        fails.append(f"baseline {baseline.path} is unreadable: {baseline.problem}")
    if baseline.weights is not None:
        same = baseline.weights == run.weights_sha256
        checks.append({"name": "weights_hash", "passed": same,
                       "detail": f"expected {baseline.weights}, got {run.weights_sha256}"})
        if not same:
            fails.append(f"weights sha256 {run.weights_sha256} differs from the baseline {baseline.weights}"
                         + _mismatch_notes(baseline, run))
    if baseline.data is not None:
        same = baseline.data == run.data_sha256
        checks.append({"name": "data_hash", "passed": same,
                       "detail": f"expected {baseline.data}, got {run.data_sha256}"})
        if not same:
            fails.append(f"synthetic data sha256 {run.data_sha256} differs from the baseline {baseline.data}: "
                         "the data generator changed")
    if fails:
        return Verdict("FAIL", 1, fails, checks)
    return Verdict("PASS", 0, [], checks)


@dataclass(frozen=True)
class Proof:
    """What ``rfbench proof`` decided: the ``verdict`` (PASS, FAIL, SKIP, or GENERATED when a baseline was
    written), its ``exit_code`` (0, 1, 3; 0 for GENERATED), the reasons and checks, the run and the baseline
    file."""

    verdict: str
    exit_code: int
    reasons: list
    checks: list
    run: ProofRun
    hash_file: Path

    def to_dict(self) -> dict:
        """The proof as ``rfbench proof --json`` prints it: verdict, checks, losses, digests, settings, what it
        proves and does not, and the versions determinism depends on."""
        import llvmlite
        import numba

        run = self.run
        return {
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "reasons": list(self.reasons),
            "checks": list(self.checks),
            "loss_initial": run.loss_initial,
            "loss_final": run.loss_final,
            "loss_decrease": run.loss_decrease,
            "min_loss_decrease": MIN_LOSS_DECREASE,
            "losses": run.losses,
            "weights_sha256": run.weights_sha256,
            "data_sha256": run.data_sha256,
            "hash_file": str(self.hash_file),
            "settings": run.settings,
            "parameters": _model.param_count(PROOF_SPEC),
            "wall_time_s": run.wall_time_s,
            "proves": PROVES,
            "does_not_prove": DOES_NOT_PROVE,
            "determinism_depends_on": list(DETERMINISM_DEPENDS_ON),
            "versions": {"numpy": np.__version__, "numba": numba.__version__, "llvmlite": llvmlite.__version__},
        }


def prove(hash_file: str | os.PathLike | None = None, *, generate: bool = False, force: bool = False,
          seed: int = DEFAULTS["seed"], steps: int = DEFAULTS["steps"], lr: float = DEFAULTS["lr"],
          samples: int = DEFAULTS["samples"], advance: Callable[[int], None] | None = None) -> Proof:
    """Run the training proof and judge it against the baseline in ``hash_file`` — or, with ``generate``,
    write that baseline from this run.

    A run whose loss does not fall by :data:`MIN_LOSS_DECREASE` is FAIL and, with ``generate``, writes nothing:
    it must not become the reference. An existing baseline is replaced only with ``force``.

    Parameters
    ----------
    hash_file : path-like, optional
        The baseline (default :data:`DEFAULT_HASH_FILE`, the committed one).
    generate, force : bool
        Write the baseline instead of checking it; replace an existing one.
    seed, steps, lr, samples
        The run's settings, as for :func:`run_proof`; the committed baseline was made with :data:`DEFAULTS`.
    advance : callable, optional
        Called (without arguments) after each gradient step.

    Returns
    -------
    Proof
        The verdict (PASS, FAIL, SKIP or GENERATED), its exit code, reasons, checks and the run.

    Examples
    --------
    >>> import os, tempfile
    >>> from rfbench.train.proof import prove
    >>> path = os.path.join(tempfile.mkdtemp(), "proof.sha256")
    >>> prove(path, steps=3, samples=8).verdict
    'SKIP'
    >>> prove(path, generate=True, steps=3, samples=8).verdict
    'GENERATED'
    >>> prove(path, steps=3, samples=8).verdict
    'PASS'
    """
    from rfbench.errors import OutputExistsError
    from rfbench.io.files import write_text

    path = Path(hash_file) if hash_file is not None else DEFAULT_HASH_FILE
    baseline = read_baseline(path)
    if generate and not force and (baseline is not None or os.path.lexists(path)):
        # (any file: one of comments only, or empty, is still a file rfbench did not write)
        raise OutputExistsError(f"{path} already exists; pass `force` to replace it with a baseline")
    run = run_proof(seed=seed, steps=steps, lr=lr, samples=samples, advance=advance)
    if not generate:
        v = judge(run, baseline)
        return Proof(v.verdict, v.exit_code, v.reasons, v.checks, run, path)
    v = judge(run, None)
    if v.verdict == "FAIL":
        return Proof("FAIL", 1, v.reasons + ["no baseline written: a run that does not lower the loss must not "
                                             "become the reference"], v.checks, run, path)
    write_text(path, format_baseline(run), force=True)
    return Proof("GENERATED", 0, [f"baseline written to {path}; commit it, then `rfbench proof` checks every run "
                                  "against it"], v.checks, run, path)
