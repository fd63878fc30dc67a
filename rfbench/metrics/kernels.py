"""Numba kernels for pose metrics and the bootstrap. Private: they validate nothing and do no I/O.

The public wrappers (:mod:`rfbench.metrics.pose`, :mod:`rfbench.metrics.stats`) validate, allocate and
wrap. Each kernel has a slow, obvious twin in ``tests/naive.py``.

Rows are processed by *segment*: a segment is a list of rows (``order[seg_start[s]:seg_start[s+1]]``, or
the rows ``seg_start[s]:seg_start[s+1]`` themselves when ``order`` is empty) — a recording when the rows
are clustered, a fixed block of rows otherwise. Each ``prange`` iteration owns one segment and writes only
that segment's row of every output, accumulating its rows in their given order, so results do not depend
on the number of threads.
"""

from __future__ import annotations

import math

import numpy as np

from rfbench._jit import njit, njit_parallel, prange

# Normalization kinds (DESIGN.md §5).
NORM_PAIR = 0  # |x[a] - x[b]|: hip-width, torso
NORM_BBOX = 1  # diagonal of the box around the visible ground-truth joints
NORM_BBOX_MAX_SIDE = 2  # longest side of that box
NORM_ABS = 3  # a constant T in coordinate units

# Normalizer floors (what happens to a small or zero relative normalizer).
FLOOR_RELATIVE = 0  # a pair below rel_floor x the box diagonal, or a zero box, makes the sample unscoreable
FLOOR_CLAMP = 1  # the normalizer is max(normalizer, floor_value); never unscoreable
FLOOR_NONE = 2  # the normalizer is used as it is, even 0 (every joint of such a sample is then wrong)


@njit
def _row_of(order, seg_start, s, i):
    """Row index of the i-th row of segment s."""
    if order.shape[0] == 0:
        return seg_start[s] + i
    return order[seg_start[s] + i]


@njit
def _count_passed(r, thresholds, strict):
    """How many of the ascending ``thresholds`` t satisfy ``r < t`` (strict) or ``r <= t``; NaN passes none."""
    lo = 0
    hi = thresholds.shape[0]
    while lo < hi:
        mid = (lo + hi) // 2
        ok = r < thresholds[mid] if strict else r <= thresholds[mid]
        if ok:
            hi = mid
        else:
            lo = mid + 1
    return thresholds.shape[0] - lo


@njit_parallel
def _pose_sums(pred, gt, vis, order, seg_start, norm_kind, norm_a, norm_b, norm_value, floor_mode, floor_value,
               rel_floor, per_axis, single, pck_thr, auc_thr, strict, oks_var, area_const, n_rows, n_novis, norm_bad,
               pck_first, auc_pass, err_sum, err_n, oks_sum, oks_n, oks_bad, gt_bad):
    """Per-segment sufficient statistics of PCK, PCK-AUC, MPJPE and OKS in one pass over the joints.

    Contract (DESIGN.md §5):

    - ``pred`` (P, K, D) with P = N, or P = 1 to score one pose (a baseline) against every row; ``gt`` (N, K, D)
      should be finite wherever ``vis`` (N, K, uint8) is non-zero: each visible non-finite ground-truth
      coordinate is counted in ``gt_bad[s]`` (the wrapper then refuses the input; the other outputs of such
      a segment are meaningless).
    - distance d = ||pred - gt|| (Euclidean over D); a non-finite prediction gives d = inf (always wrong).
    - a row with no visible joint counts in ``n_novis`` and in nothing else.
    - normalization m: NORM_PAIR uses joints ``norm_a[m]``/``norm_b[m]`` (both must be visible), NORM_BBOX the
      box diagonal, NORM_BBOX_MAX_SIDE its longest side; under FLOOR_RELATIVE a pair is degenerate unless its
      distance is ``>= rel_floor *`` the box diagonal (and the diagonal > 0) and a box unless > 0; under
      FLOOR_CLAMP the normalizer is ``max(normalizer, floor_value)``; under FLOOR_NONE it is used as it is (a
      zero one gives inf/NaN ratios: wrong, but counted). NORM_ABS divides by the constant ``norm_value[m]``
      (1.0 for an absolute threshold, whose thresholds then carry T itself). A degenerate row counts in
      ``norm_bad[s, m]``; otherwise each visible joint j has the ratio ``r = d / norm`` — or, when
      ``per_axis``, ``r = sqrt(sum_c ((pred_c - gt_c) / norm)^2)`` (each axis divided first, summed in axis
      order, as mmpose's ``_calc_distances``); when ``single`` r is rounded to float32 (the thresholds are
      passed already rounded) — and adds 1 to ``pck_first[s, m, q, j]`` where q is the index of the first of
      the normalization's ascending thresholds ``pck_thr[m, :]`` with ``r <= pck_thr[m, q]`` (``<`` when
      ``strict``), or ``pck_thr.shape[1]`` when it passes none — so the joint is correct at every threshold
      t >= q (hits are a cumulative sum over q, scoreable joints the sum over all q) — and adds the number of
      the ascending ``auc_thr[m, :]`` it passes the same way to ``auc_pass[s, m, j]``.
    - MPJPE: each visible joint adds d to ``err_sum[s, j]`` and 1 to ``err_n[s, j]``.
    - OKS (only when ``oks_var`` is non-empty; ``oks_var[j] = (2 sigma_j)^2``): area = ``area_const`` if
      ``>= 0`` else 0.53 * box width * box height; area <= 0 counts in ``oks_bad``; otherwise the row's OKS,
      the mean over visible joints of exp(-(dx^2 + dy^2) / (var_j * 2 * area)) (pycocotools ``computeOks``
      divides by var, area and 2 in turn; here the divisions are hoisted out of the joint loop as reciprocals,
      which moves the exponent by a few ulp at most), is added to ``oks_sum`` and 1 to ``oks_n``.
    """
    n_seg = seg_start.shape[0] - 1
    k_joints = gt.shape[1]
    dims = gt.shape[2]
    n_norm = norm_kind.shape[0]
    n_k = pck_thr.shape[1]
    one_pred = pred.shape[0] == 1
    do_oks = oks_var.shape[0] > 0
    do_auc = auc_thr.shape[1] > 0
    inv_var = 1.0 / oks_var
    for s in prange(n_seg):
        joint = np.empty(k_joints, dtype=np.int64)
        dist = np.empty(k_joints)
        dist2 = np.empty(k_joints)
        diff = np.zeros((k_joints, 3))
        count = seg_start[s + 1] - seg_start[s]
        n_rows[s] = count
        for ii in range(count):
            i = _row_of(order, seg_start, s, ii)
            p = 0 if one_pred else i
            # One pass over the joints: the box around the visible ground truth, distances (kept, with the
            # joint index, for the visible joints), MPJPE. Coordinates are scalars (D is 2 or 3; a missing
            # third axis counts as 0) so they stay in registers.
            nv = 0
            lo0 = np.inf
            lo1 = np.inf
            lo2 = np.inf
            hi0 = -np.inf
            hi1 = -np.inf
            hi2 = -np.inf
            for j in range(k_joints):
                if vis[i, j] != 0:
                    g0 = gt[i, j, 0]
                    g1 = gt[i, j, 1]
                    e0 = pred[p, j, 0] - g0
                    e1 = pred[p, j, 1] - g1
                    acc = e0 * e0 + e1 * e1
                    g2 = 0.0
                    if dims == 3:
                        g2 = gt[i, j, 2]
                        e2 = pred[p, j, 2] - g2
                        acc += e2 * e2
                    if not (math.isfinite(g0) and math.isfinite(g1) and math.isfinite(g2)):
                        gt_bad[s] += 1
                    lo0 = min(lo0, g0)
                    hi0 = max(hi0, g0)
                    lo1 = min(lo1, g1)
                    hi1 = max(hi1, g1)
                    lo2 = min(lo2, g2)
                    hi2 = max(hi2, g2)
                    if not math.isfinite(acc):
                        acc = np.inf
                    d = math.sqrt(acc)
                    err_sum[s, j] += d
                    err_n[s, j] += 1
                    if per_axis:
                        diff[nv, 0] = e0
                        diff[nv, 1] = e1
                        if dims == 3:
                            diff[nv, 2] = e2
                    joint[nv] = j
                    dist2[nv] = acc
                    dist[nv] = d
                    nv += 1
            if nv == 0:
                n_novis[s] += 1
                continue
            s0 = hi0 - lo0
            s1 = hi1 - lo1
            s2 = hi2 - lo2
            diag2 = s0 * s0 + s1 * s1 + s2 * s2
            max_side = max(s0, max(s1, s2))
            diag = math.sqrt(diag2)
            # The sample's normalizers.
            for m in range(n_norm):
                kind = norm_kind[m]
                norm = 0.0
                valid = False
                if kind == NORM_PAIR:
                    a = norm_a[m]
                    b = norm_b[m]
                    if vis[i, a] != 0 and vis[i, b] != 0:
                        acc = 0.0
                        for c in range(dims):
                            dc = gt[i, a, c] - gt[i, b, c]
                            acc += dc * dc
                        norm = math.sqrt(acc)
                        valid = diag > 0.0 and norm >= rel_floor * diag if floor_mode == FLOOR_RELATIVE else True
                elif kind == NORM_BBOX:
                    norm = diag
                    valid = diag > 0.0 or floor_mode != FLOOR_RELATIVE
                elif kind == NORM_BBOX_MAX_SIDE:
                    norm = max_side
                    valid = max_side > 0.0 or floor_mode != FLOOR_RELATIVE
                else:
                    norm = norm_value[m]
                    valid = norm > 0.0
                if valid and kind != NORM_ABS and floor_mode == FLOOR_CLAMP:
                    norm = max(norm, floor_value)
                if not valid:
                    norm_bad[s, m] += 1
                    continue
                # PCK under this normalizer, over the visible joints.
                for u in range(nv):
                    j = joint[u]
                    if per_axis:
                        x0 = diff[u, 0] / norm
                        x1 = diff[u, 1] / norm
                        acc = x0 * x0 + x1 * x1
                        if dims == 3:
                            x2 = diff[u, 2] / norm
                            acc += x2 * x2
                        r = math.sqrt(acc) if math.isfinite(acc) else np.inf
                    else:
                        r = dist[u] / norm
                    if single:
                        r = float(np.float32(r))
                    q = 0
                    if strict:
                        while q < n_k and not r < pck_thr[m, q]:
                            q += 1
                    else:
                        while q < n_k and not r <= pck_thr[m, q]:
                            q += 1
                    pck_first[s, m, q, j] += 1
                    if do_auc:
                        auc_pass[s, m, j] += _count_passed(r, auc_thr[m], strict)
            area = area_const
            if do_oks and area < 0.0:
                area = 0.53 * s0 * s1
            oks_ok = do_oks and area > 0.0
            total = 0.0
            if oks_ok:
                inv_area2 = 1.0 / (2.0 * area)
                for u in range(nv):
                    total += math.exp(-(dist2[u] * inv_var[joint[u]] * inv_area2))
            if do_oks:
                if oks_ok:
                    oks_sum[s] += total / nv
                    oks_n[s] += 1
                else:
                    oks_bad[s] += 1


@njit_parallel
def _procrustes_moments(pred, gt, vis, mu_p, mu_g, var_p, var_g, cov, n_vis, pred_finite):
    """Per row, over the visible joints: centroids, summed squared deviations and the cross-covariance
    ``cov[i, a, b] = sum_j (pred[i,j,a] - mu_p[i,a]) * (gt[i,j,b] - mu_g[i,b])``.

    ``pred_finite[i]`` is 0 when a visible joint's prediction is NaN/inf; that row's prediction moments and
    covariance are then left at zero (its error is infinite). Each row writes only its own outputs.
    """
    dims = gt.shape[2]
    k_joints = gt.shape[1]
    for i in prange(gt.shape[0]):
        nv = 0
        finite = True
        for c in range(dims):
            mu_p[i, c] = 0.0
            mu_g[i, c] = 0.0
            for e in range(dims):
                cov[i, c, e] = 0.0
        var_p[i] = 0.0
        var_g[i] = 0.0
        for j in range(k_joints):
            if vis[i, j] != 0:
                nv += 1
                for c in range(dims):
                    if not math.isfinite(pred[i, j, c]):
                        finite = False
        n_vis[i] = nv
        pred_finite[i] = 1 if finite else 0
        if nv == 0:
            continue
        for j in range(k_joints):
            if vis[i, j] != 0:
                for c in range(dims):
                    mu_g[i, c] += gt[i, j, c]
                    if finite:
                        mu_p[i, c] += pred[i, j, c]
        for c in range(dims):
            mu_p[i, c] /= nv
            mu_g[i, c] /= nv
        for j in range(k_joints):
            if vis[i, j] != 0:
                for c in range(dims):
                    xg = gt[i, j, c] - mu_g[i, c]
                    var_g[i] += xg * xg
                    if finite:
                        xp = pred[i, j, c] - mu_p[i, c]
                        var_p[i] += xp * xp
                        for e in range(dims):
                            cov[i, c, e] += xp * (gt[i, j, e] - mu_g[i, e])


@njit_parallel
def _aligned_error_sums(pred, gt, vis, rot, scale, trans, scoreable, pred_finite, order, seg_start,
                        err_sum, err_n, n_bad):
    """Per segment: the sum and count, per joint, of ||scale * (rot @ pred) + trans - gt|| over visible joints
    of scoreable rows (``scoreable[i] != 0``); a row whose prediction is not finite adds inf; a row that is
    not scoreable counts in ``n_bad``."""
    n_seg = seg_start.shape[0] - 1
    dims = gt.shape[2]
    k_joints = gt.shape[1]
    for s in prange(n_seg):
        for ii in range(seg_start[s + 1] - seg_start[s]):
            i = _row_of(order, seg_start, s, ii)
            if scoreable[i] == 0:
                n_bad[s] += 1
                continue
            for j in range(k_joints):
                if vis[i, j] == 0:
                    continue
                if pred_finite[i] == 0:
                    err_sum[s, j] += np.inf
                    err_n[s, j] += 1
                    continue
                acc = 0.0
                for c in range(dims):
                    rp = 0.0
                    for e in range(dims):
                        rp += rot[i, c, e] * pred[i, j, e]
                    diff = scale[i] * rp + trans[i, c] - gt[i, j, c]
                    acc += diff * diff
                err_sum[s, j] += math.sqrt(acc)
                err_n[s, j] += 1


@njit_parallel
def _replicate_sums(counts, table, out):
    """``out[b, c] = sum_g counts[b, g] * table[g, c]``, summed in cluster order; each replicate b is one
    ``prange`` iteration writing its own row (no BLAS, so the result does not depend on threads)."""
    n_boot = counts.shape[0]
    n_groups = counts.shape[1]
    n_cols = table.shape[1]
    for b in prange(n_boot):
        for c in range(n_cols):
            out[b, c] = 0.0
        for g in range(n_groups):
            w = counts[b, g]
            if w != 0:
                for c in range(n_cols):
                    out[b, c] += w * table[g, c]


@njit
def _segment_sums(values, segment, out):
    """``out[segment[i], c] += values[i, c]`` in row order (serial, so deterministic)."""
    for i in range(values.shape[0]):
        s = segment[i]
        for c in range(values.shape[1]):
            out[s, c] += values[i, c]


# -- classification ------------------------------------------------------------------------------------


@njit_parallel
def _argmax_rank(scores, true, pred, rank):
    """Per row i of ``scores`` (N, C): ``pred[i]`` = the first column holding the row's maximum (NumPy's
    ``argmax``), and ``rank[i]`` = the 0-based rank of column ``true[i]`` when columns are ordered by
    descending score, ties broken by lower column index first: the number of columns with a larger score
    plus the number of columns before ``true[i]`` with an equal score. So the true class is in the top k
    exactly when ``rank[i] < k``, and ``rank[i] == 0`` exactly when ``pred[i] == true[i]``.

    Scores must not be NaN (the wrapper refuses them); +-inf compare as usual. Each row writes only its own
    outputs, so results do not depend on the number of threads.
    """
    n_cols = scores.shape[1]
    for i in prange(scores.shape[0]):
        best = 0
        top = scores[i, 0]
        for c in range(1, n_cols):
            if scores[i, c] > top:
                top = scores[i, c]
                best = c
        pred[i] = best
        t = true[i]
        st = scores[i, t]
        r = 0
        for c in range(n_cols):
            s = scores[i, c]
            if s > st or (s == st and c < t):
                r += 1
        rank[i] = r


@njit_parallel
def _class_sums(true, pred, rank, ks, order, seg_start, n_rows, tp, support, predicted, topk):
    """Per segment s (see the module docstring): ``n_rows[s]`` rows, and per class c ``tp[s, c]`` (rows with
    true = predicted = c), ``support[s, c]`` (true = c) and ``predicted[s, c]`` (predicted = c); per
    threshold q, ``topk[s, q]`` = rows with ``rank < ks[q]`` (only when ``rank`` is non-empty).

    Labels are class indices in ``0..C-1`` (the wrapper checks). Counts are integers, so any grouping of
    rows gives the same totals.
    """
    n_seg = seg_start.shape[0] - 1
    n_k = ks.shape[0]
    do_rank = rank.shape[0] > 0
    for s in prange(n_seg):
        count = seg_start[s + 1] - seg_start[s]
        n_rows[s] = count
        for ii in range(count):
            i = _row_of(order, seg_start, s, ii)
            t = true[i]
            p = pred[i]
            support[s, t] += 1
            predicted[s, p] += 1
            if t == p:
                tp[s, t] += 1
            if do_rank:
                r = rank[i]
                for q in range(n_k):
                    if r < ks[q]:
                        topk[s, q] += 1


@njit_parallel
def _confusion_blocks(true, pred, rank, n_classes, block_start, conf, rank_hist, bad):
    """Per block b of rows ``block_start[b]:block_start[b+1]``: ``conf[b, t, p]`` += 1 for each row with true
    class t and predicted class p, and ``rank_hist[b, rank[i]]`` += 1 (only when ``rank`` is non-empty; ranks
    lie in ``0..n_classes-1``), so that top-k hits are ``rank_hist[:, :k].sum()``. A row whose t or p lies
    outside ``0..n_classes-1`` counts in ``bad[b]`` and nowhere else (the wrapper then refuses the labels).
    Each block is one ``prange`` iteration writing its own outputs; the caller sums the blocks (integers,
    so exactly)."""
    do_rank = rank.shape[0] > 0
    for b in prange(block_start.shape[0] - 1):
        for i in range(block_start[b], block_start[b + 1]):
            t = true[i]
            p = pred[i]
            if t < 0 or t >= n_classes or p < 0 or p >= n_classes:
                bad[b] += 1
                continue
            conf[b, t, p] += 1
            if do_rank:
                rank_hist[b, rank[i]] += 1
