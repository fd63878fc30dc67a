"""Noise study of the performance gate: run it repeatedly on two commits with identical trees and record, per
benchmark, the spurious ratios it measures (HEAD / BASE; 1.0 is no change), and whether asv's statistical
test called them significant.

Usage, from a throwaway branch whose last commit changes nothing (``git commit --allow-empty -m noise``):

    python .ci/noise_study.py --runs 5 --out noise.jsonl      # runs .ci/bench-gate HEAD~1 HEAD 5 times
    python .ci/noise_study.py --summarize noise.jsonl          # the table in benchmarks/README.md

Ratios are HEAD / BASE medians. The worst ratios count both the first pass of each gate run and, for a case
that pass flagged, the confirmation run that measured it again (read from noise.jsonl.log).

Environment: ASV (default .venv/bin/asv), passed on to .ci/bench-gate.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_gate_check import compare  # noqa: E402


def run(runs: int, out: str, factor: float) -> int:
    def rev(name):
        return subprocess.check_output(["git", "rev-parse", name], text=True).strip()

    if subprocess.call(["git", "diff", "--quiet", "HEAD~1", "HEAD"]) != 0:
        print("HEAD~1 and HEAD differ: run the study on a commit that changes nothing "
              "(git commit --allow-empty -m noise, on a throwaway branch)", file=sys.stderr)
        return 2
    base_hash, head_hash = rev("HEAD~1"), rev("HEAD")
    env = dict(os.environ, RFBENCH_GATE_FACTOR=str(factor))
    for k in range(runs):
        t0 = time.time()
        proc = subprocess.run(["bash", ".ci/bench-gate", base_hash, head_hash], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        rc = proc.returncode
        with open(out + ".log", "a") as fh:
            fh.write(proc.stdout)
        # Cases the first pass flagged (the gate then measured them again; the rows below are the final ones).
        flagged = [line.split("flagged ", 1)[1] for line in proc.stdout.splitlines()
                   if line.startswith("bench-gate: flagged ")]
        rows = compare(base_hash, head_hash, factor)
        load = os.getloadavg()
        with open(out, "a") as fh:
            fh.write(json.dumps({"run": k, "exit": rc, "seconds": round(time.time() - t0, 1), "factor": factor,
                                 "loadavg": load, "first_pass_flagged": flagged, "rows": rows}) + "\n")
        print(f"noise study: run {k + 1}/{runs}: gate exit {rc}, {time.time() - t0:.0f} s, load {load[0]:.2f}")
    return 0


_GATE_ROW = re.compile(r"^\s+([\d.]+) ([+ ])\s+([\d.]+|n/a) ([+ ])\s+(\S.*)$")


def first_pass_ratios(log_path: str) -> list[dict]:
    """Per gate run in the log: the ratios of every case in the first pass (before a confirmation run replaced
    the results of the cases it flagged) and whether that pass flagged them. Read from the gate's own table
    (median and best-sample ratios), or from asv's table (median only) in logs of older gate versions."""
    runs, current, confirming = [], None, False
    for line in open(log_path, encoding="utf-8"):
        if line.startswith("bench-gate: ") and " -> " in line:
            current, confirming = {}, False
            runs.append(current)
        elif line.startswith("bench-gate: ") and "measuring them again" in line:
            confirming = True
        elif current is None or confirming:
            continue
        elif m := _GATE_ROW.match(line):
            current[m.group(5)] = {"ratio": float(m.group(1)), "best_ratio": None if m.group(3) == "n/a"
                                   else float(m.group(3)), "flagged": "+" in (m.group(2), m.group(4))}
        elif line.startswith("|") and "bench_" in line:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            mark, ratio, name = cells[0], cells[3].lstrip("~"), cells[4]
            if ratio != "n/a" and name not in current:
                current[name] = {"ratio": float(ratio), "best_ratio": None, "flagged": mark == "+"}
    return runs


def summarize(path: str) -> int:
    runs = [json.loads(line) for line in open(path) if line.strip()]
    first = first_pass_ratios(path + ".log") if os.path.exists(path + ".log") else [{} for _ in runs]
    by = defaultdict(list)
    for r, fp in zip(runs, first):
        for row in r["rows"]:
            row = dict(row, first=fp.get(row["benchmark"], {"ratio": row["ratio"], "best_ratio": None,
                                                              "flagged": False}))
            by[row["benchmark"]].append(row)
    loads = [r["loadavg"][0] for r in runs]
    print(f"{len(runs)} runs; gate exits {[r['exit'] for r in runs]}; wall time "
          f"{min(r['seconds'] for r in runs):.0f}-{max(r['seconds'] for r in runs):.0f} s; load average at the end "
          f"{min(loads):.1f}-{max(loads):.1f}; factor {runs[0]['factor']}\n")
    print("| benchmark | median (first run) | median ratio: worst slowdown / speed-up "
          "| best-sample ratio: worst slowdown / speed-up (runs) | first pass flagged | gate failed |")
    print("|---|---|---|---|---|---|")
    for name, rows in sorted(by.items()):
        ratios = [x["first"]["ratio"] for x in rows] + [x["ratio"] for x in rows]
        best = [b for x in rows for b in (x["first"].get("best_ratio"), x.get("best_ratio")) if b is not None]
        best_runs = sum(1 for x in rows if x.get("best_ratio") is not None)
        best_txt = f"{max(best):.2f} / {min(best):.2f} ({best_runs})" if best else "–"
        flagged = sum(1 for x in rows if x["first"]["flagged"])
        fails = sum(1 for x in rows if x["gate_fails"])
        base = rows[0]["base"]
        shown = f"{base / 2**20:.0f} MiB" if "peakmem" in name else _human(base)
        print(f"| `{name}` | {shown} | {max(ratios):.2f} / {min(ratios):.2f} | {best_txt} | {flagged}/{len(rows)} "
              f"| {fails}/{len(rows)} |")
    return 0


def _human(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default="noise.jsonl")
    ap.add_argument("--factor", type=float, default=1.4)
    ap.add_argument("--summarize", metavar="FILE")
    a = ap.parse_args()
    sys.exit(summarize(a.summarize) if a.summarize else run(a.runs, a.out, a.factor))
