"""Slow, obviously-correct twins of rfbench's kernels, written from the reference descriptions.

Each function here follows its reference line by line, in plain Python, with no attempt at speed. Tests
compare the Numba kernels with these on hand-made, random and awkward inputs.
"""

from __future__ import annotations

import math

import numpy as np

# ==========================================================================================================
# Intel 5300 bfee parsing (read_bf_file.m + read_bfee.c, with rfbench's skip-and-count policy)
# ==========================================================================================================

SKIP_REASONS = ("truncated", "bad_len", "short_body", "bad_shape", "zero_field_len")


def naive_read_bfee(data: bytes) -> dict:
    """Parse a bfee log record by record.

    Returns a dict with ``records`` (a list of dicts: header fields, ``perm`` 0-based, ``perm_applied``,
    ``csi`` as a nested list [subcarrier][rx][tx] of (real, imag) tuples in the record's own shape),
    ``skipped`` (counts by reason plus ``invalid_perm``) and ``non_csi`` ({code: count}).
    """
    records = []
    skipped = {r: 0 for r in SKIP_REASONS}
    skipped["invalid_perm"] = 0
    non_csi: dict[int, int] = {}
    pos = 0
    n = len(data)
    while pos < n:
        if n - pos < 2:
            skipped["truncated"] += 1
            break
        field_len = data[pos] * 256 + data[pos + 1]  # big-endian
        if field_len == 0:
            skipped["zero_field_len"] += 1
            pos += 2
            continue
        if pos + 2 + field_len > n:
            skipped["truncated"] += 1
            break
        code = data[pos + 2]
        body = data[pos + 3: pos + 2 + field_len]
        pos += 2 + field_len
        if code != 0xBB:
            non_csi[code] = non_csi.get(code, 0) + 1
            continue
        if len(body) < 20:
            skipped["short_body"] += 1
            continue
        nrx, ntx = body[8], body[9]
        if not (1 <= nrx <= 3 and 1 <= ntx <= 3):
            skipped["bad_shape"] += 1
            continue
        length = body[16] + 256 * body[17]
        if length != (30 * (nrx * ntx * 16 + 3) + 7) // 8:
            skipped["bad_len"] += 1
            continue
        if len(body) < 20 + length:
            skipped["short_body"] += 1
            continue
        rec = {
            "timestamp_low": int.from_bytes(body[0:4], "little"),
            "bfee_count": int.from_bytes(body[4:6], "little"),
            "nrx": nrx,
            "ntx": ntx,
            "rssi_a": body[10],
            "rssi_b": body[11],
            "rssi_c": body[12],
            "noise": body[13] - 256 if body[13] >= 128 else body[13],
            "agc": body[14],
            "antenna_sel": body[15],
            "rate": int.from_bytes(body[18:20], "little"),
        }
        payload = body[20:]
        csi = [[[None] * ntx for _ in range(nrx)] for _ in range(30)]
        index = 0
        for i in range(30):
            index += 3
            remainder = index % 8
            for j in range(nrx * ntx):
                real = ((payload[index // 8] >> remainder) | (payload[index // 8 + 1] << (8 - remainder))) & 0xFF
                imag = ((payload[index // 8 + 1] >> remainder) | (payload[index // 8 + 2] << (8 - remainder))) & 0xFF
                real = real - 256 if real >= 128 else real
                imag = imag - 256 if imag >= 128 else imag
                csi[i][j // ntx][j % ntx] = (real, imag)
                index += 16
        sel = rec["antenna_sel"]
        perm1 = [((sel >> 0) & 3) + 1, ((sel >> 2) & 3) + 1, ((sel >> 4) & 3) + 1]  # MATLAB, 1-based
        rec["perm"] = [p - 1 for p in perm1]
        rec["perm_applied"] = False
        if nrx > 1:
            reference_would = sum(perm1) == [1, 3, 6][nrx - 1]
            true_permutation = sorted(perm1[:nrx]) == list(range(1, nrx + 1))
            if reference_would and true_permutation:
                # csi(:, perm(1:Nrx), :) = csi(:, 1:Nrx, :)
                permuted = [[None] * nrx for _ in range(30)]
                for i in range(30):
                    for k in range(nrx):
                        permuted[i][perm1[k] - 1] = csi[i][k]
                csi = permuted
                rec["perm_applied"] = True
            else:
                skipped["invalid_perm"] += 1
        rec["csi"] = csi
        records.append(rec)
    return {"records": records, "skipped": skipped, "non_csi": non_csi}


def naive_padded_csi(records: list[dict]) -> np.ndarray:
    """The naive records' CSI as a complex array padded to the file's largest Nrx/Ntx (zeros elsewhere)."""
    if not records:
        return np.zeros((0, 30, 1, 1), np.complex64)
    r_max = max(r["nrx"] for r in records)
    t_max = max(r["ntx"] for r in records)
    out = np.zeros((len(records), 30, r_max, t_max), np.complex64)
    for n, rec in enumerate(records):
        for i in range(30):
            for a in range(rec["nrx"]):
                for b in range(rec["ntx"]):
                    re, im = rec["csi"][i][a][b]
                    out[n, i, a, b] = complex(re, im)
    return out


# ==========================================================================================================
# CSI scaling (get_total_rss.m + get_scaled_csi.m)
# ==========================================================================================================


def naive_total_rss(rssi_a: int, rssi_b: int, rssi_c: int, agc: int) -> float:
    """get_total_rss.m for one record; -inf when no RSSI is reported."""
    mag = 0.0
    for r in (rssi_a, rssi_b, rssi_c):
        if r != 0:
            mag += 10 ** (r / 10)
    if mag == 0.0:
        return -math.inf
    return 10 * math.log10(mag) - 44 - agc


def naive_scaled_csi(csi: np.ndarray, rssi_a, rssi_b, rssi_c, agc, noise, nrx: int, ntx: int) -> np.ndarray:
    """get_scaled_csi.m for one record ``csi`` (30, Nrx, Ntx); 0 where the reference would give NaN/0."""
    csi = np.asarray(csi, dtype=np.complex128)
    power = 0.0
    for v in csi.ravel():
        power += v.real * v.real + v.imag * v.imag
    rss = naive_total_rss(rssi_a, rssi_b, rssi_c, agc)
    if power == 0.0 or rss == -math.inf:
        return np.zeros_like(csi)
    scale = 10 ** (rss / 10) / (power / 30)
    noise_db = -92 if noise == -127 else noise
    total_noise = 10 ** (noise_db / 10) + scale * (nrx * ntx)
    factor = math.sqrt(scale / total_noise)
    if ntx == 2:
        factor *= math.sqrt(2)
    elif ntx == 3:
        factor *= math.sqrt(10 ** (4.5 / 10))
    return csi * factor


# ---------------------------------------------------------------------------------------------------------
# model: rfbench.nn (conv, layers, model), rfbench.train (proof, adapt), rfbench.csi.subcarrier
# ---------------------------------------------------------------------------------------------------------


def conv2d(x, w, b, stride, padding, dilation):
    """Direct definition, one output at a time: 0.0 + terms over (ci, kh, kw) in order, padding skipped, + b."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    n_b, c_in, h, wd = x.shape
    c_out, _, k_h, k_w = w.shape
    h_out = (h + 2 * ph - dh * (k_h - 1) - 1) // sh + 1
    w_out = (wd + 2 * pw - dw * (k_w - 1) - 1) // sw + 1
    out = np.zeros((n_b, c_out, h_out, w_out))
    for n in range(n_b):
        for co in range(c_out):
            for oh in range(h_out):
                for ow in range(w_out):
                    s = 0.0
                    for ci in range(c_in):
                        for kh in range(k_h):
                            for kw in range(k_w):
                                ih = oh * sh - ph + kh * dh
                                iw = ow * sw - pw + kw * dw
                                if 0 <= ih < h and 0 <= iw < wd:
                                    s += float(w[co, ci, kh, kw]) * float(x[n, ci, ih, iw])
                    out[n, co, oh, ow] = s + float(b[co])
    return out


def conv2d_backward(x, w, gout, stride, padding, dilation):
    """Gradients by the chain rule, element by element, in the orders rfbench.nn.conv documents."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    n_b, c_in, h, wd = x.shape
    c_out, _, k_h, k_w = w.shape
    _, _, h_out, w_out = gout.shape
    gb = np.zeros(c_out)
    gw = np.zeros(w.shape)
    gx = np.zeros(x.shape)
    for co in range(c_out):
        s = 0.0
        for oh in range(h_out):
            for ow in range(w_out):
                for n in range(n_b):
                    s += float(gout[n, co, oh, ow])
        gb[co] = s
        for ci in range(c_in):
            for kh in range(k_h):
                for kw in range(k_w):
                    s = 0.0
                    for oh in range(h_out):
                        for ow in range(w_out):
                            for n in range(n_b):
                                ih = oh * sh - ph + kh * dh
                                iw = ow * sw - pw + kw * dw
                                if 0 <= ih < h and 0 <= iw < wd:
                                    s += float(gout[n, co, oh, ow]) * float(x[n, ci, ih, iw])
                    gw[co, ci, kh, kw] = s
    for n in range(n_b):
        for ci in range(c_in):
            for ih in range(h):
                for iw in range(wd):
                    s = 0.0
                    for co in range(c_out):
                        for kh in range(k_h):
                            for kw in range(k_w):
                                num_h = ih + ph - kh * dh
                                num_w = iw + pw - kw * dw
                                if num_h % sh or num_w % sw:
                                    continue
                                oh, ow = num_h // sh, num_w // sw
                                if 0 <= oh < h_out and 0 <= ow < w_out:
                                    s += float(gout[n, co, oh, ow]) * float(w[co, ci, kh, kw])
                    gx[n, ci, ih, iw] = s
    return gx, gw, gb


def conv2d_im2col(x, w, b, stride, padding, dilation):
    """An independent NumPy formulation: zero-pad, gather patches (im2col), one matrix product."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    n_b, c_in, h, wd = x.shape
    c_out, _, k_h, k_w = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    h_out = (h + 2 * ph - dh * (k_h - 1) - 1) // sh + 1
    w_out = (wd + 2 * pw - dw * (k_w - 1) - 1) // sw + 1
    rows = (np.arange(h_out)[:, None] * sh + np.arange(k_h)[None, :] * dh)  # (h_out, k_h)
    cols = (np.arange(w_out)[:, None] * sw + np.arange(k_w)[None, :] * dw)  # (w_out, k_w)
    patches = xp[:, :, rows[:, None, :, None], cols[None, :, None, :]]  # (n, c, h_out, w_out, k_h, k_w)
    patches = patches.transpose(0, 2, 3, 1, 4, 5).reshape(n_b * h_out * w_out, c_in * k_h * k_w)
    out = patches @ w.reshape(c_out, -1).T + b
    return out.reshape(n_b, h_out, w_out, c_out).transpose(0, 3, 1, 2)


def softmax(x, axis):
    """Textbook stable softmax with NumPy's exp."""
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def softmax_rows_backward(y, gy):
    """Through the Jacobian of each row: J = diag(y) - y yᵀ (symmetric), gx = J gy."""
    gx = np.empty_like(y)
    for m in range(y.shape[0]):
        jac = np.diag(y[m]) - np.outer(y[m], y[m])
        gx[m] = jac @ gy[m]
    return gx


def linear(x, w, b):
    """Loops: 0.0 + x[m, i]*w[i, o] over i in order, then + b[o] (the documented order)."""
    out = np.empty((x.shape[0], w.shape[1]))
    for m in range(x.shape[0]):
        for o in range(w.shape[1]):
            s = 0.0
            for i in range(x.shape[1]):
                s += float(x[m, i]) * float(w[i, o])
            out[m, o] = s + float(b[o])
    return out


def attention(x, p):
    """Scaled dot-product attention written with NumPy matrix products (an independent formulation)."""
    q = x @ p["wq"] + p["bq"]
    k = x @ p["wk"] + p["bk"]
    v = x @ p["wv"] + p["bv"]
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    a = softmax(scores, axis=-1)
    return (a @ v) @ p["wo"] + p["bo"], a


def model_forward(params, x, spec):
    """The regressor composed from the twins above: conv, ReLU, conv, ReLU, tokens + attention, mean, linear."""
    k, s = spec.kernel_size, spec.conv_stride
    pad = (k // 2, k // 2)
    h = conv2d(x, params["conv1.weight"], params["conv1.bias"], (s, s), pad, (1, 1))
    h = np.maximum(h, 0.0)
    h = conv2d(h, params["conv2.weight"], params["conv2.bias"], (s, s), pad, (1, 1))
    h = np.maximum(h, 0.0)
    tokens = h.reshape(h.shape[0], h.shape[1], -1).transpose(0, 2, 1)
    attn = {n: params["attn." + n] for n in ("wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo")}
    z = tokens + attention(tokens, attn)[0]
    pooled = z.mean(axis=1)
    y = pooled @ params["head.weight"] + params["head.bias"]
    return y.reshape(x.shape[0], spec.keypoints, spec.coords)


def synthetic_mix(z, patterns, noise, base_pose, pose_basis, noise_scale):
    """Twin of rfbench.train.proof._synthetic: loops over the latent in order."""
    n, n_latent = z.shape
    x = np.empty((n, patterns.shape[1]))
    y = np.empty((n, pose_basis.shape[1]))
    for i in range(n):
        for f in range(patterns.shape[1]):
            s = 0.0
            for la in range(n_latent):
                s += z[i, la] * patterns[la, f]
            x[i, f] = s + noise_scale * noise[i, f]
        for o in range(pose_basis.shape[1]):
            s = 0.0
            for la in range(n_latent):
                s += z[i, la] * pose_basis[la, o]
            y[i, o] = base_pose[o] + s
    return x, y


def adapt_objective(f, a, b, protos, tau, entropy_weight):
    """Temporal InfoNCE + weighted prototype entropy, written directly with NumPy (no shared code)."""
    g = f + (f @ a) @ b
    norms = np.linalg.norm(g, axis=1, keepdims=True)
    u = np.divide(g, norms, out=np.zeros_like(g), where=norms > 0)
    sims = u @ u.T / tau
    n_t = len(u)
    terms = []
    for t in range(n_t - 1):
        others = np.delete(sims[t], t)
        terms.append(-sims[t, t + 1] + np.log(np.sum(np.exp(others))))
    tc = float(np.mean(terms)) if terms else 0.0
    q = softmax(u @ protos.T / tau, axis=1)
    ent = float(np.mean(-np.sum(q * np.log(q), axis=1)))
    return tc + entropy_weight * ent, tc, ent


def interp_rows(x, src, dst):
    """Linear interpolation per row by searching the bracketing source pair by hand."""
    out = np.empty((x.shape[0], len(dst)), dtype=x.dtype)
    for j, p in enumerate(dst):
        i = 0
        while i < len(src) - 2 and src[i + 1] <= p:
            i += 1
        f = (p - src[i]) / (src[i + 1] - src[i])
        for m in range(x.shape[0]):
            a, b = x[m, i], x[m, i + 1]
            out[m, j] = a if f == 0 else (b if f == 1 else a + (b - a) * f)
    return out


def percentile_nan(values, q):
    """Linear-interpolated percentile of the non-NaN values, straight from the definition h = (n-1)·q/100."""
    v = sorted(float(a) for a in np.ravel(values) if not math.isnan(a))
    if not v:
        return math.nan
    h = (len(v) - 1) * q / 100.0
    lo = math.floor(h)
    if lo >= len(v) - 1:
        return v[-1]
    return v[lo] + (v[lo + 1] - v[lo]) * (h - lo)


def relu(x):
    """max(x, 0), keeping NaN."""
    x = np.asarray(x, dtype=np.float64)
    return np.where(x <= 0.0, 0.0, x)


def relu_backward(pre, gout):
    return np.where(np.asarray(pre) > 0.0, gout, 0.0)


def residual_mean(tokens, attended):
    """Mean over tokens of (tokens + attended), summing tokens left to right."""
    n_b, n_t, n_c = tokens.shape
    out = np.empty((n_b, n_c))
    for b in range(n_b):
        for c in range(n_c):
            s = 0.0
            for t in range(n_t):
                s += float(tokens[b, t, c] + attended[b, t, c])
            out[b, c] = s / n_t
    return out


def mse(pred, target):
    s = 0.0
    for p, t in zip(np.ravel(pred), np.ravel(target)):
        s += (float(p) - float(t)) ** 2
    return s / np.size(pred)


# ==========================================================================================================
# Datasets, windows, split protocols and the leakage audit
# ==========================================================================================================


def naive_windows(frames, length: int, stride: int) -> list[tuple[int, int, int]]:
    """(recording, start, stop) of every window: slide from 0 while the window still fits."""
    out = []
    for r, n in enumerate(frames):
        start = 0
        while start + length <= n:
            out.append((r, start, start + length))
            start += stride
    return out


def naive_overlapping_recordings(recording, start, stop, side, n_recordings: int) -> list[bool]:
    """For each recording: is there a train row and a test row whose frame ranges [start, stop) share a frame?

    Compares every pair of rows, frame by frame; rows with side not 0/1 are ignored.
    """
    out = [False] * n_recordings
    rows = list(zip(recording, start, stop, side))
    for i, (ri, ai, bi, si) in enumerate(rows):
        for rj, aj, bj, sj in rows[i + 1:]:
            if ri != rj or si not in (0, 1) or sj not in (0, 1) or si == sj:
                continue
            if set(range(ai, bi)) & set(range(aj, bj)):
                out[ri] = True
    return out


def naive_mmfi_decode_config(protocol: str, split: str, seed: int = 0) -> tuple[dict, dict]:
    """The MM-Fi toolbox's ``decode_config`` for WiFi, as ``(train_form, val_form)``: {subject: [actions]}.

    Written from the toolbox's description, with the **global** legacy generator exactly as it does
    (``np.random.seed(rs); np.random.permutation(40)`` per action, ``rs += 1``); the global state is saved and
    restored around it so tests stay independent.
    """
    all_subjects = [f"S{k:02d}" for k in range(1, 41)]
    all_actions = [f"A{k:02d}" for k in range(1, 28)]
    if protocol == "protocol1":
        actions = ["A02", "A03", "A04", "A05", "A13", "A14", "A17", "A18", "A19", "A20", "A21", "A22", "A23", "A27"]
    elif protocol == "protocol2":
        actions = ["A01", "A06", "A07", "A08", "A09", "A10", "A11", "A12", "A15", "A16", "A24", "A25", "A26"]
    else:
        actions = all_actions
    train_form: dict = {}
    val_form: dict = {}
    if split == "random_split":
        state = np.random.get_state()
        try:
            rs = seed
            for action in actions:
                np.random.seed(rs)
                idx = np.random.permutation(len(all_subjects))
                cut = int(np.floor(0.8 * len(all_subjects)))
                subjects_train = [all_subjects[i] for i in idx[:cut]]
                subjects_val = [all_subjects[i] for i in idx[cut:]]
                for subject in all_subjects:
                    if subject in subjects_train:
                        train_form.setdefault(subject, []).append(action)
                    if subject in subjects_val:
                        val_form.setdefault(subject, []).append(action)
                rs += 1
        finally:
            np.random.set_state(state)
    elif split == "cross_scene_split":
        for subject in all_subjects[:30]:
            train_form[subject] = list(actions)
        for subject in all_subjects[30:]:
            val_form[subject] = list(actions)
    elif split == "cross_subject_split":
        val = ["S05", "S10", "S15", "S20", "S25", "S30", "S35", "S40"]
        for subject in all_subjects:
            (val_form if subject in val else train_form)[subject] = list(actions)
    else:
        raise ValueError(split)
    return train_form, val_form


def naive_audit(recordings: dict, train: list, test: list, claims: list) -> dict:
    """Set-based audit: ``recordings`` maps id → metadata dict; ``train``/``test`` hold ids or (id, start, stop).

    Returns ``{check name: passed}`` for recordings-disjoint, windows-disjoint and ``<key>-disjoint``.
    """
    def rows(side):
        out = []
        for e in side:
            if isinstance(e, str):
                out.append((e, 0, recordings[e]["frames"]))
            else:
                out.append(tuple(e))
        return out

    tr, te = rows(train), rows(test)
    result = {"recordings-disjoint": not ({r[0] for r in tr} & {r[0] for r in te})}
    frames_train = {(r, f) for r, a, b in tr for f in range(a, b)}
    frames_test = {(r, f) for r, a, b in te for f in range(a, b)}
    result["windows-disjoint"] = not (frames_train & frames_test)
    for key in claims:
        vt = {recordings[r[0]].get(key) for r in tr}
        ve = {recordings[r[0]].get(key) for r in te}
        result[f"{key}-disjoint"] = not (vt & ve) and None not in vt and None not in ve
    return result


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
    truth), else the list of aligned errors of its visible joints (inf when the prediction is not finite, or
    when the alignment cannot be computed in floating point: moments, SVD or transform not finite).
    """
    out = []
    for i in range(gt.shape[0]):
        v = vis[i] != 0
        x = pred[i][v]
        y = gt[i][v]
        if v.sum() < 3 or np.sum((y - y.mean(axis=0)) ** 2) == 0:
            out.append(None)
            continue
        wrong = [math.inf] * int(v.sum())
        if not np.isfinite(x).all():
            out.append(wrong)
            continue
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            mx, my = x.mean(axis=0), y.mean(axis=0)
            xc, yc = x - mx, y - my
            cov = xc.T @ yc  # D x D: sum_j x_j y_j^T
            var_x = np.sum(xc ** 2)
            if not (np.isfinite(mx).all() and np.isfinite(my).all() and np.isfinite(cov).all()
                    and np.isfinite(var_x)):
                out.append(wrong)
                continue
            try:
                u, s, vt = np.linalg.svd(cov)
            except np.linalg.LinAlgError:
                out.append(wrong)
                continue
            d = np.ones(len(s))
            if np.linalg.det(vt.T @ u.T) < 0:
                d[-1] = -1.0
            rot = vt.T @ np.diag(d) @ u.T
            scale = float(np.sum(s * d) / var_x) if var_x > 0 else 0.0
            shift = my - scale * rot @ mx
            if not (np.isfinite(rot).all() and math.isfinite(scale) and np.isfinite(shift).all()):
                out.append(wrong)
                continue
            aligned = scale * x @ rot.T + shift
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


# ---------------------------------------------------------------------------------------------------------
# metrics: classification (gesture) — confusion counts, argmax/rank, scikit-learn's documented definitions
# ---------------------------------------------------------------------------------------------------------


def naive_argmax_rank(scores, true):
    """Per row: the first column holding the maximum, and the position of the true column in the columns
    sorted by (descending score, ascending index)."""
    pred, rank = [], []
    for row, t in zip(np.asarray(scores).tolist(), np.asarray(true).tolist()):
        best = 0
        for c in range(1, len(row)):
            if row[c] > row[best]:
                best = c
        order = sorted(range(len(row)), key=lambda c: (-row[c], c))
        pred.append(best)
        rank.append(order.index(t))
    return np.array(pred, dtype=np.int64), np.array(rank, dtype=np.int64)


def naive_confusion(true, pred, n_classes):
    out = np.zeros((n_classes, n_classes), dtype=np.int64)
    for t, p in zip(np.asarray(true).tolist(), np.asarray(pred).tolist()):
        out[t][p] += 1
    return out


def naive_class_sums(true, pred, rank, ks, segment_rows, n_classes):
    """Per segment (a list of row indices): [rows, tp per class, support per class, predicted per class,
    top-k hits per k] as a list of lists."""
    out = []
    for rows in segment_rows:
        tp, sup, prd = [0] * n_classes, [0] * n_classes, [0] * n_classes
        hits = [0] * len(ks)
        for i in rows:
            t, p = int(true[i]), int(pred[i])
            sup[t] += 1
            prd[p] += 1
            if t == p:
                tp[t] += 1
            if len(rank):
                for q, k in enumerate(ks):
                    if rank[i] < k:
                        hits[q] += 1
        out.append([len(rows)] + tp + sup + prd + hits)
    return out


def sk_precision_recall_f1(y_true, y_pred, labels=None, zero_division=0.0):
    """scikit-learn's ``precision_recall_fscore_support(average=None)`` (>= 1.3): labels default to the sorted
    union of the labels present; precision tp/(tp+fp), recall tp/(tp+fn), F1 2tp/(2tp+fp+fn), each
    ``zero_division`` when its denominator is 0. Returns (labels, precision, recall, f1, support) lists."""
    y_true, y_pred = list(y_true), list(y_pred)
    if labels is None:
        labels = sorted(set(y_true) | set(y_pred))
    prec, rec, f1, sup = [], [], [], []
    for lab in labels:
        tp = sum(1 for t, p in zip(y_true, y_pred) if t == lab and p == lab)
        fp = sum(1 for t, p in zip(y_true, y_pred) if t != lab and p == lab)
        fn = sum(1 for t, p in zip(y_true, y_pred) if t == lab and p != lab)
        prec.append(tp / (tp + fp) if tp + fp else zero_division)
        rec.append(tp / (tp + fn) if tp + fn else zero_division)
        f1.append(2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else zero_division)
        sup.append(tp + fn)
    return labels, prec, rec, f1, sup


def sk_accuracy(y_true, y_pred):
    return sum(1 for t, p in zip(y_true, y_pred) if t == p) / len(y_true)


def sk_balanced_accuracy(y_true, y_pred):
    """scikit-learn's ``balanced_accuracy_score``: mean of per-class recall over the classes of the confusion
    matrix whose row sum is non-zero (classes only predicted have no recall and are dropped)."""
    labels = sorted(set(y_true) | set(y_pred))
    recalls = []
    for lab in labels:
        n = sum(1 for t in y_true if t == lab)
        if n:
            recalls.append(sum(1 for t, p in zip(y_true, y_pred) if t == lab and p == lab) / n)
    return sum(recalls) / len(recalls)


def sk_f1(y_true, y_pred, average):
    """scikit-learn's ``f1_score(average="macro" | "weighted")`` with its default labels (those present)."""
    _, _, _, f1, sup = sk_precision_recall_f1(y_true, y_pred)
    if average == "macro":
        return sum(f1) / len(f1)
    return sum(f * s for f, s in zip(f1, sup)) / sum(sup)


def sk_top_k_accuracy(y_true, scores, k, tie="lower-index"):
    """Share of rows whose true column is among the k first of the columns sorted by descending score; ties
    ordered by lower index first (rfbench) or by higher index first (scikit-learn's stable argsort reversed)."""
    hits = 0
    for row, t in zip(np.asarray(scores).tolist(), list(y_true)):
        if tie == "lower-index":
            order = sorted(range(len(row)), key=lambda c: (-row[c], c))
        else:
            order = sorted(range(len(row)), key=lambda c: (-row[c], -c))
        hits += t in order[:k]
    return hits / len(y_true)


def naive_expected_prior_metrics(y_true, prior, n_classes):
    """Metrics of the expected confusion matrix of a classifier drawing labels from ``prior``:
    E[conf[t][p]] = count(t) * prior[p]. Returns (accuracy, balanced accuracy, macro-F1, weighted-F1) with
    rfbench's averaging conventions (classes with support / with support or predictions)."""
    n = len(y_true)
    support = [sum(1 for t in y_true if t == c) for c in range(n_classes)]
    conf = [[support[t] * prior[p] for p in range(n_classes)] for t in range(n_classes)]
    tp = [conf[c][c] for c in range(n_classes)]
    predicted = [sum(conf[t][c] for t in range(n_classes)) for c in range(n_classes)]
    acc = sum(tp) / n
    recalls = [tp[c] / support[c] for c in range(n_classes) if support[c] > 0]
    f1 = {c: 2 * tp[c] / (support[c] + predicted[c]) for c in range(n_classes) if support[c] + predicted[c] > 0}
    macro = sum(f1.values()) / len(f1)
    weighted = sum(support[c] * f1[c] for c in f1 if support[c] > 0) / n
    return acc, sum(recalls) / len(recalls), macro, weighted


# ---------------------------------------------------------------------------------------------------------
# metrics: pose under the full MetricSpec (DESIGN.md §5 and issue 18): absolute thresholds, normalizer floors,
# per-axis normalisation, float32 distances
# ---------------------------------------------------------------------------------------------------------


def naive_spec_normalizer(g, v, norm, rel_floor=1e-6):
    """Normalizer of one sample under a norm tuple, or None when the sample is unscoreable for it.

    ``norm`` is ("pair", a, b, floor), ("bbox", floor), ("max", floor) or ("abs", T); ``floor`` is
    ("relative",) — a pair below ``rel_floor`` x the box diagonal (or a zero box) is unscoreable, the
    default —, ("clamp", c) — the normalizer is max(normalizer, c) and never unscoreable — or ("none",) —
    the normalizer is used as it is, even 0. The pair's joints must be visible in every case.
    """
    if norm[0] == "abs":
        return norm[1]
    floor = norm[-1]
    pts = [g[j] for j in range(len(v)) if v[j]]
    lo = [min(p[c] for p in pts) for c in range(g.shape[1])]
    hi = [max(p[c] for p in pts) for c in range(g.shape[1])]
    sides = [hi[c] - lo[c] for c in range(g.shape[1])]
    diag = math.sqrt(sum(s * s for s in sides))
    if norm[0] == "pair":
        a, b = norm[1], norm[2]
        if not (v[a] and v[b]):
            return None
        z = math.sqrt(sum((g[a][c] - g[b][c]) ** 2 for c in range(g.shape[1])))
        if floor[0] == "relative" and not (diag > 0 and z >= rel_floor * diag):
            return None
    else:
        z = diag if norm[0] == "bbox" else max(sides)
        if floor[0] == "relative" and not z > 0:
            return None
    if floor[0] == "clamp":
        z = max(z, floor[1])
    return z


def _ieee_div(a, b):
    """a / b as IEEE arithmetic does it: a zero divisor gives +-inf, or NaN for 0 / 0 (never an exception)."""
    a, b = float(a), float(b)
    if b == 0.0:
        if a == 0.0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def naive_pose_spec_totals(pred, gt, vis, norms, ks, strict, auc_n=0, auc_max=1.0, per_axis=False, single=False):
    """Totals of the PCK and PCK-AUC counts under the full spec, by plain loops over rows and joints.

    A relative normalizer z (pair, bbox, max) scores ``r = d / z`` against the ks and the fractions
    ``auc_max * i / auc_n``; ``("abs", T)`` scores the distance d itself against T (every k: k does not apply)
    and ``T * i / auc_n`` — unless ``per_axis``, where every normalizer, T included, divides each axis of the
    error before the norm is taken (``r = |(p - g) / z|``, mmpose's ``_calc_distances``) and abs:T is then
    scored against the fractions ``i / auc_n`` like mmpose's ``keypoint_auc``. ``single`` rounds r and the
    thresholds to float32 before comparing (mmpose stores distances as float32). Returns ``rows``, ``novis``,
    ``norm_bad`` (M,), ``pck_n`` (M, K), ``pck_hit`` (M, T, K) and ``auc_pass`` (M, K).
    """
    n, k, dims = gt.shape
    m, t = len(norms), len(ks)
    out = {"rows": n, "novis": 0, "norm_bad": np.zeros(m, int), "pck_n": np.zeros((m, k), int),
           "pck_hit": np.zeros((m, t, k), int), "auc_pass": np.zeros((m, k), int)}

    def f32(x):
        return float(np.float32(x)) if single else x

    def passes(r, thr):
        r, thr = f32(r), f32(thr)
        return r < thr if strict else r <= thr

    for i in range(n):
        p = pred[0] if pred.shape[0] == 1 else pred[i]
        g, v = gt[i], vis[i] != 0
        if not v.any():
            out["novis"] += 1
            continue
        for mi, norm in enumerate(norms):
            z = naive_spec_normalizer(g, v, norm)
            if z is None:
                out["norm_bad"][mi] += 1
                continue
            absolute = norm[0] == "abs" and not per_axis
            for j in range(k):
                if not v[j]:
                    continue
                if per_axis:
                    s2 = sum(_ieee_div(float(p[j][c]) - float(g[j][c]), z) ** 2 for c in range(dims))
                    r = math.sqrt(s2) if math.isfinite(s2) else math.inf
                else:
                    d = naive_distance(p[j], g[j])
                    r = d if absolute else _ieee_div(d, z)
                if norm[0] == "abs":
                    thresholds = [z] * t if absolute else [1.0] * t
                    auc = [(z if absolute else 1.0) * q / auc_n for q in range(auc_n)]
                else:
                    thresholds = list(ks)
                    auc = [auc_max * q / auc_n for q in range(auc_n)]
                out["pck_n"][mi, j] += 1
                for ti, thr in enumerate(thresholds):
                    out["pck_hit"][mi, ti, j] += passes(r, thr)
                out["auc_pass"][mi, j] += sum(passes(r, thr) for thr in auc)
    return out
# ==================================================================================================
# Content fingerprints (rfbench.protocols.content): XXH64, bfee record bodies, MM-Fi frame arrays
# ==========================================================================================================

_M64 = (1 << 64) - 1
_XP1, _XP2, _XP3, _XP4, _XP5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x85EBCA77C2B2AE63,
                                0x27D4EB2F165667C5)


def _xrotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _xround(acc: int, lane: int) -> int:
    acc = (acc + lane * _XP2) & _M64
    return (_xrotl(acc, 31) * _XP1) & _M64


def naive_xxh64(data: bytes, seed: int = 0) -> int:
    """XXH64, step by step as xxHash's doc/xxhash_spec.md ("XXH64 algorithm description") writes it, with
    Python integers reduced modulo 2**64 after every operation."""
    data = bytes(data)
    n = len(data)
    p = 0
    if n >= 32:
        acc = [(seed + _XP1 + _XP2) & _M64, (seed + _XP2) & _M64, seed & _M64, (seed - _XP1) & _M64]
        while p + 32 <= n:  # step 2: process stripes of 4 lanes
            for i in range(4):
                lane = int.from_bytes(data[p + 8 * i: p + 8 * i + 8], "little")
                acc[i] = _xround(acc[i], lane)
            p += 32
        h = (_xrotl(acc[0], 1) + _xrotl(acc[1], 7) + _xrotl(acc[2], 12) + _xrotl(acc[3], 18)) & _M64  # step 3
        for a in acc:
            h ^= _xround(0, a)
            h = (h * _XP1 + _XP4) & _M64
    else:  # step 1, short input
        h = (seed + _XP5) & _M64
    h = (h + n) & _M64  # step 4
    while p + 8 <= n:  # step 5: the remaining input
        h ^= _xround(0, int.from_bytes(data[p:p + 8], "little"))
        h = (_xrotl(h, 27) * _XP1 + _XP4) & _M64
        p += 8
    if p + 4 <= n:
        h ^= (int.from_bytes(data[p:p + 4], "little") * _XP1) & _M64
        h = (_xrotl(h, 23) * _XP2 + _XP3) & _M64
        p += 4
    while p < n:
        h ^= (data[p] * _XP5) & _M64
        h = (_xrotl(h, 11) * _XP1) & _M64
        p += 1
    h ^= h >> 33  # step 6: avalanche
    h = (h * _XP2) & _M64
    h ^= h >> 29
    h = (h * _XP3) & _M64
    h ^= h >> 32
    return h


def naive_record_fingerprints(data: bytes) -> list:
    """Per valid bfee record of a log (naive_read_bfee's records, in file order): None when all its CSI values are
    zero, else XXH64, seeded with its shape (Nrx - 1) * 3 + (Ntx - 1), of the squared magnitude real**2 + imag**2
    of each value as naive_read_bfee returns them (per subcarrier, rx, tx; after the antenna permutation where the
    reference applies it), each written as a little-endian 16-bit integer. Header fields but the antenna
    selection, the bits read_bfee.c does not read and bytes field_len claims beyond the payload take no part."""
    out = []
    for rec in naive_read_bfee(data)["records"]:
        values = [v for sc in rec["csi"] for row in sc for v in row]
        magnitudes = b"".join((re * re + im * im).to_bytes(2, "little") for re, im in values)
        nonzero = any(re or im for re, im in values)
        out.append(naive_xxh64(magnitudes, (rec["nrx"] - 1) * 3 + (rec["ntx"] - 1)) if nonzero else None)
    return out


def naive_record_phase_fingerprints(data: bytes) -> list:
    """Per valid bfee record of a log (naive_read_bfee's records): None when all its CSI values point one way (as
    arctan2 sees them: (0, 0) points as (1, 0)), else XXH64, seeded with its shape, of each value's direction — the
    pair divided by the greatest common divisor of its parts, each part as a byte (two's complement), real part
    high — written as a little-endian 16-bit integer."""
    out = []
    for rec, codes in zip(naive_read_bfee(data)["records"], naive_record_directions(data)):
        body = b"".join(c.to_bytes(2, "little") for c in codes)
        out.append(naive_xxh64(body, (rec["nrx"] - 1) * 3 + (rec["ntx"] - 1)) if len(set(codes)) > 1 else None)
    return out


def naive_record_directions(data: bytes) -> list:
    """Per valid bfee record: its values' directions as naive_record_phase_fingerprints defines them, in order."""
    out = []
    for rec in naive_read_bfee(data)["records"]:
        codes = []
        for sc in rec["csi"]:
            for row in sc:
                for re, im in row:
                    g = math.gcd(re, im)
                    re, im = (re // g, im // g) if g else (1, 0)
                    codes.append(((re & 0xFF) << 8) | (im & 0xFF))
        out.append(codes)
    return out


def naive_frame_fingerprint(arrays: dict) -> tuple:
    """(hash or None, status) of an MM-Fi frame: every value of CSIamp (not CSIphase) rounded to float32 in C order
    (complex: real, then imaginary), each packed as a little-endian double after writing -0.0 as 0.0 and any NaN as
    0x7FF8000000000000; status "zero" (every value 0), "non_finite" (no finite non-zero value, some NaN/inf)
    or "ok"."""
    import struct

    if "CSIamp" not in arrays:
        return None, "unparsed"
    values = []
    for v in np.asarray(arrays["CSIamp"]).reshape(-1).tolist():
        parts = [v.real, v.imag] if isinstance(v, complex) else [float(v)]
        values.extend(float(np.float32(x)) for x in parts)
    if all(v == 0 for v in values):
        return None, "zero"
    if not any(math.isfinite(v) and v != 0 for v in values):
        return None, "non_finite"
    packed = b"".join(b"\x00\x00\x00\x00\x00\x00\xf8\x7f" if math.isnan(v) else struct.pack("<d", v + 0.0)
                      for v in values)
    return naive_xxh64(packed), "ok"


def mmfi_toolbox_fill(csi_amp):
    """The MM-Fi toolbox's fill of a WiFi frame's CSIamp, transliterated line for line (minus the min-max
    scaling that follows it, and with ``scio.loadmat(frame)['CSIamp']`` replaced by the array given).

    Source: ybhbingo/MMFi_dataset, ``mmfi_lib/mmfi.py``, ``MMFi_Dataset.read_frame``, ``wifi-csi`` branch, commit
    269f64875508f030cbd1468c1e76d5333b0127cd. An all-NaN packet makes ``temp_not_nan_col.mean()`` the mean of an
    empty array (NaN, with a RuntimeWarning we silence here).
    """
    import warnings

    data = np.array(csi_amp, dtype=np.float64)
    data[np.isinf(np.array(csi_amp, dtype=np.float64))] = np.nan
    for i in range(10):  # 32
        temp_col = data[:, :, i]
        nan_num = np.count_nonzero(temp_col != temp_col)
        if nan_num != 0:
            temp_not_nan_col = temp_col[temp_col == temp_col]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                temp_col[np.isnan(temp_col)] = temp_not_nan_col.mean()
    return data


def naive_int8_amplitude(pairs):
    """|re + i·im| of int8 (re, im) pairs along the last axis, one value at a time: the square root in float64
    (exact sum, correctly rounded root), then rounded to float32 (rounding twice is harmless for a square root
    when the wider format has more than twice the narrower's precision plus two bits: 53 > 2·24 + 2)."""
    import math

    pairs = np.asarray(pairs)
    flat = pairs.reshape(-1, 2)
    out = np.empty(flat.shape[0], dtype=np.float32)
    for i in range(flat.shape[0]):
        a, b = int(flat[i, 0]), int(flat[i, 1])
        out[i] = np.float32(math.sqrt(a * a + b * b))
    return out.reshape(pairs.shape[:-1])


# ==========================================================================================================
# CSI corruptions (rfbench.csi.corruptions): one element at a time, on (packet, subcarrier, rx, tx) CSI
# ==========================================================================================================


def naive_noise(x, noise, snr):
    """x + sqrt(mean|x|² / snr / 2)·(n0 + j·n1); the power summed in C order into four sums, element i into sum
    i mod 4 (the tail, after the last whole group of four, into sum 0), then (s0 + s1) + (s2 + s3)."""
    x = np.asarray(x, dtype=np.complex128)
    flat = x.reshape(-1)
    sums = [0.0, 0.0, 0.0, 0.0]
    whole = flat.size - flat.size % 4
    for i, v in enumerate(flat):
        k = i % 4 if i < whole else 0
        sums[k] += v.real * v.real + v.imag * v.imag
    total = (sums[0] + sums[1]) + (sums[2] + sums[3])
    scale = math.sqrt(total / flat.size / snr / 2.0) if flat.size else 0.0
    out = np.empty_like(x)
    for idx in np.ndindex(x.shape):
        out[idx] = x[idx] + complex(scale * noise[idx + (0,)], scale * noise[idx + (1,)])
    return out


def naive_refill(x, lost):
    """Each lost packet: the straight line between the nearest kept packets before and after it (over the packet
    index), the nearest kept packet when there is one on one side only, zero when none is kept."""
    x = np.asarray(x, dtype=np.complex128)
    kept = [p for p in range(x.shape[0]) if not lost[p]]
    out = np.empty_like(x)
    for p in range(x.shape[0]):
        if not lost[p]:
            out[p] = x[p]
            continue
        before = [k for k in kept if k < p]
        after = [k for k in kept if k > p]
        if not before and not after:
            out[p] = 0
        elif not before:
            out[p] = x[after[0]]
        elif not after:
            out[p] = x[before[-1]]
        else:
            a, b = before[-1], after[0]
            w = (p - a) / (b - a)
            for idx in np.ndindex(x.shape[1:]):
                out[(p, *idx)] = x[(a, *idx)] * (1.0 - w) + x[(b, *idx)] * w
    return out


def naive_gain(x, gain, axis):
    """x[p, s, r, t] times gain[p] (axis 0), gain[s] (axis 1) or gain[r] (axis 2), one element at a time."""
    x = np.asarray(x, dtype=np.complex128)
    out = np.empty_like(x)
    for idx in np.ndindex(x.shape):
        out[idx] = x[idx] * gain[idx[axis]]
    return out


def naive_phase_slope(x, index, tau, spacing):
    """x[p, s, r, t] · e^{jθ·index[s]}, θ = −2π·spacing·tau[p], where e^{jθ·k} is built as the kernel's contract
    says: e^{jθ·k0} (k0 the smallest index) from its cosine and sine, then times e^{jθ} once per index step."""
    x = np.asarray(x, dtype=np.complex128)
    out = np.empty_like(x)
    k0 = int(min(index))
    for p in range(x.shape[0]):
        theta = -2.0 * math.pi * spacing * tau[p]
        step = complex(math.cos(theta), math.sin(theta))
        rotation = {}
        rot = complex(math.cos(theta * k0), math.sin(theta * k0))
        for k in range(k0, int(max(index)) + 1):
            rotation[k] = rot
            rot = rot * step
        for idx in np.ndindex(x.shape[1:]):
            out[(p, *idx)] = x[(p, *idx)] * rotation[int(index[idx[0]])]
    return out


# ==========================================================================================================
# Atheros CSI Tool logs (csi_fun.c: record_status + fill_csi_matrix), with rfbench's skip-and-count policy
# ==========================================================================================================


def naive_atheros_record_len(data: bytes, pos: int, big: bool) -> int:
    """Length of the record at ``pos`` if its header is plausible, -1 if a plausible record without CSI,
    -2 if not plausible (the rules of rfbench/io/atheros.py's docstring)."""
    order = "big" if big else "little"
    field_len = int.from_bytes(data[pos:pos + 2], order)
    csi_len = int.from_bytes(data[pos + 10:pos + 12], order)
    payload_len = int.from_bytes(data[pos + 25:pos + 27], order)
    if field_len != 25 + csi_len + payload_len:
        return -2
    if csi_len == 0:
        return -1
    tones, nr, nc = data[pos + 18], data[pos + 19], data[pos + 20]
    if tones not in (56, 114) or not 1 <= nr <= 3 or not 1 <= nc <= 3:
        return -2
    need = math.ceil(tones * nr * nc * 20 / 8)
    if not need <= csi_len <= need + 3:
        return -2
    return 2 + field_len


def naive_atheros_csi(csi: bytes, tones: int, nr: int, nc: int) -> np.ndarray:
    """``(tones, nr, nc)`` complex: the bit stream read LSB first, 10 bits per value, imaginary then real,
    tone outermost, then transmit antenna (nc), then receive antenna (nr), as fill_csi_matrix loops."""
    bits = []
    for byte in csi:
        bits.extend((byte >> j) & 1 for j in range(8))
    out = np.zeros((tones, nr, nc), dtype=np.complex128)
    at = 0

    def take():
        nonlocal at
        chunk = bits[at:at + 10] + [0] * max(0, at + 10 - len(bits))
        at += 10
        v = sum(bit << j for j, bit in enumerate(chunk))
        return v - 1024 if v >= 512 else v

    for k in range(tones):
        for c in range(nc):
            for r in range(nr):
                imag = take()
                real = take()
                out[k, r, c] = complex(real, imag)
    return out


def naive_read_atheros(data: bytes, start: int, big: bool) -> dict:
    """Every record of an Atheros log from ``start``: ``records`` (dicts of header fields and ``csi``) and
    ``skipped`` by reason; after an implausible header, move on one byte at a time to a plausible one."""
    order = "big" if big else "little"
    records, skipped = [], {"truncated": 0, "no_csi": 0, "bad_header": 0}
    pos = start
    n = len(data)
    while pos < n:
        if n - pos < 27:
            skipped["truncated"] += 1
            break
        r = naive_atheros_record_len(data, pos, big)
        if r == -2:
            skipped["bad_header"] += 1
            pos += 1
            while n - pos >= 27 and naive_atheros_record_len(data, pos, big) < 0:
                pos += 1
            if n - pos < 27:
                break  # the bytes left are part of the bad run
            continue
        length = 2 + int.from_bytes(data[pos:pos + 2], order)
        if pos + length > n:
            skipped["truncated"] += 1
            break
        if r == -1:
            skipped["no_csi"] += 1
            pos += length
            continue
        h = data[pos + 2:pos + 27]
        rec = {
            "timestamp": int.from_bytes(h[0:8], order),
            "csi_len": int.from_bytes(h[8:10], order), "tx_channel": int.from_bytes(h[10:12], order),
            "err_info": h[12], "noise_floor": h[13], "rate": h[14], "bandwidth": h[15], "num_tones": h[16],
            "nr": h[17], "nc": h[18], "rssi": h[19], "rssi_1": h[20], "rssi_2": h[21], "rssi_3": h[22],
            "payload_len": int.from_bytes(h[23:25], order),
        }
        rec["csi"] = naive_atheros_csi(data[pos + 27:pos + 27 + rec["csi_len"]], rec["num_tones"], rec["nr"],
                                       rec["nc"])
        records.append(rec)
        pos += length
    return {"records": records, "skipped": {k: v for k, v in skipped.items() if v}}


# ==========================================================================================================
# ESP32-CSI-Tool CSV lines (csi_component.h), with rfbench's rules (rfbench/io/esp32.py's docstring)
# ==========================================================================================================

ESP32_INT_FIELDS = ("rssi", "rate", "sig_mode", "mcs", "bandwidth", "smoothing", "not_sounding", "aggregation",
                    "stbc", "fec_coding", "sgi", "noise_floor", "ampdu_cnt", "channel", "secondary_channel",
                    "local_timestamp", "ant", "sig_len", "rx_state", "real_time_set", "len")


def _naive_int(text: str):
    body = text[1:] if text[:1] in "+-" else text
    if not body or not body.isascii() or not body.isdigit() or len(body) > 18:
        return None
    return int(text)


def naive_read_esp32(data: bytes) -> dict:
    """Every CSI_DATA line: ``records`` (dicts of fields and ``csi``: values 2j imaginary, 2j+1 real) and
    ``skipped`` by reason."""
    records = []
    skipped = dict.fromkeys(("bad_field", "truncated", "bad_value", "odd_list", "empty_list", "not_csi",
                             "text_after_list"), 0)
    for raw in data.split(b"\n"):
        line = raw[:-1] if raw.endswith(b"\r") else raw
        if not line:
            continue
        if not line.startswith(b"CSI_DATA,"):
            if not line.startswith(b"type,role,mac,"):
                skipped["not_csi"] += 1
            continue
        head, sep, rest = line.partition(b",[")
        fields = head.split(b",")
        if not sep or len(fields) != 25 or b"[" in fields[1] or b"]" in fields[1]:
            skipped["bad_field"] += 1
            continue
        text = [f.decode("latin-1") for f in fields]
        ints = [_naive_int(t) for t in text[3:23] + [text[24]]]
        mac_ok = len(text[2]) == 17 and all(text[2][i] == ":" for i in (2, 5, 8, 11, 14)) and all(
            c in "0123456789abcdefABCDEF" for i, c in enumerate(text[2]) if i % 3 != 2)
        ts = text[23]
        ts_ok = ts.lstrip("-").replace(".", "", 1).isdigit() and len(ts.lstrip("-").replace(".", "")) <= 15
        if None in ints or not mac_ok or not ts_ok:
            skipped["bad_field"] += 1
            continue
        if b"]" not in rest:
            skipped["truncated"] += 1
            continue
        if rest[rest.index(b"]") + 1:].strip(b" "):
            skipped["text_after_list"] += 1
            continue
        tokens = [t for t in rest[:rest.index(b"]")].decode("latin-1").split(" ") if t]
        values = [_naive_int(t) for t in tokens]
        if any(v is None or not -128 <= v <= 127 for v in values):
            skipped["bad_value"] += 1
            continue
        if not values:
            skipped["empty_list"] += 1
            continue
        if len(values) % 2:
            skipped["odd_list"] += 1
            continue
        rec = dict(zip(ESP32_INT_FIELDS, ints))
        rec["role"] = text[1]
        rec["mac"] = int(text[2].replace(":", ""), 16)
        rec["real_timestamp"] = float(ts)
        rec["csi"] = np.array([complex(values[2 * j + 1], values[2 * j]) for j in range(len(values) // 2)])
        records.append(rec)
    return {"records": records, "skipped": {k: v for k, v in skipped.items() if v}}


# ==========================================================================================================
# nexmon_csi pcaps (nexmon_csi's README and utils/matlab: csireader.m, unpack_float.c; rfbench's skip policy)
# ==========================================================================================================


def _naive_be(data, o, k):
    return int.from_bytes(data[o:o + k], "big")


def naive_nexmon_udp_payload(data: bytes, start: int, end: int, link: int):
    """(offset, length) of the UDP payload of packet ``data[start:end]`` if it is IPv4/UDP with port 5500 on
    either side, else (-1, 0). ``link``: -1 Ethernet (VLAN tags skipped), -2 Linux cooked, 0 raw IPv4."""
    ip = start
    if link == -1:
        if end - start < 14:
            return -1, 0
        ethertype = _naive_be(data, start + 12, 2)
        ip = start + 14
        for _ in range(2):
            if ethertype not in (0x8100, 0x88A8):
                break
            if end - ip < 4:
                return -1, 0
            ethertype = _naive_be(data, ip + 2, 2)
            ip += 4
        if ethertype != 0x0800:
            return -1, 0
    elif link == -2:
        if end - start < 16 or _naive_be(data, start + 14, 2) != 0x0800:
            return -1, 0
        ip = start + 16
    if end - ip < 20 or data[ip] >> 4 != 4:
        return -1, 0
    ihl = (data[ip] & 15) * 4
    fragment_offset = _naive_be(data, ip + 6, 2) & 0x1FFF
    if ihl < 20 or data[ip + 9] != 17 or fragment_offset != 0:
        return -1, 0
    udp = ip + ihl
    if end - udp < 8:
        return -1, 0
    if 5500 not in (_naive_be(data, udp, 2), _naive_be(data, udp + 2, 2)):
        return -1, 0
    udp_len = _naive_be(data, udp + 4, 2)
    length = end - (udp + 8)
    if udp_len >= 8:
        length = min(length, udp_len - 8)
    return udp + 8, length


def naive_unpack_float(words, nman: int, nexp: int) -> list:
    """nexmon_csi's ``unpack_float_acphy(10, 1, 0, 1, nman, nexp, nfft, H, Hout)`` (utils/matlab/unpack_float.c)
    line by line on a list of uint32 words; returns the 2*nfft ints (real, imaginary interleaved)."""
    sgn_mask = 1 << 31
    iq_mask = (1 << (nman - 1)) - 1
    e_mask = (1 << nexp) - 1
    e_p = 1 << (nexp - 1)
    sgnr_mask = 1 << (nexp + 2 * nman - 1)
    sgni_mask = sgnr_mask >> nman
    e_zero = -nman
    nbits = 10
    he = []
    hout = []
    maxbit = -e_p
    for h in words:
        vi = (h >> (nexp + nman)) & iq_mask
        vq = (h >> nexp) & iq_mask
        e = h & e_mask
        if e >= e_p:
            e -= e_p << 1
        he.append(e)
        x = vi | vq
        if x:  # the reference's binary search for the highest set bit, as written
            m, b, s = 0xFFFF0000, 0xFFFF, 16
            while s > 0:
                if x & m:
                    e += s
                    x >>= s
                s >>= 1
                m = (m >> s) & b
                b >>= s
            if e > maxbit:
                maxbit = e
        if h & sgnr_mask:
            vi |= sgn_mask
        if h & sgni_mask:
            vq |= sgn_mask
        hout += [vi, vq]
    shft = nbits - maxbit
    out = []
    for i, v in enumerate(hout):
        e = he[i >> 1] + shft
        sgn = 1
        if v & sgn_mask:
            sgn = -1
            v &= ~sgn_mask
        if e < e_zero:
            v = 0
        elif e < 0:
            v >>= -e
        else:
            v = (v << e) & 0xFFFFFFFF  # int32 arithmetic (never reached with a nonzero v: autoscale bounds e)
        out.append(sgn * v)
    return out


def naive_read_nexmon(data: bytes, chip: str, bandwidth_mhz=None, variant=None) -> dict:
    """A nexmon_csi pcap frame by frame: ``records`` (dicts of the header fields and ``csi``, a list of complex),
    ``skipped`` by reason, ``variant``. ``chip`` is required (the chip-version rule is tested apart)."""
    import struct

    magics = {b"\xd4\xc3\xb2\xa1": ("<", False), b"\xa1\xb2\xc3\xd4": (">", False),
              b"\x4d\x3c\xb2\xa1": ("<", True), b"\xa1\xb2\x3c\x4d": (">", True)}
    order, nano = magics[data[:4]]
    link = {1: -1, 113: -2, 101: 0, 228: 0}[struct.unpack(order + "I", data[20:24])[0] & 0x0FFFFFFF]
    n = len(data)
    skipped = dict.fromkeys(("truncated", "garbage", "not_csi", "short_payload", "bad_magic", "bad_chanspec"), 0)

    def header(pos):
        if n - pos < 16:
            return None
        sec, sub, caplen, wirelen = struct.unpack(order + "IIII", data[pos:pos + 16])
        if caplen > 262144 or caplen > wirelen or pos + 16 + caplen > n:
            return None
        return sec, sub, caplen, wirelen

    def nexmon_frame(pos, caplen):
        off, ln = naive_nexmon_udp_payload(data, pos + 16, pos + 16 + caplen, link)
        return (off, ln) if off >= 0 and ln >= 2 and data[off] == 0x11 and data[off + 1] == 0x11 else None

    frames = []
    pos = 24
    while pos < n:
        h = header(pos)
        if h is None:
            for p in range(pos + 1, n - 62 + 1):
                hp = header(p)
                if hp is not None and nexmon_frame(p, hp[2]) is not None:
                    skipped["garbage"] += 1
                    pos = p
                    break
            else:
                skipped["truncated"] += 1
                break
            continue
        f = nexmon_frame(pos, h[2])
        if f is None:
            skipped["not_csi"] += 1
        elif f[1] < 18:
            skipped["short_payload"] += 1
        else:
            frames.append((h, f[0], f[1]))
        pos += 16 + h[2]
    if variant is None:
        variant = "nexmon" if all(data[o:o + 4] == b"\x11" * 4 for _, o, _ in frames) else "nexmon-pull46"
    records = []
    for (sec, sub, caplen, wirelen), o, ln in frames:
        if variant == "nexmon" and data[o:o + 4] != b"\x11" * 4:
            skipped["bad_magic"] += 1
            continue
        chanspec = data[o + 14] | data[o + 15] << 8
        bw = bandwidth_mhz or {2: 20, 3: 40, 4: 80, 5: 160}.get((chanspec >> 11) & 7)
        if bw is None:
            skipped["bad_chanspec"] += 1
            continue
        nfft = bw * 16 // 5
        if ln < 18 + 4 * nfft:
            skipped["short_payload"] += 1
            continue
        body = data[o + 18:o + 18 + 4 * nfft]
        if chip in ("bcm4339", "bcm43455c0"):
            v = struct.unpack("<%dh" % (2 * nfft), body)
        else:
            nman, nexp = (9, 5) if chip == "bcm4358" else (12, 6)
            v = naive_unpack_float(list(struct.unpack("<%dI" % nfft, body)), nman, nexp)
        css = data[o + 12] | data[o + 13] << 8
        rec = {"timestamp_sec": sec, ("timestamp_nsec" if nano else "timestamp_usec"): sub,
               "captured_length": caplen, "wire_length": wirelen,
               "source_mac": int.from_bytes(data[o + 4:o + 10], "big"),
               "sequence": data[o + 10] | data[o + 11] << 8, "core": css & 7, "spatial_stream": (css >> 3) & 7,
               "chanspec": chanspec, "chip_version": data[o + 16] | data[o + 17] << 8,
               "csi": [complex(v[2 * k], v[2 * k + 1]) for k in range(nfft)]}
        if variant == "nexmon":
            rec["magic"] = struct.unpack("<I", data[o:o + 4])[0]
        else:
            rec["magic"] = data[o] | data[o + 1] << 8
            rec["rssi"] = struct.unpack("b", data[o + 2:o + 3])[0]
            rec["frame_control"] = data[o + 3]
        records.append(rec)
    return {"records": records, "skipped": skipped, "variant": variant}


# ==========================================================================================================
# PicoScenes .csi files (RXS frames; segment layouts of rxs_parsing_core as csiread 1.4.1 transcribes them)
# ==========================================================================================================


def naive_picoscenes_csi(device: int, payload: bytes, tones: int, nrx: int, ntx: int, fmt: int, cbw: int,
                         firmware: int) -> list:
    """One CSI buffer decoded value by value: a nested list [tone][rx][tx] of complex."""
    csi = [[[0j] * ntx for _ in range(nrx)] for _ in range(tones)]
    if device == 0x5300:
        bits = "".join(f"{byte:08b}"[::-1] for byte in payload)  # bit k of the stream is bit k%8 of byte k//8
        index = 0

        def int8_at(pos):
            v = int(bits[pos:pos + 8][::-1], 2)
            return v - 256 if v >= 128 else v

        for t in range(tones):
            index += 3
            for r in range(nrx):
                for x in range(ntx):
                    csi[t][r][x] = complex(int8_at(index), int8_at(index + 8))
                    index += 16
    elif device == 0x9300:
        values = []
        for q in range((tones * nrx * ntx) >> 1):
            word = int.from_bytes(payload[5 * q:5 * q + 5], "little")
            for k in range(4):
                v = (word >> (10 * k)) & 0x3FF
                values.append(v - 1024 if v & 512 else v)
        for pos in range(len(values) // 2):
            t, rest = divmod(pos, nrx * ntx)
            x, r = divmod(rest, nrx)
            csi[t][r][x] = complex(values[2 * pos + 1], values[2 * pos])
    elif device in (0x2000, 0x2100):
        gap = range(0)
        if firmware in (67, 68) and cbw == 160:
            gap = range(996, 1024) if fmt == 3 else range(242, 256) if fmt == 2 else range(0)
        kept = tones - len([t for t in gap if t < tones])
        csi = [[[0j] * ntx for _ in range(nrx)] for _ in range(kept)]
        o = 0
        for x in range(ntx):
            for r in range(nrx):
                g = 0
                for t in range(tones):
                    if t in gap:
                        o += 4
                        continue
                    re = int.from_bytes(payload[o:o + 2], "little", signed=True)
                    im = int.from_bytes(payload[o + 2:o + 4], "little", signed=True)
                    csi[g][r][x] = complex(re, im)
                    o += 4
                    g += 1
    return csi


def naive_read_picoscenes(data: bytes) -> dict:
    """A PicoScenes file frame by frame: ``records`` (dicts: ``csi`` nested [tone][rx][tx], ``device``, some
    RxSBasic and ExtraInfo fields, ``sequence``), ``skipped`` by reason, ``other`` segment counts by name."""
    import struct

    u16 = lambda o: struct.unpack_from("<H", data, o)[0]  # noqa: E731
    u32 = lambda o: struct.unpack_from("<I", data, o)[0]  # noqa: E731
    n = len(data)
    skipped = dict.fromkeys(("truncated", "garbage", "bad_segment", "no_csi", "bad_csi"), 0)
    other: dict[str, int] = {}
    known_other = ("MVMExtra", "PilotCSI", "LegacyCSI", "BasebandSignal", "PreEQSymbols", "CSI2")

    def frame_start(p):
        return (n - p >= 21 and u32(p) >= 7 and p + 4 + u32(p) <= n and u32(p + 4) == 0x20150315
                and u16(p + 8) == 1)

    records = []
    pos = 0
    while pos < n:
        if not frame_start(pos):
            for p in range(pos + 1, n - 21 + 1):
                if frame_start(p):
                    skipped["garbage"] += 1
                    pos = p
                    break
            else:
                skipped["truncated"] += 1
                break
        end = pos + 4 + u32(pos)
        cur = pos + 11
        segs = {}
        ok = True
        for _ in range(data[pos + 10]):
            if end - cur < 7:
                ok = False
                break
            seg_len, name_len = u32(cur), data[cur + 4]
            if seg_len < 3 + name_len or cur + 4 + seg_len > end:
                ok = False
                break
            name = data[cur + 5:cur + 5 + name_len].decode("latin-1")
            body = (u16(cur + 5 + name_len), cur + 7 + name_len, seg_len - 3 - name_len)
            if name in ("RxSBasic", "ExtraInfo", "CSI") and name not in segs:
                segs[name] = body
            else:
                key = name if name in known_other else "other"
                other[key] = other.get(key, 0) + 1
            cur += 4 + seg_len
        if not ok:
            skipped["bad_segment"] += 1
            pos = end
            continue
        if "CSI" not in segs:
            skipped["no_csi"] += 1
            pos = end
            continue
        ver, o, length = segs["CSI"]
        heads = {1: ("<HbHQQIHBBBBI", None), 2: ("<HbHQQIHBBBBhI", None), 3: ("<HbHQQIHBBBHBhI", None),
                 4: ("<HBbHQQIHBBBHBhI", None)}
        if ver not in heads or length < struct.calcsize(heads[ver][0]):
            skipped["bad_csi"] += 1
            pos = end
            continue
        f = struct.unpack_from(heads[ver][0], data, o)
        if ver == 4:
            device, firmware, fmt, cbw, _, _, _, tones, ntx, nrx, ess, _, _, _, buf = f
        else:
            device, fmt, cbw, _, _, _, tones, ntx, nrx = f[:9]
            firmware, buf = 0, f[-1]
        pay = o + struct.calcsize(heads[ver][0])
        streams = ntx
        if device == 0x5300:
            streams = ((buf - 12) // 60) // max(nrx, 1)
            need = ((3 + 16 * nrx * streams) * tones - 16) // 8 + 3
        elif device == 0x9300:
            streams = (buf // (140 if cbw == 20 else 285)) // max(nrx, 1)
            need = ((tones * nrx * streams) >> 1) * 5
        elif device in (0x2000, 0x2100) and ver == 4:
            need = 4 * tones * nrx * streams
        else:
            skipped["bad_csi"] += 1  # (SDR frames are compared apart)
            pos = end
            continue
        if pay + buf > o + length or need > buf or not (1 <= nrx <= 8 and 1 <= streams <= 8 and tones >= 1):
            skipped["bad_csi"] += 1
            pos = end
            continue
        csi = naive_picoscenes_csi(device, data[pay:pay + buf], tones, nrx, streams, fmt, cbw, firmware)
        if not csi or len(csi) > 4096:
            skipped["bad_csi"] += 1
            pos = end
            continue
        rec = {"csi": csi, "device": device}
        if "RxSBasic" in segs and segs["RxSBasic"][0] == 1 and segs["RxSBasic"][2] >= 26:
            bo = segs["RxSBasic"][1]
            noise = struct.unpack_from("b", data, bo + 21)[0]
            rec["timestamp"] = struct.unpack_from("<Q", data, bo + 2)[0]
            rec["noise_floor"] = noise
            rssi = noise + struct.unpack_from("b", data, bo + 22)[0]
            rec["rssi"] = (rssi + 128) % 256 - 128
        if "ExtraInfo" in segs and segs["ExtraInfo"][0] == 1 and segs["ExtraInfo"][2] >= 4:
            _, eo, elen = segs["ExtraInfo"]
            code = u32(eo)
            rec["extra_feature_code"] = code
            sizes = [(1, "extra_length", 2), (0, "extra_version", 8), (2, "extra_mac_current", 6),
                     (3, "extra_mac_rom", 6), (4, "extra_chansel", 4), (5, "extra_bmode", 1), (6, "evm", 20),
                     (7, "extra_tx_chainmask", 1), (8, "extra_rx_chainmask", 1), (9, "extra_tx_power", 1),
                     (10, "extra_cf", 8), (11, "extra_tx_tsf", 4), (12, "extra_last_hw_tx_tsf", 4),
                     (13, "extra_channel_flags", 2), (14, "extra_tx_ness", 1), (15, "extra_tuning_policy", 1),
                     (16, "extra_pll_rate", 2), (17, "extra_pll_refdiv", 1), (18, "extra_pll_clock_select", 1),
                     (19, "extra_agc", 1), (20, "extra_antenna_selection", 1), (21, "extra_sampling_rate", 8),
                     (22, "extra_cfo", 4), (23, "extra_sfo", 4), (24, "extra_temperature", 1)]
            p = eo + 4
            for _bit, name, _size in sizes:
                rec.setdefault(name, 0)
            for bit, name, size in sizes:
                if code >> bit & 1:
                    if p + size > eo + elen:
                        break
                    signed = name in ("extra_cfo", "extra_sfo", "extra_temperature")
                    rec[name] = int.from_bytes(data[p:p + size], "little", signed=signed)
                    p += size
            rec.pop("evm")
        mpdu = cur
        if end - mpdu >= 24:
            rec["sequence"] = u16(mpdu + 22) >> 4
            rec["source_mac"] = int.from_bytes(data[mpdu + 10:mpdu + 16], "big")
        records.append(rec)
        pos = end
    return {"records": records, "skipped": skipped, "other": other}


# ==========================================================================================================
# rfbench.io.hwlog.next_plausible — resynchronisation past damaged bytes (nexmon's resume test as the example)
# ==========================================================================================================


def naive_nexmon_resumes_at(data: bytes, p: int, big: bool, link: int) -> bool:
    """Whether a nexmon pcap walk may resume at ``data[p]``: a record header whose captured length is at most
    262,144 and at most its wire length, whose packet ends inside the data, and whose packet's UDP port-5500
    payload starts ``11 11``."""
    order = "big" if big else "little"
    if p + 16 > len(data):
        return False
    caplen = int.from_bytes(data[p + 8:p + 12], order)
    wirelen = int.from_bytes(data[p + 12:p + 16], order)
    if not (caplen <= 262144 and caplen <= wirelen and p + 16 + caplen <= len(data)):
        return False
    off, ln = naive_nexmon_udp_payload(data, p + 16, p + 16 + caplen, link)
    return off >= 0 and ln >= 2 and data[off] == 0x11 and data[off + 1] == 0x11


def naive_next_plausible(data: bytes, start: int, min_bytes: int, plausible) -> int:
    """The first offset ``p >= start`` with ``p + min_bytes <= len(data)`` where ``plausible(p)`` holds, else -1."""
    for p in range(start, len(data) - min_bytes + 1):
        if plausible(p):
            return p
    return -1


# ==========================================================================================================
# rfbench.io.documents._has_long_digits — the number-length pre-check of the bounded JSON reader
# ==========================================================================================================


def naive_has_long_digits(text: str, run: int) -> bool:
    """Whether ``text`` holds ``run`` or more ASCII digits in a row (the regex ``[0-9]{run,}``)."""
    count = 0
    for ch in text:
        count = count + 1 if "0" <= ch <= "9" else 0
        if count >= run:
            return True
    return False


# ==========================================================================================================
# rfbench.io.documents._json_depth — the nesting pre-check of the bounded JSON reader
# ==========================================================================================================


def naive_json_depth(text: str) -> int:
    """Deepest nesting of ``[]``/``{}`` outside JSON strings, one character at a time: a backslash inside a string
    escapes the next character."""
    depth = peak = 0
    inside = escaped = False
    for ch in text:
        if inside:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                inside = False
        elif ch == '"':
            inside = True
        elif ch in "[{":
            depth += 1
            peak = max(peak, depth)
        elif ch in "]}":
            depth -= 1
    return peak


# ==========================================================================================================
# rfbench.datasets.tree.display_path — a path as it is safe to print and store
# ==========================================================================================================


def naive_display_path(text: str) -> str:
    """Undecodable bytes (lone surrogates) as ``\\xNN``, control characters (and DEL) as ``\\xNN``."""
    out = []
    for ch in text:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # a byte the file system name held that is not UTF-8
            out.append(f"\\x{code - 0xDC00:02x}")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        else:
            out.append(ch)
    return "".join(out)
