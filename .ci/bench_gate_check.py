"""Second half of the performance gate: every gated benchmark must have been measured at HEAD.

asv's comparison marks a benchmark that fails at both commits, or is skipped (``NotImplementedError`` in
``setup``) at HEAD, as unchanged. A skip at HEAD means the benchmark no longer matches the code (a renamed
kernel, a changed signature) and would silently stop guarding anything, so the gate fails on it too.

Usage: python .ci/bench_gate_check.py HEAD_HASH REGEX   (run by .ci/bench-gate after ``asv continuous``)
"""

from __future__ import annotations

import glob
import itertools
import math
import os
import sys

from asv import config, results
from asv.benchmarks import Benchmarks


def main(head_hash: str, regex: str) -> int:
    conf = config.Config.load("asv.conf.json")
    files = glob.glob(os.path.join(conf.results_dir, "*", f"{head_hash[:8]}-*.json"))
    if not files:
        print(f"bench-gate: no asv results for {head_hash[:8]}: the benchmarks did not run at HEAD")
        return 1
    path = max(files, key=os.path.getmtime)  # the run that just finished
    res = results.Results.load(path)
    benchmarks = Benchmarks.load(conf, regex=[regex])
    problems, measured = [], 0
    for name in sorted(benchmarks):
        params = benchmarks[name]["params"]
        values = res.get_result_value(name, params) if name in res.get_all_result_keys() else None
        selection = benchmarks.benchmark_selection.get(name) or [0]
        labels = [", ".join(p) for p in itertools.product(*params)] if params else [""]
        for idx in selection:
            value = None if values is None else values[idx]
            label = f"{name}({labels[idx]})" if params else name
            if value is None:
                problems.append(f"{label}: failed at HEAD")
            elif isinstance(value, float) and math.isnan(value):
                problems.append(f"{label}: skipped at HEAD (NotImplementedError in setup)")
            else:
                measured += 1
    if problems:
        print(f"bench-gate: FAILED: {len(problems)} gated benchmark(s) not measured at HEAD:")
        for line in problems:
            print(f"  {line}")
        return 1
    print(f"bench-gate: all {measured} gated benchmark cases were measured at HEAD.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
