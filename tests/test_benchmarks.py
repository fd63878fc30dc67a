"""The asv set-up the performance gate relies on (benchmarks/README.md), checked cheaply and without timing
anything (timing assertions do not belong in pytest, DESIGN.md §9):

- ``asv.conf.json`` is valid JSON with what a clean clone needs;
- every ``benchmarks/bench_*.py`` imports and lists benchmarks, the way asv discovers them;
- the CI-sized parameters (the default) are a subset of the ``RFBENCH_BENCH_LARGE=1`` ones, and
  ``RFBENCH_BENCH_TIMER=cpu`` (set by the gate) makes every ``time_*`` count CPU time;
- on a commit without the feature (here: no importable ``rfbench`` at all) every benchmark's setup skips
  with ``NotImplementedError`` instead of failing;
- ``.ci/bench-gate`` passes with a clear message on a first commit, which has no predecessor.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("asv_runner")

ROOT = Path(__file__).resolve().parents[1]
SUITES = sorted(p.stem for p in (ROOT / "benchmarks").glob("bench_*.py"))

# Benchmarks whose setup does not touch rfbench at all (they measure the machine), so they run anywhere.
NO_RFBENCH = ("bench_split.TwoThreadControl.",)

_LIST = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from asv_runner.discovery import disc_benchmarks
out = {}
for b in disc_benchmarks(sys.argv[1] + "/benchmarks"):
    out[b.name] = {"type": b.type, "params": b.params,
                   "cpu_timer": getattr(b, "timer", None) is time.process_time}
print(json.dumps(out))
"""

_SETUP_WITHOUT_RFBENCH = r"""
import importlib.abc, itertools, json, sys
sys.path.insert(0, sys.argv[1])


class NoRfbench(importlib.abc.MetaPathFinder):
    # First on the meta path, ahead of an editable install's own finder: every rfbench import fails.
    def find_spec(self, name, path=None, target=None):
        if name == "rfbench" or name.startswith("rfbench."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NoRfbench())
from asv_runner.discovery import disc_benchmarks
out = {}
for b in disc_benchmarks(sys.argv[1] + "/benchmarks"):
    try:
        cache = b.do_setup_cache()  # as asv's runner does: once, then passed to setup
    except Exception as exc:
        out[b.name] = f"setup_cache error: {type(exc).__name__}: {exc}"
        continue
    n = len(list(itertools.product(*b._params))) if b._params else 1
    for i in range(n):
        b.set_cache(cache)
        if b._params:
            b.set_param_idx(i)
        try:
            out[f"{b.name}[{i}]"] = "skipped" if b.do_setup() else "ran"
        except Exception as exc:
            out[f"{b.name}[{i}]"] = f"error: {type(exc).__name__}: {exc}"
print(json.dumps(out))
"""


def _run(script: str, large: bool, cwd: Path, cpu_timer: bool = False) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("RFBENCH_BENCH_LARGE", "RFBENCH_BENCH_TIMER")}
    if large:
        env["RFBENCH_BENCH_LARGE"] = "1"
    if cpu_timer:
        env["RFBENCH_BENCH_TIMER"] = "cpu"
    env.pop("PYTHONPATH", None)  # the benchmarks import rfbench only through the path given below
    proc = subprocess.run([sys.executable, "-c", script, str(ROOT)], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def listings(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("asv-list")
    return {"ci": _run(_LIST, False, cwd), "large": _run(_LIST, True, cwd), "gate": _run(_LIST, False, cwd, True)}


def test_asv_conf_is_valid_and_self_contained():
    conf = json.loads((ROOT / "asv.conf.json").read_text())
    for key in ("version", "project", "repo", "dvcs", "environment_type", "pythons", "build_command",
                "install_command", "benchmark_dir", "env_dir", "results_dir", "html_dir", "branches"):
        assert key in conf, key
    assert conf["repo"] == "." and conf["dvcs"] == "git" and conf["environment_type"] == "virtualenv"
    assert conf["benchmark_dir"] == "benchmarks"
    # Dependencies come from the package index, pinned by the project's own constraints file.
    assert any("-c {conf_dir}/constraints.txt" in c for c in conf["install_command"])
    assert all(v for v in conf["matrix"]["req"].values()), "build requirements in the asv environment are pinned"
    # Results, environments and the HTML report stay out of git.
    for key in ("env_dir", "results_dir", "html_dir"):
        assert conf[key].startswith(".asv/"), key
    assert ".asv/" in (ROOT / ".gitignore").read_text().splitlines()


def test_every_suite_imports_and_lists_benchmarks(listings):
    assert SUITES, "no benchmarks/bench_*.py found"
    for mode, names in listings.items():
        for suite in SUITES:
            mine = [n for n in names if n.startswith(suite + ".")]
            assert mine, f"{suite} lists no benchmark ({mode} sizes)"
        kinds = {v["type"] for v in names.values()}
        assert kinds <= {"time", "peakmemory", "track", "memory"}, kinds


def test_gate_times_cpu_and_local_runs_wall_clock(listings):
    # timeraw_* run in a subprocess of their own and keep asv's wall clock (they have no timer attribute).
    timed = {n: v for n, v in listings["gate"].items() if v["type"] == "time" and ".timeraw_" not in n}
    assert timed
    assert [n for n, v in timed.items() if not v["cpu_timer"]] == []
    assert [n for n, v in listings["ci"].items() if v["cpu_timer"]] == []


def test_ci_sizes_are_a_subset_of_the_large_ones(listings):
    ci, large = listings["ci"], listings["large"]
    assert set(ci) <= set(large)
    grew = set()
    for name, spec in ci.items():
        ci_params, large_params = spec["params"], large[name]["params"]
        assert len(ci_params) == len(large_params), name
        for a, b in zip(ci_params, large_params):
            assert set(a) <= set(b), (name, a, b)
        if ci_params != large_params:
            grew.add(name.split(".")[0])
    # Suites with sizes too large for CI add them only with RFBENCH_BENCH_LARGE=1.
    assert {"bench_parse", "bench_metrics", "bench_split", "bench_conv"} <= grew, grew


def test_benchmarks_skip_on_a_commit_without_the_feature(tmp_path):
    outcome = _run(_SETUP_WITHOUT_RFBENCH, False, tmp_path)
    errors = {k: v for k, v in outcome.items() if v.startswith(("error", "setup_cache"))}
    assert not errors, errors
    ran = [k for k, v in outcome.items() if v == "ran" and not k.startswith(NO_RFBENCH)]
    assert not ran, f"these set up without rfbench, so they cannot measure it: {ran}"
    assert sum(v == "skipped" for v in outcome.values()) > 30


def test_gate_passes_on_a_first_commit(tmp_path):
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    (tmp_path / ".ci").mkdir()
    shutil.copy(ROOT / ".ci" / "bench-gate", tmp_path / ".ci" / "bench-gate")
    ident = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([git, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([git, "add", "."], cwd=tmp_path, check=True)
    subprocess.run([git, *ident, "commit", "-q", "-m", "first"], cwd=tmp_path, check=True)
    # ASV points nowhere: the gate must stop before it would need asv.
    proc = subprocess.run(["bash", ".ci/bench-gate"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "ASV": str(tmp_path / "no-asv")}, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no performance comparison" in proc.stdout
