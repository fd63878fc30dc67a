"""The findings of the content check for one assignment of recordings to sides: the pairs of recordings on
opposite sides that share content (a leak at ``min_shared`` records or frames, or one file), the shares below
the threshold, the copies within one side, the widespread content reported per recording, and the
file-by-file evidence (:class:`ContentAudit`, built by :func:`_judge` from a
:class:`~rfbench.protocols.content_index.ContentIndex`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from rfbench.protocols import content_matches as _matches  # WIDESPREAD_RECORDINGS, read where it is used

if TYPE_CHECKING:
    from rfbench.protocols.content_index import ContentIndex

#: Name of the audit check.
CHECK_CONTENT = "content-disjoint"
#: Entries kept in each list of the JSON result (totals are always given).
MAX_LISTED = 1000
#: Cross-side pairs given file-by-file evidence.
MAX_EVIDENCE = 100

_KINDS = ("files", "records", "frames")


# ----------------------------------------------------------------------------------------------------------
# Judging one assignment
# ----------------------------------------------------------------------------------------------------------


@dataclass
class ContentAudit:
    """What the content check found for one split (see :meth:`to_dict` for the JSON form).

    ``leaks`` are recording pairs on opposite sides sharing a file or ≥ ``min_shared`` records/frames (and
    recordings sharing that much widespread content); ``within`` lists content repeated inside one side.
    """

    passed: bool
    min_shared: int
    leaks: list
    widespread: list
    below_threshold: list
    within: dict
    counts: dict
    confirmations: dict
    problems: list
    totals: dict = field(default_factory=dict)

    def check(self) -> dict:
        """The audit check ``{name: "content-disjoint", passed, detail}``."""
        return {"name": CHECK_CONTENT, "passed": self.passed, "detail": self.detail()}

    def detail(self) -> str:
        c = self.counts
        scope = (f"{c['files']} file(s), {c['records']} record(s), {c['frames']} frame(s) fingerprinted; "
                 f"leak at {self.min_shared} shared record(s)/frame(s) or 1 shared file")
        within = self.within
        items = []
        for side in ("train", "test"):
            items += [f"{side} {x['a']} and {x['b']} share {_amount(x)}" for x in within[side]]
            items += [f"{side} {x['recording']} repeats {_amount(x)}" for x in within[f"{side}_repeated"]]
        n_within = sum(within[f"{s}_pairs"] + within[f"{s}_recordings"] for s in ("train", "test"))
        dup = ("; within one side (not a leak, but repeated samples): " + "; ".join(items[:3])
               + (f"; … ({n_within} in all)" if n_within > 3 else "")) if n_within else ""
        if self.passed:
            return f"no content shared across sides ({scope}){dup}"
        parts = [_leak_phrase(x) for x in self.leaks[:4]]
        parts += [_wide_phrase(w) for w in self.widespread[:max(0, 4 - len(parts))]]
        more = len(self.leaks) + len(self.widespread) - len(parts)
        text = "; ".join(parts) + (f"; … ({len(self.leaks) + len(self.widespread)} in all)" if more > 0 else "")
        return f"content shared across sides: {text} ({scope}){dup}"

    def to_dict(self) -> dict:
        """The JSON form stored as ``audit.content`` of a split file."""
        return {
            "passed": self.passed,
            "min_shared": self.min_shared,
            "widespread_limit": _matches.WIDESPREAD_RECORDINGS,
            "hash": "xxh64 (records: a bfee record's CSI values' squared magnitudes, with its shape, or another "
                    "hardware record's CSI values, complex ones' squared magnitudes; frames: canonical float64 "
                    "CSIamp, or a BVP profile's velocity_spectrum_ro as a model sees it, to its first non-zero "
                    "step); "
                    "files: sha256; every match confirmed by comparing bytes or arrays",
            "counts": self.counts,
            "confirmations": self.confirmations,
            "leak_count": self.totals.get("leaks", len(self.leaks)),
            "leaks": self.leaks,
            "widespread": self.widespread,
            "below_threshold": self.below_threshold,
            "within": self.within,
            "problems": self.problems,
        }


def _amount(x: Mapping) -> str:
    bits = []
    for key, unit in (("files", "file"), ("records", "record"), ("frames", "frame")):
        if x.get(key):
            bits.append(f"{x[key]} {unit}(s)")
    return ", ".join(bits) or "nothing"


def _leak_phrase(x: Mapping) -> str:
    return f"train {x['train']} and test {x['test']} share {_amount(x)}"


def _wide_phrase(w: Mapping) -> str:
    return (f"{w['side']} {w['recording']} shares {_amount(w)} each found in more than "
            f"{_matches.WIDESPREAD_RECORDINGS} recordings, {w['other_side_recordings']} of them on the other side")


def _pair_table(index: ContentIndex) -> tuple[np.ndarray, dict]:
    """All recording pairs (a < b) sharing any content, as an (n, 2) array, with their counts per kind."""
    width = np.int64(max(len(index.ids), 1))
    keys = {name: index._units[name].pair_a * width + index._units[name].pair_b for name in _KINDS}
    pairs = np.unique(np.concatenate(list(keys.values())))
    counts = {}
    for name in _KINDS:
        c = np.zeros(pairs.shape[0], dtype=np.int64)
        c[np.searchsorted(pairs, keys[name])] = index._units[name].pair_n  # keys are unique within a kind
        counts[name] = c
    return np.stack([pairs // width, pairs % width], axis=1), counts


def _evidence(index: ContentIndex, a: int, b: int) -> list[dict]:
    """For recordings a and b: per kind, which file of a holds content also in which file of b, how much, and
    the first such unit in each (record index within the file, in file order)."""
    out = []
    for name in _KINDS:
        u = index._units[name]
        sa = slice(u.rec_ptr[a], u.rec_ptr[a + 1])
        sb = slice(u.rec_ptr[b], u.rec_ptr[b + 1])
        ca, cb = u.m_class[sa], u.m_class[sb]
        common = np.intersect1d(ca, cb)
        if not common.size:
            continue
        # first membership of each common class on each side (rows are sorted by class, file, unit)
        ia = np.flatnonzero(np.isin(ca, common))
        ib = np.flatnonzero(np.isin(cb, common))
        ia = ia[np.concatenate([[True], ca[ia][1:] != ca[ia][:-1]])]
        ib = ib[np.concatenate([[True], cb[ib][1:] != cb[ib][:-1]])]
        fa, ua = u.m_file[sa][ia], u.m_unit[sa][ia]
        fb, ub = u.m_file[sb][ib], u.m_unit[sb][ib]
        width = np.int64(max(len(index.files), 1))
        pairs, inv, n = np.unique(fa * width + fb, return_inverse=True, return_counts=True)
        inv = inv.reshape(-1)
        for p, (x, y) in enumerate(zip((pairs // width).tolist(), (pairs % width).tolist())):
            rows = np.flatnonzero(inv == p)
            entry = {"kind": name, "a": index.files[x].rel, "b": index.files[y].rel, "count": int(n[p])}
            if name != "files":
                entry["first"] = [int(ua[rows].min()), int(ub[rows].min())]
            out.append(entry)
        if len(out) >= 20:
            break
    return out[:20]


def _judge(index: ContentIndex, in_train: np.ndarray, in_test: np.ndarray, min_shared: int) -> ContentAudit:
    pairs, counts = _pair_table(index)
    a, b = pairs[:, 0], pairs[:, 1]
    ab = in_train[a] & in_test[b]
    ba = in_test[a] & in_train[b] & ~ab
    cross = ab | ba
    train_rec = np.where(ab, a, b)
    test_rec = np.where(ab, b, a)
    leak = cross & ((counts["files"] >= 1) | (counts["records"] >= min_shared) | (counts["frames"] >= min_shared))
    below = cross & ~leak
    ids = index.ids
    tot = index._totals

    def pair_entry(k: int, first: str, second: str, ra: int, rb: int) -> dict:
        e = {first: ids[ra], second: ids[rb]}
        for name in _KINDS:
            e[name] = int(counts[name][k])
        for name in ("files", "records", "frames"):
            if tot[name][ra] or tot[name][rb]:
                e[f"{first}_{name}"] = int(tot[name][ra])
                e[f"{second}_{name}"] = int(tot[name][rb])
        return e

    def order(sel: np.ndarray) -> np.ndarray:
        k = np.flatnonzero(sel)
        weight = counts["files"][k] * (1 << 40) + counts["records"][k] + counts["frames"][k]
        names = [(ids[train_rec[i]], ids[test_rec[i]]) for i in k]
        return k[sorted(range(k.size), key=lambda j: (-int(weight[j]), names[j]))]

    leaks = []
    for n, k in enumerate(order(leak)[:MAX_LISTED]):
        e = pair_entry(k, "train", "test", int(train_rec[k]), int(test_rec[k]))
        if n < MAX_EVIDENCE:
            ra, rb = int(train_rec[k]), int(test_rec[k])
            ev = _evidence(index, min(ra, rb), max(ra, rb))
            if ra > rb:
                ev = [{**x, "a": x["b"], "b": x["a"], **({"first": x["first"][::-1]} if "first" in x else {})}
                      for x in ev]
            e["evidence"] = [{"kind": x["kind"], "train_file": x["a"], "test_file": x["b"], "count": x["count"],
                              **({"first": x["first"]} if "first" in x else {})} for x in ev]
        leaks.append(e)
    below_list = [pair_entry(k, "train", "test", int(train_rec[k]), int(test_rec[k]))
                  for k in order(below)[:MAX_LISTED]]

    within: dict[str, Any] = {}
    for side, mask in (("train", in_train), ("test", in_test)):
        sel = mask[a] & mask[b]
        k = np.flatnonzero(sel)
        rows = sorted(k.tolist(), key=lambda i: (ids[a[i]], ids[b[i]]))
        within[f"{side}_pairs"] = int(k.size)
        within[side] = [pair_entry(i, "a", "b", int(a[i]), int(b[i])) for i in rows[:MAX_LISTED]]
        copies = {name: index._units[name].self_copies for name in _KINDS}
        recs = np.flatnonzero(mask & ((copies["files"] + copies["records"] + copies["frames"]) > 0))
        within[f"{side}_recordings"] = int(recs.size)
        within[f"{side}_repeated"] = [{"recording": ids[r], **{n: int(copies[n][r]) for n in _KINDS}}
                                      for r in recs[:MAX_LISTED]]

    widespread = _widespread(index, in_train, in_test, min_shared)
    passed = not leak.any() and not any(w["leak"] for w in widespread)
    return ContentAudit(passed=passed, min_shared=min_shared, leaks=leaks,
                        widespread=[w for w in widespread][:MAX_LISTED], below_threshold=below_list,
                        within=within, counts=index.counts, confirmations=index.confirmations,
                        problems=index.problems, totals={"leaks": int(leak.sum())})


def _widespread(index: ContentIndex, in_train: np.ndarray, in_test: np.ndarray, min_shared: int) -> list[dict]:
    """Recordings sharing widespread classes with the other side: per recording and kind, how many."""
    n = len(index.ids)
    found: dict[tuple[str, int], dict] = {}
    for name in _KINDS:
        u = index._units[name]
        if not u.n_wide:
            continue
        has_train = np.bincount(u.wide_class[in_train[u.wide_rec]], minlength=u.n_wide) > 0
        has_test = np.bincount(u.wide_class[in_test[u.wide_rec]], minlength=u.n_wide) > 0
        n_train = np.bincount(u.wide_class[in_train[u.wide_rec]], minlength=u.n_wide)
        n_test = np.bincount(u.wide_class[in_test[u.wide_rec]], minlength=u.n_wide)
        for side, mine, other, n_other in (("train", in_train, has_test, n_test), ("test", in_test, has_train,
                                                                                     n_train)):
            sel = mine[u.wide_rec] & other[u.wide_class]
            per_rec = np.bincount(u.wide_rec[sel], minlength=n)
            most_other = np.zeros(n, dtype=np.int64)
            np.maximum.at(most_other, u.wide_rec[sel], n_other[u.wide_class[sel]])
            for r in np.flatnonzero(per_rec):
                e = found.setdefault((side, int(r)), {"side": side, "recording": index.ids[r], "files": 0,
                                                      "records": 0, "frames": 0, "other_side_recordings": 0})
                e[name] = int(per_rec[r])
                e["other_side_recordings"] = max(e["other_side_recordings"], int(most_other[r]))
    out = []
    for (_side, _r), e in sorted(found.items(), key=lambda kv: (kv[0][0], index.ids[kv[0][1]])):
        e["leak"] = bool(e["files"] >= 1 or e["records"] >= min_shared or e["frames"] >= min_shared)
        out.append(e)
    return out
