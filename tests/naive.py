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
