"""Helpers of the performance gate (.ci/bench-gate), reading the results ``asv continuous`` just wrote.

    python .ci/bench_gate_check.py flagged BASE_HASH HEAD_HASH FACTOR [REGEX...]
        Print a table of every measured case (median ratio as asv reports it, best-sample ratio) and write,
        one per line to stdout after the table, an exact asv ``--bench`` regex (prefixed ``flag: ``) for each
        case slower than FACTOR by either test:

        - asv's: ratio of medians above FACTOR and, with enough samples, a Mann-Whitney U test at p < 0.002;
        - the best sample's: the fastest of HEAD's samples over the fastest of BASE's above FACTOR. Load from
          other work only ever adds time, so the fastest of 24 samples taken in 4 separate rounds is the
          estimate least moved by it; a burst that slows several rounds of one commit moves the median.

        With REGEX arguments only the cases matching one of them are considered (the confirmation run).

    python .ci/bench_gate_check.py measured HEAD_HASH REGEX
        Exit 1 unless every gated benchmark case was measured at HEAD. asv's comparison shows a case that
        fails at both commits, or is skipped (NotImplementedError in setup) at HEAD, as unchanged; a skip at
        HEAD means the benchmark no longer matches the code (a renamed kernel, a changed signature) and would
        silently stop guarding anything.

    python .ci/bench_gate_check.py floor-regex
        Print an asv ``--bench`` regex matching every benchmark of ``benchmarks/floors.toml``.

    python .ci/bench_gate_check.py floors HEAD_HASH
        Exit 1 unless every case of every benchmark in ``benchmarks/floors.toml`` was measured at HEAD (by
        ``asv run --python=same --set-commit-hash HEAD_HASH``) at or above its floor; print each value and floor.
"""

from __future__ import annotations

import glob
import itertools
import math
import os
import re
import sys

import tomllib
from asv import _stats, config, results
from asv.benchmarks import Benchmarks
from asv.commands.compare import _is_result_better


def _conf():
    return config.Config.load("asv.conf.json")


FLOORS = "benchmarks/floors.toml"
#: Slowdowns a submission chose on purpose, each against one base commit only (benchmarks/README.md, "Accepted
#: slowdowns"): the next submission's base already holds them, so an entry never hides a later regression.
ACCEPTED = "benchmarks/accepted.toml"


def load_results(conf, commit_hash: str, env: str = "*"):
    """The newest results file of ``commit_hash`` (the run that just finished) in environments matching
    ``env`` (``existing-*``: the ``--python=same`` run of the floors), or None."""
    files = glob.glob(os.path.join(conf.results_dir, "*", f"{commit_hash[:8]}-{env}.json"))
    return results.Results.load(max(files, key=os.path.getmtime)) if files else None


def load_floors(path: str = FLOORS) -> dict[str, float]:
    """``{benchmark name: floor}`` from ``benchmarks/floors.toml``'s ``[floors]`` table."""
    with open(path, "rb") as fh:
        doc = tomllib.load(fh)
    floors = doc.get("floors")
    if not isinstance(floors, dict) or not floors:
        raise SystemExit(f"bench-gate: error: {path} has no [floors] table")
    out = {}
    for name, value in floors.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise SystemExit(f"bench-gate: error: {path}: the floor of {name} must be a positive number, got {value!r}")
        out[name] = float(value)
    return out


def floor_regex(floors: dict[str, float]) -> str:
    return "^(" + "|".join(re.escape(name) for name in sorted(floors)) + r")(\(|$)"  # a case: name(params)


def check_floors(head_hash: str) -> int:
    """Every case of every floored benchmark measured at HEAD and at or above its floor: 0, else 1."""
    floors = load_floors()
    res = load_results(_conf(), head_hash, env="existing-*")
    if res is None:
        print(f"bench-gate: FAILED: no measurement of the floored ratios at {head_hash[:8]} (asv run did not run)")
        return 1
    keys = set(res.get_all_result_keys())
    below, missing, rows = [], [], []
    for name, floor in sorted(floors.items()):
        if name not in keys:
            missing.append(f"{name}: not measured at HEAD")
            continue
        params = res.get_result_params(name)
        values = res.get_result_value(name, params)
        for i, case in _cases(res, name):
            value = values[i]
            if value is None or (isinstance(value, float) and math.isnan(value)):
                missing.append(f"{case}: failed or skipped at HEAD")
                continue
            rows.append((case, value, floor))
            if value < floor:
                below.append(f"{case}: {value:.2f} < floor {floor:g}")
    print(f"\nbench-gate: same-process ratios at HEAD against their floors ({FLOORS})\n")
    print(f"{'ratio':>8}  {'floor':>6}  case")
    for case, value, floor in rows:
        print(f"{value:>8.2f}  {floor:>6g}  {case}{'   BELOW' if value < floor else ''}")
    print()
    if below or missing:
        print(f"bench-gate: FAILED: {len(below)} ratio(s) below their floor, {len(missing)} not measured:")
        for line in below + missing:
            print(f"  {line}")
        return 1
    print(f"bench-gate: all {len(rows)} floored ratio cases are at or above their floors.")
    return 0


def _cases(res, name):
    params = res.get_result_params(name)
    if not params:
        return [(0, name)]
    return [(i, f"{name}({', '.join(p)})") for i, p in enumerate(itertools.product(*params))]


def compare(base_hash: str, head_hash: str, factor: float) -> list[dict]:
    """One row per case measured at both commits: medians, ratio HEAD/BASE, whether the samples differ
    significantly, and whether ``asv continuous --factor FACTOR`` calls it slower."""
    conf = _conf()
    base, head = load_results(conf, base_hash), load_results(conf, head_hash)
    for commit, res in ((base_hash, base), (head_hash, head)):
        if res is None:
            sys.exit(f"bench-gate: error: no asv results for {commit[:8]} (no benchmark matched, or asv failed above)")
    rows = []
    for name in sorted(set(head.get_all_result_keys()) & set(base.get_all_result_keys())):
        params = head.get_result_params(name)
        v_b, v_h = base.get_result_value(name, params), head.get_result_value(name, params)
        s_b, s_h = base.get_result_stats(name, params), head.get_result_stats(name, params)
        x_b, x_h = base.get_result_samples(name, params), head.get_result_samples(name, params)
        for i, case in _cases(head, name):
            b, h = v_b[i], v_h[i]
            if b is None or h is None or math.isnan(b) or math.isnan(h):
                continue
            different = _stats.is_different(x_b[i], x_h[i], s_b[i], s_h[i]) if s_b[i] and s_h[i] else None
            asv_slower = bool(_is_result_better(b, h, (s_b[i], x_b[i]), (s_h[i], x_h[i]), factor))
            best = None
            if x_b[i] and x_h[i] and min(x_b[i]) > 0:
                best = min(x_h[i]) / min(x_b[i])
            best_slower = best is not None and best > factor
            rows.append({"benchmark": case, "base": b, "head": h, "ratio": h / b, "significant": different,
                         "best_ratio": best, "asv_slower": asv_slower, "best_slower": best_slower,
                         "gate_fails": asv_slower or best_slower})
    return rows


def measured(head_hash: str, regex: str) -> int:
    conf = _conf()
    res = load_results(conf, head_hash)
    if res is None:
        print(f"bench-gate: no asv results for {head_hash[:8]}: the benchmarks did not run at HEAD")
        return 1
    benchmarks = Benchmarks.load(conf, regex=[regex])
    problems, count = [], 0
    for name in sorted(benchmarks):
        params = benchmarks[name]["params"]
        values = res.get_result_value(name, params) if name in res.get_all_result_keys() else None
        labels = [f"{name}({', '.join(p)})" for p in itertools.product(*params)] if params else [name]
        for idx in benchmarks.benchmark_selection.get(name) or [0]:
            value = None if values is None else values[idx]
            if value is None:
                problems.append(f"{labels[idx]}: failed at HEAD")
            elif isinstance(value, float) and math.isnan(value):
                problems.append(f"{labels[idx]}: skipped at HEAD (NotImplementedError in setup)")
            else:
                count += 1
    if problems:
        print(f"bench-gate: FAILED: {len(problems)} gated benchmark case(s) not measured at HEAD:")
        for line in problems:
            print(f"  {line}")
        return 1
    print(f"bench-gate: all {count} gated benchmark cases were measured at HEAD.")
    return 0


def flagged(base_hash: str, head_hash: str, factor: float, only: list[str]) -> int:
    rows = compare(base_hash, head_hash, factor)
    if only:
        rows = [r for r in rows if any(re.search(rx, r["benchmark"]) for rx in only)]
    rows.sort(key=lambda r: -(r["best_ratio"] or 0.0))
    print(f"\nbench-gate: ratios HEAD/BASE, factor {factor} ('+': slower beyond it by that test)\n")
    print(f"{'median (asv)':>14}  {'best sample':>12}  case")
    for r in rows:
        best = "n/a" if r["best_ratio"] is None else f"{r['best_ratio']:.2f}"
        print(f"{r['ratio']:>12.2f} {'+' if r['asv_slower'] else ' '}  {best:>10} {'+' if r['best_slower'] else ' '}"
              f"  {r['benchmark']}")
    print()
    accepted = load_accepted(base_hash)
    for r in rows:
        if r["gate_fails"] and r["benchmark"] in accepted:
            print(f"bench-gate: accepted against this base ({ACCEPTED}): {r['benchmark']}: {accepted[r['benchmark']]}")
        elif r["gate_fails"]:
            print(f"flag: ^{re.escape(r['benchmark'])}$")
    return 0


def load_accepted(base_hash: str) -> dict[str, str]:
    """``{case: reason}`` of the accepted slowdowns recorded against ``base_hash`` (a full commit hash)."""
    if not os.path.exists(ACCEPTED):
        return {}
    with open(ACCEPTED, "rb") as fh:
        doc = tomllib.load(fh)
    return {e["case"]: e["reason"] for e in doc.get("accepted", []) if e.get("base") == base_hash}


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    if mode == "measured":
        sys.exit(measured(args[0], args[1]))
    if mode == "floor-regex":
        print(floor_regex(load_floors()))
        sys.exit(0)
    if mode == "floors":
        sys.exit(check_floors(args[0]))
    if mode == "flagged":
        sys.exit(flagged(args[0], args[1], float(args[2]), args[3:]))
    sys.exit(f"unknown mode {mode!r}: use measured, flagged, floor-regex or floors")
