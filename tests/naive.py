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
