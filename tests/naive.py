"""Slow, obviously-correct reference implementations ("naive twins") of rfbench's kernels.

Each section belongs to one area of the library; tests compare the fast code with these on hand-made,
seeded random and awkward inputs.
"""

from __future__ import annotations

import math

import numpy as np

# ---------------------------------------------------------------------------------------------------------
# metrics: pose (PCK, PCK-AUC, OKS, MPJPE, PA-MPJPE), mmpose's documented conventions, bootstrap sums
# ---------------------------------------------------------------------------------------------------------


def naive_normalizer(g, v, norm, rel_floor=1e-6):
    """Normalizer of one sample (g: (K, D), v: (K,) bool) or None when degenerate.

    norm is ("pair", a, b), ("bbox",), ("max",) or ("abs", T).
    """
    pts = [g[j] for j in range(len(v)) if v[j]]
    if not pts:
        return None
    lo = [min(p[c] for p in pts) for c in range(g.shape[1])]
    hi = [max(p[c] for p in pts) for c in range(g.shape[1])]
    sides = [hi[c] - lo[c] for c in range(g.shape[1])]
    diag = math.sqrt(sum(s * s for s in sides))
    if norm[0] == "pair":
        a, b = norm[1], norm[2]
        if not (v[a] and v[b]) or diag == 0:
            return None
        d = math.sqrt(sum((g[a][c] - g[b][c]) ** 2 for c in range(g.shape[1])))
        return d if d >= rel_floor * diag else None
    if norm[0] == "bbox":
        return diag if diag > 0 else None
    if norm[0] == "max":
        return max(sides) if max(sides) > 0 else None
    return norm[1]


def naive_distance(p, g):
    """Euclidean distance; inf when the prediction is not finite."""
    d2 = sum((p[c] - g[c]) ** 2 for c in range(len(g)))
    return math.sqrt(d2) if math.isfinite(d2) else math.inf


def naive_pose_totals(pred, gt, vis, norms, ks, strict, auc_thr=(), sigmas=None, area=None):
    """Totals over all rows of what the pose kernel accumulates, by plain loops.

    pred may have a single row (scored against every ground-truth row). Returns a dict with
    novis, rows, norm_bad (M,), pck_n (M, K), pck_hit (M, T, K), auc_pass (M, K), err_sum (K,), err_n (K,),
    oks (list of per-row OKS or None), oks_bad.
    """
    n, k, dims = gt.shape
    m, t = len(norms), len(ks)
    out = {
        "rows": n, "novis": 0, "norm_bad": np.zeros(m, int), "pck_n": np.zeros((m, k), int),
        "pck_hit": np.zeros((m, t, k), int), "auc_pass": np.zeros((m, k), int), "err_sum": np.zeros(k),
        "err_n": np.zeros(k, int), "oks": [], "oks_bad": 0,
    }

    def passes(r, thr):
        return r < thr if strict else r <= thr

    for i in range(n):
        p = pred[0] if pred.shape[0] == 1 else pred[i]
        g, v = gt[i], vis[i] != 0
        if not v.any():
            out["novis"] += 1
            out["oks"].append(None)
            continue
        dist = [naive_distance(p[j], g[j]) if v[j] else None for j in range(k)]
        for j in range(k):
            if v[j]:
                out["err_sum"][j] += dist[j]
                out["err_n"][j] += 1
        for mi, norm in enumerate(norms):
            z = naive_normalizer(g, v, norm)
            if z is None:
                out["norm_bad"][mi] += 1
                continue
            for j in range(k):
                if v[j]:
                    r = dist[j] / z
                    out["pck_n"][mi, j] += 1
                    for ti, kv in enumerate(ks):
                        out["pck_hit"][mi, ti, j] += passes(r, kv)
                    out["auc_pass"][mi, j] += sum(passes(r, thr) for thr in auc_thr)
        if sigmas is not None:
            o = naive_oks_sample(p, g, v, sigmas, area)
            if o is None:
                out["oks_bad"] += 1
            out["oks"].append(o)
    return out


def naive_oks_sample(p, g, v, sigmas, area=None):
    """COCO OKS of one 2D sample: mean over visible joints of exp(-d² / (2 s² (2σ)²)), s² = area
    (default 0.53 × box width × height of the visible joints); None when no joint is visible or area is 0."""
    idx = [j for j in range(len(v)) if v[j]]
    if not idx:
        return None
    if area is None:
        xs = [g[j][0] for j in idx]
        ys = [g[j][1] for j in idx]
        area = 0.53 * (max(xs) - min(xs)) * (max(ys) - min(ys))
    if not area > 0:
        return None
    terms = []
    for j in idx:
        d2 = (p[j][0] - g[j][0]) ** 2 + (p[j][1] - g[j][1]) ** 2
        if not math.isfinite(d2):
            d2 = math.inf
        terms.append(math.exp(-d2 / (2.0 * area * (2.0 * sigmas[j]) ** 2)))
    return sum(terms) / len(terms)


def naive_pa_errors(pred, gt, vis):
    """Per-frame PA-MPJPE inputs by a direct per-frame SVD (Umeyama, reflection corrected).

    Returns a list per frame: None when unscoreable (fewer than 3 visible joints or single-point ground
    truth), else the list of aligned errors of its visible joints (inf when the prediction is not finite).
    """
    out = []
    for i in range(gt.shape[0]):
        v = vis[i] != 0
        x = pred[i][v]
        y = gt[i][v]
        if v.sum() < 3 or np.sum((y - y.mean(axis=0)) ** 2) == 0:
            out.append(None)
            continue
        if not np.isfinite(x).all():
            out.append([math.inf] * int(v.sum()))
            continue
        mx, my = x.mean(axis=0), y.mean(axis=0)
        xc, yc = x - mx, y - my
        cov = xc.T @ yc  # D x D: sum_j x_j y_j^T
        u, s, vt = np.linalg.svd(cov)
        d = np.ones(len(s))
        if np.linalg.det(vt.T @ u.T) < 0:
            d[-1] = -1.0
        rot = vt.T @ np.diag(d) @ u.T
        var_x = np.sum(xc ** 2)
        scale = float(np.sum(s * d) / var_x) if var_x > 0 else 0.0
        aligned = scale * (x - mx) @ rot.T + my
        out.append([float(np.linalg.norm(aligned[j] - y[j])) for j in range(len(y))])
    return out


# mmpose 1.3.2 conventions (mmpose/evaluation/functional/keypoint_eval.py), re-derived from its documented
# behaviour: distances normalised per axis and stored as float32, -1 for a masked joint; a sample whose
# normalizer has a zero entry is masked entirely; a joint's accuracy is the share of its valid distances
# strictly below the threshold (-1 when it has none); the average is over joints with an accuracy (0 when
# none); AUC is the plain mean of that average over thresholds i / n, i = 0..n-1, of an absolute norm.


def mmpose_distances(pred, gt, mask, norm_factor):
    """(K, N) float32 normalised distances, -1 where masked."""
    n, k, _ = pred.shape
    norm = np.array(norm_factor, dtype=np.float64, copy=True)
    out = np.full((k, n), -1.0, dtype=np.float32)
    for i in range(n):
        if np.any(norm[i] == 0):
            continue
        f = np.where(norm[i] <= 0, 1e6, norm[i])
        for j in range(k):
            if mask[i, j]:
                out[j, i] = np.float32(math.sqrt(sum(((pred[i, j, c] - gt[i, j, c]) / f[c]) ** 2
                                                     for c in range(pred.shape[2]))))
    return out


def mmpose_keypoint_pck_accuracy(pred, gt, mask, thr, norm_factor):
    """(acc per joint with -1 for none, average over joints with an accuracy or 0, count of such joints)."""
    dist = mmpose_distances(pred, gt, mask, norm_factor)
    acc = []
    for row in dist:
        valid = [d for d in row if d != -1]
        acc.append(sum(1 for d in valid if d < thr) / len(valid) if valid else -1)
    good = [a for a in acc if a >= 0]
    return np.array(acc), (sum(good) / len(good) if good else 0.0), len(good)


def mmpose_keypoint_auc(pred, gt, mask, norm_factor, num_thrs=20):
    """Mean over thresholds i / num_thrs of the PCK average, distances divided by the scalar norm_factor."""
    nor = np.tile([[norm_factor, norm_factor]], (pred.shape[0], 1))
    accs = [mmpose_keypoint_pck_accuracy(pred, gt, mask, i / num_thrs, nor)[1] for i in range(num_thrs)]
    return sum(a / num_thrs for a in accs)


def mmpose_keypoint_epe(pred, gt, mask):
    """Mean unnormalised distance over masked-in joints (0 when none)."""
    dist = mmpose_distances(pred, gt, mask, np.ones((pred.shape[0], pred.shape[2])))
    valid = [float(d) for row in dist for d in row if d != -1]
    return sum(valid) / max(1, len(valid))


def naive_replicate_sums(counts, table):
    """out[b, c] = sum over g of counts[b, g] * table[g, c]."""
    out = np.zeros((counts.shape[0], table.shape[1]))
    for b in range(counts.shape[0]):
        for g in range(counts.shape[1]):
            for c in range(table.shape[1]):
                if counts[b, g]:
                    out[b, c] += counts[b, g] * table[g, c]
    return out


def naive_segment_sums(values, segment, n_segments):
    out = np.zeros((n_segments, values.shape[1]))
    for i in range(values.shape[0]):
        out[segment[i]] += values[i]
    return out
