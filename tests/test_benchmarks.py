"""The asv set-up the performance gate relies on (benchmarks/README.md), checked cheaply and without timing
anything (timing assertions do not belong in pytest, DESIGN.md §9):

- ``asv.conf.json`` is valid JSON with what a clean clone needs;
- every ``benchmarks/bench_*.py`` imports and lists benchmarks, the way asv discovers them;
- the CI-sized parameters (the default) are a subset of the ``RFBENCH_BENCH_LARGE=1`` ones, and
  ``RFBENCH_BENCH_TIMER=cpu`` (set by the gate) makes every ``time_*`` count CPU time;
- on a commit without the feature (here: no importable ``rfbench`` at all) every benchmark's setup skips
  with ``NotImplementedError`` instead of failing;
- ``.ci/bench-gate`` compares HEAD with the base recorded in ``.ci/bench-base`` and refuses, in one line and
  with exit 2, a base that is missing, unknown or not an ancestor of HEAD; the committed base is an ancestor;
- every ratio floor of ``benchmarks/floors.toml`` names a ``track_`` benchmark and is quoted in the docs.
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


def _gate_repo(tmp_path):
    """A git repository holding the gate script, with two commits on main and one on a side branch."""
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    (tmp_path / ".ci").mkdir()
    shutil.copy(ROOT / ".ci" / "bench-gate", tmp_path / ".ci" / "bench-gate")
    ident = ["-c", "user.name=t", "-c", "user.email=t@t"]

    def run(*args):
        return subprocess.run([git, *ident, *args], cwd=tmp_path, check=True, capture_output=True,
                              text=True).stdout.strip()

    run("init", "-q", "-b", "main")
    run("add", ".")
    run("commit", "-q", "-m", "first")
    first = run("rev-parse", "HEAD")
    run("checkout", "-q", "-b", "side")
    run("commit", "-q", "--allow-empty", "-m", "elsewhere")
    side = run("rev-parse", "HEAD")
    run("checkout", "-q", "main")
    run("commit", "-q", "--allow-empty", "-m", "second")
    return run, first, side


def _gate(tmp_path, *args):
    # ASV points nowhere: every case below must stop before the gate would need asv.
    return subprocess.run(["bash", ".ci/bench-gate", *args], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "ASV": str(tmp_path / "no-asv")}, timeout=60)


def test_gate_refuses_a_base_that_is_not_an_ancestor_of_head(tmp_path):
    run, first, side = _gate_repo(tmp_path)
    (tmp_path / ".ci" / "bench-base").write_text(f"# the base\n{side}\n")
    proc = _gate(tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith(f"bench-gate: error: base {side} ({side[:8]}, from .ci/bench-base) is not an ancestor of "
                           "HEAD")
    proc = _gate(tmp_path, "side", "HEAD")  # given on the command line: the same rule
    assert proc.returncode == 2 and "is not an ancestor of HEAD" in proc.stderr


@pytest.mark.parametrize("content, words", [
    (None, ".ci/bench-base is missing: record the commit this work starts from"),
    ("# nothing here\n\n", ".ci/bench-base names no commit"),
    ("0123456789abcdef0123456789abcdef01234567\n", "is not a commit of this repository"),
])
def test_gate_refuses_a_missing_or_unknown_base(tmp_path, content, words):
    _gate_repo(tmp_path)
    if content is not None:
        (tmp_path / ".ci" / "bench-base").write_text(content)
    proc = _gate(tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith("bench-gate: error: ") and words in line


def test_gate_reads_its_base_from_the_file_and_counts_the_commits_since(tmp_path):
    run, first, side = _gate_repo(tmp_path)
    head = run("rev-parse", "HEAD")
    (tmp_path / ".ci" / "bench-base").write_text(f"{head}\n")
    proc = _gate(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"from .ci/bench-base) -> HEAD ({head[:8]}): 0 commit(s)" in proc.stdout
    assert "HEAD is the base: no commit to compare, passing." in proc.stdout
    # an ancestor: the gate goes on to asv, which this environment does not have
    (tmp_path / ".ci" / "bench-base").write_text(f"{first}\n")
    proc = _gate(tmp_path)
    assert proc.returncode != 0
    assert f"bench-gate: {first} ({first[:8]}, from .ci/bench-base) -> HEAD ({head[:8]}): 1 commit(s)" in proc.stdout


def _fake_tools(tmp_path, floors_status=0, measured_status=0):
    """An ``asv`` and a ``python`` beside it that log their arguments (one call a line) and succeed, except the
    gate helper's ``measured`` and ``floors`` verdicts, which exit with the statuses given."""
    tools = tmp_path / "tools"
    tools.mkdir()
    log = tmp_path / "calls.log"
    (tools / "asv").write_text(f'#!/bin/sh\necho "asv $*" >> {log}\n')
    (tools / "python").write_text(f'#!/bin/sh\necho "python $*" >> {log}\ncase "$2" in\n'
                                  f'  measured) exit {measured_status};;\n  floors) exit {floors_status};;\nesac\n')
    for tool in ("asv", "python"):
        (tools / tool).chmod(0o755)
    return tools / "asv", log


@pytest.mark.parametrize("changed, compared", [
    (None, False), ("docs/notes.md", False), ("tests/test_x.py", False),
    ("rfbench/kernel.py", True), ("pyproject.toml", True),
])
def test_gate_compares_only_when_the_installed_code_changed(tmp_path, changed, compared):
    """asv builds each commit's wheel from rfbench/ and pyproject.toml: a submission that changed neither would
    time the same code twice, so the gate runs the gated benchmarks once at HEAD (each must run) and the floors,
    instead of a comparison that could only find noise; any change there gets the full comparison."""
    run, first, side = _gate_repo(tmp_path)
    if changed is not None:
        (tmp_path / changed).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / changed).write_text("x = 1\n")
        run("add", changed)
        run("commit", "-q", "-m", "a change")
    (tmp_path / ".ci" / "bench-base").write_text(f"{first}\n")
    asv, log = _fake_tools(tmp_path)
    proc = subprocess.run(["bash", ".ci/bench-gate"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "ASV": str(asv)}, timeout=60)
    calls = log.read_text().splitlines()
    asv_calls = [c.split()[1] for c in calls if c.startswith("asv ")]
    if compared:
        assert "continuous" in asv_calls, calls
        assert "nothing is compared" not in proc.stdout
    else:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "continuous" not in asv_calls, calls
        assert "nothing is compared" in proc.stdout
        assert proc.stdout.rstrip().endswith("every ratio above its floor).")
        gated = [c for c in calls if c.startswith("asv run ") and "--set-commit-hash" in c and "time|timeraw|peakmem"
                 in c]
        assert len(gated) == 1 and "--quick" in gated[0], calls
        assert any(c.startswith("python .ci/bench_gate_check.py measured ") for c in calls), calls
        assert any(c.startswith("python .ci/bench_gate_check.py floors ") for c in calls), calls


@pytest.mark.parametrize("measured_status, floors_status", [(1, 0), (0, 1)])
def test_gate_without_a_comparison_still_fails_on_a_case_that_does_not_run_or_a_floor(tmp_path, measured_status,
                                                                                      floors_status):
    run, first, side = _gate_repo(tmp_path)
    (tmp_path / ".ci" / "bench-base").write_text(f"{first}\n")
    asv, log = _fake_tools(tmp_path, floors_status=floors_status, measured_status=measured_status)
    proc = subprocess.run(["bash", ".ci/bench-gate"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "ASV": str(asv)}, timeout=60)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "nothing is compared" in proc.stdout and "passed" not in proc.stdout


def test_the_committed_base_is_an_ancestor_of_this_checkout():
    """.ci/bench-base names a commit of this history (CI would refuse it otherwise)."""
    git = shutil.which("git")
    base_file = ROOT / ".ci" / "bench-base"
    lines = [x.split("#")[0].strip() for x in base_file.read_text().splitlines()]
    base = next(x for x in lines if x)
    assert len(base) == 40 and all(c in "0123456789abcdef" for c in base), base
    if git is None or subprocess.run([git, "-C", str(ROOT), "rev-parse", "--git-dir"], capture_output=True).returncode:
        pytest.skip("not a git checkout")
    known = subprocess.run([git, "-C", str(ROOT), "cat-file", "-e", f"{base}^{{commit}}"], capture_output=True)
    if known.returncode:
        pytest.skip(f"{base[:8]} is not in this clone (a shallow one)")
    proc = subprocess.run([git, "-C", str(ROOT), "merge-base", "--is-ancestor", base, "HEAD"])
    assert proc.returncode == 0, f".ci/bench-base ({base[:8]}) is not an ancestor of HEAD: run make bench-base"


def test_every_floor_names_a_track_benchmark_and_is_documented():
    """benchmarks/floors.toml: each entry a track_ method of a class in that suite, each floor quoted (with the
    benchmark) in docs/performance.md, so the documented floor is the one CI enforces."""
    import ast

    import tomllib

    sys.path.insert(0, str(ROOT / ".ci"))
    try:
        import bench_gate_check
    finally:
        sys.path.remove(str(ROOT / ".ci"))
    floors = bench_gate_check.load_floors(str(ROOT / "benchmarks" / "floors.toml"))
    assert floors == {k: float(v) for k, v in
                      tomllib.loads((ROOT / "benchmarks" / "floors.toml").read_text())["floors"].items()}
    page = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    for name, floor in floors.items():
        suite, cls, method = name.split(".")
        assert method.startswith("track_"), name
        tree = ast.parse((ROOT / "benchmarks" / f"{suite}.py").read_text(encoding="utf-8"))
        methods = {f.name for c in tree.body if isinstance(c, ast.ClassDef) and c.name == cls for f in c.body
                   if isinstance(f, ast.FunctionDef)}
        assert method in methods, f"{name}: no such benchmark"
        rows = [line for line in page.splitlines() if f"`{cls}.{method}`" in line and f"| {floor:g} |" in line]
        assert rows, f"docs/performance.md must have a table row with `{cls}.{method}` and its floor | {floor:g} |"
    regex = bench_gate_check.floor_regex(floors)
    import re

    assert re.search(regex, "bench_parse.VersusCsiread.track_speedup_vs_csiread('sample_0x5')")
    assert re.search(regex, "bench_parse.VersusCsiread.track_speedup_vs_csiread")
    assert not re.search(regex, "bench_parse.VersusCsiread.track_speedup_vs_csiread_single_call('sample_0x5')")
