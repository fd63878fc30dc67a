"""Seeded CSI corruptions (the table of :mod:`rfbench.csi.corruption_table`), one Numba kernel per kind of damage.

CSI here is complex128 of axes ``(packet, subcarrier, rx, tx)``: an Intel 5300 receiver log as parsed, or an
MM-Fi WiFi frame ``CSIamp·e^{j·CSIphase}`` moved to ``(10 packets, 114 subcarriers, 3 antennas, 1)``.

Every random draw is made by :func:`draw` from a NumPy Generator seeded by ``(seed, corruption, unit)`` (the unit:
the recording id and, within it, the receiver or frame), in NumPy before any kernel runs; the kernels are serial
loops of plain arithmetic on those draws in a fixed order. So the corrupted CSI depends on the seed and the unit
alone: not on threads, chunking, the order units are read in, or the machine (for one pinned NumPy).

Kernels (each validates nothing; :func:`corrupt` checks, draws and calls):

- ``_noise``: ``out = x + sqrt(P/snr/2)·(n₀ + j·n₁)``, P the mean |x|² (four partial sums in a fixed order);
- ``_refill``: lost packets (packet-loss, burst-loss, truncation) refilled by linear interpolation over the
  packet index between the nearest kept packets, held at the ends; zero when every packet is lost;
- ``_gain_rx``, ``_gain_subcarrier``, ``_gain_packet``: a real gain per receive antenna (dead-antenna), per
  subcarrier (subcarrier-dropout) or per packet (agc-jump);
- ``_phase_slope``: ``out = x·e^{−2πj·f[s]·τ[p]}``, f the subcarrier index × 312.5 kHz.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np

from rfbench._jit import njit
from rfbench.csi.corruption_table import AGC_STEP_PROBABILITY, corruption
from rfbench.errors import ValidationError

__all__ = ["generator", "draw", "corrupt", "Draws", "SUBCARRIER_SPACING_HZ", "amp_phase_to_csi",
           "csi_to_amp_phase"]

#: OFDM subcarrier spacing of 802.11n (20 and 40 MHz): the frequency of subcarrier index k is k × this.
SUBCARRIER_SPACING_HZ = 312_500.0


# -- kernels -------------------------------------------------------------------------------------------------


@njit
def _noise(x, noise, snr, out):
    """``out[i] = x[i] + s·(noise[i, 0] + j·noise[i, 1])`` with ``s = sqrt(mean|x|² / snr / 2)`` (x, out: flat
    complex128; noise: (n, 2) standard normal float64). The power is summed in four interleaved partial sums
    (element i into sum i mod 4), added as ``(s0 + s1) + (s2 + s3)``: a fixed order, which lets the loop run on
    four lanes."""
    n = x.shape[0]
    s0 = s1 = s2 = s3 = 0.0
    m = n - n % 4
    for i in range(0, m, 4):
        s0 += x[i].real * x[i].real + x[i].imag * x[i].imag
        s1 += x[i + 1].real * x[i + 1].real + x[i + 1].imag * x[i + 1].imag
        s2 += x[i + 2].real * x[i + 2].real + x[i + 2].imag * x[i + 2].imag
        s3 += x[i + 3].real * x[i + 3].real + x[i + 3].imag * x[i + 3].imag
    for i in range(m, n):
        s0 += x[i].real * x[i].real + x[i].imag * x[i].imag
    total = (s0 + s1) + (s2 + s3)
    scale = math.sqrt(total / n / snr / 2.0) if n > 0 else 0.0
    for i in range(n):
        out[i] = x[i] + complex(scale * noise[i, 0], scale * noise[i, 1])


@njit
def _refill(x, lost, out):
    """Packets ``p`` with ``lost[p]`` replaced by linear interpolation (over the packet index) between the nearest
    kept packets before and after, held at the ends; all zero when every packet is lost."""
    n = x.shape[0]
    prev = -1
    p = 0
    while p < n:
        if not lost[p]:
            out[p] = x[p]
            prev = p
            p += 1
            continue
        nxt = p
        while nxt < n and lost[nxt]:
            nxt += 1
        for q in range(p, nxt):
            if prev < 0 and nxt >= n:
                out[q] = 0.0
            elif prev < 0:
                out[q] = x[nxt]
            elif nxt >= n:
                out[q] = x[prev]
            else:
                w = (q - prev) / (nxt - prev)
                for s in range(x.shape[1]):
                    for r in range(x.shape[2]):
                        for t in range(x.shape[3]):
                            out[q, s, r, t] = x[prev, s, r, t] * (1.0 - w) + x[nxt, s, r, t] * w
        p = nxt


@njit
def _gain_rx(x, gain, out):
    """``out[p, s, r, t] = x[p, s, r, t] · gain[r]``."""
    for p in range(x.shape[0]):
        for s in range(x.shape[1]):
            for r in range(x.shape[2]):
                g = gain[r]
                for t in range(x.shape[3]):
                    out[p, s, r, t] = x[p, s, r, t] * g


@njit
def _gain_subcarrier(x, gain, out):
    """``out[p, s, r, t] = x[p, s, r, t] · gain[s]``."""
    for p in range(x.shape[0]):
        for s in range(x.shape[1]):
            g = gain[s]
            for r in range(x.shape[2]):
                for t in range(x.shape[3]):
                    out[p, s, r, t] = x[p, s, r, t] * g


@njit
def _gain_packet(x, gain, out):
    """``out[p, s, r, t] = x[p, s, r, t] · gain[p]``."""
    for p in range(x.shape[0]):
        g = gain[p]
        for s in range(x.shape[1]):
            for r in range(x.shape[2]):
                for t in range(x.shape[3]):
                    out[p, s, r, t] = x[p, s, r, t] * g


@njit
def _phase_slope(x, index, tau, spacing, table, out):
    """``out[p, s, r, t] = x[p, s, r, t] · e^{−2πj·index[s]·spacing·tau[p]}`` for integer subcarrier indices.

    Per packet the rotations of every index from ``k0 = min(index)`` up are ``table[k − k0] = e^{jθ·k}``
    (θ = −2π·spacing·tau[p]): the first from its cosine and sine, each next one the previous times
    ``e^{jθ}`` (two trigonometric pairs per packet instead of one per subcarrier; the recurrence drifts by
    about one ulp per step, 1e-14 over 117 indices). ``table``: scratch of ``max − min + 1`` complex values."""
    k0 = index.min() if index.shape[0] > 0 else 0
    for p in range(x.shape[0]):
        theta = -2.0 * math.pi * spacing * tau[p]
        step = complex(math.cos(theta), math.sin(theta))
        rot = complex(math.cos(theta * k0), math.sin(theta * k0))
        for k in range(table.shape[0]):
            table[k] = rot
            rot = rot * step
        for s in range(x.shape[1]):
            g = table[index[s] - k0]
            for r in range(x.shape[2]):
                for t in range(x.shape[3]):
                    out[p, s, r, t] = x[p, s, r, t] * g


# -- draws ---------------------------------------------------------------------------------------------------


def generator(seed: int, corruption_id: str, recording: str, part: str = "") -> np.random.Generator:
    """The Generator of one unit's draws: PCG64 seeded by ``seed`` and the sha256 of ``corruption_id``,
    ``recording`` (the recording id) and ``part`` (a receiver or frame within it, or empty)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValidationError(f"corruption seed must be a non-negative integer, not {seed!r}")
    digest = hashlib.sha256("\0".join((corruption_id, recording, part)).encode("utf-8")).digest()
    words = [int.from_bytes(digest[k:k + 4], "little") for k in range(0, 32, 4)]
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, *words])))


@dataclass(frozen=True)
class Draws:
    """What one unit's corruption drew: ``kind`` (the kernel) and its arrays."""

    kind: str
    noise: np.ndarray | None = None
    snr: float = 0.0
    lost: np.ndarray | None = None
    gain: np.ndarray | None = None
    tau: np.ndarray | None = None


def _count(fraction: float, n: int) -> int:
    return int(math.floor(fraction * n + 0.5))


def draw(corruption_id: str, severity: int, shape: tuple, rng: np.random.Generator) -> Draws:
    """The random draws of one unit of CSI of ``shape`` (packet, subcarrier, rx, tx), in this order."""
    level = corruption(corruption_id).level(severity)
    packets, subcarriers, rx = shape[0], shape[1], shape[2]
    if corruption_id == "noise":
        return Draws("noise", noise=rng.standard_normal((*shape, 2)), snr=10.0 ** (level / 10.0))
    if corruption_id == "packet-loss":
        return Draws("refill", lost=rng.random(packets) < level)
    if corruption_id == "burst-loss":
        length = _count(level, packets)
        start = int(rng.integers(0, packets - length + 1))
        lost = np.zeros(packets, dtype=np.bool_)
        lost[start:start + length] = True
        return Draws("refill", lost=lost)
    if corruption_id == "truncation":
        lost = np.zeros(packets, dtype=np.bool_)
        lost[packets - _count(level, packets):] = True
        return Draws("refill", lost=lost)
    if corruption_id == "dead-antenna":
        gain = np.ones(rx, dtype=np.float64)
        gain[int(rng.integers(0, rx))] = 0.0 if math.isinf(level) else 10.0 ** (-level / 20.0)
        return Draws("rx", gain=gain)
    if corruption_id == "subcarrier-dropout":
        gain = np.ones(subcarriers, dtype=np.float64)
        gain[rng.permutation(subcarriers)[:_count(level, subcarriers)]] = 0.0
        return Draws("subcarrier", gain=gain)
    if corruption_id == "agc-jump":
        steps = rng.random(packets) < AGC_STEP_PROBABILITY
        signs = np.where(rng.random(packets) < 0.5, -1.0, 1.0)
        steps[:1] = False
        db = np.cumsum(np.where(steps, signs * level, 0.0))
        return Draws("packet", gain=10.0 ** (db / 20.0))
    if corruption_id == "phase-slope":
        return Draws("phase", tau=rng.uniform(-level * 1e-9, level * 1e-9, packets))
    raise AssertionError(corruption_id)  # the table and this function list the same ids


# -- public --------------------------------------------------------------------------------------------------


def corrupt(csi: np.ndarray, corruption_id: str, severity: int, rng: np.random.Generator,
            subcarrier_index: np.ndarray | None = None) -> np.ndarray:
    """``csi`` corrupted: a new complex128 array of the same shape.

    Parameters
    ----------
    csi : ndarray, complex, shape (packet, subcarrier, rx, tx)
    corruption_id : str
        One of :data:`~rfbench.csi.corruption_table.CORRUPTIONS`.
    severity : int
        1…5.
    rng : numpy.random.Generator
        The unit's generator (:func:`generator`); its draws are taken here, before the kernel runs.
    subcarrier_index : ndarray of int, optional
        phase-slope: the subcarrier indices (their frequency is index × 312.5 kHz); default ``s − S // 2``.
    """
    corruption(corruption_id)
    if isinstance(severity, bool) or severity not in (1, 2, 3, 4, 5):
        raise ValidationError(f"corruption severity must be 1 to 5, not {severity!r}")
    x = np.ascontiguousarray(csi, dtype=np.complex128)
    if x.ndim != 4:
        raise ValidationError(f"CSI to corrupt must have axes (packet, subcarrier, rx, tx), got shape {x.shape}")
    out = np.empty_like(x)
    if x.size == 0:
        return out
    d = draw(corruption_id, severity, x.shape, rng)
    if d.kind == "noise":
        _noise(x.reshape(-1), d.noise.reshape(-1, 2), d.snr, out.reshape(-1))
    elif d.kind == "refill":
        _refill(x, d.lost, out)
    elif d.kind == "rx":
        _gain_rx(x, d.gain, out)
    elif d.kind == "subcarrier":
        _gain_subcarrier(x, d.gain, out)
    elif d.kind == "packet":
        _gain_packet(x, d.gain, out)
    else:
        if subcarrier_index is None:
            subcarrier_index = np.arange(x.shape[1], dtype=np.int64) - x.shape[1] // 2
        index = np.asarray(subcarrier_index)
        if index.shape != (x.shape[1],) or index.dtype.kind not in "iu":
            raise ValidationError(f"subcarrier_index must hold {x.shape[1]} integers, not {index.dtype} "
                                  f"{index.shape}")
        index = index.astype(np.int64)
        table = np.empty(int(index.max() - index.min()) + 1, dtype=np.complex128)
        _phase_slope(x, index, d.tau, SUBCARRIER_SPACING_HZ, table, out)
    return out


def amp_phase_to_csi(amp: np.ndarray, phase: np.ndarray) -> np.ndarray:
    """MM-Fi's ``CSIamp``, ``CSIphase`` (antenna, subcarrier, packet) as complex CSI (packet, subcarrier, antenna,
    1): ``amp·e^{j·phase}`` in float64."""
    a = np.asarray(amp, dtype=np.float64)
    ph = np.asarray(phase, dtype=np.float64)
    csi = a * np.exp(1j * ph)
    return np.ascontiguousarray(csi.transpose(2, 1, 0))[..., None]


def csi_to_amp_phase(csi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The inverse layout of :func:`amp_phase_to_csi`: ``(|csi|, angle(csi))`` as (antenna, subcarrier, packet)
    float64 (phase in (−π, π])."""
    c = csi[..., 0].transpose(2, 1, 0)
    return np.abs(c), np.angle(c)

