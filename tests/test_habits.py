"""The project's habits (STYLE.md), each checked so that breaking one fails a test:

- Numba options are set in one place: no module outside ``rfbench/_jit.py`` writes ``fastmath=`` or ``cache=``;
- ``tests/naive.py`` is imported one way (``import naive``) and so loads as one module;
- every Numba kernel has a gated ``time_`` benchmark of its own (the convention is in benchmarks/README.md);
- ruff (pinned in constraints.txt, configured in pyproject.toml) passes, and ``make test`` runs it first.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rfbench"
JIT = PACKAGE / "_jit.py"

# -------------------------------------------------------------------------------------------------------------
# Numba options in one place
# -------------------------------------------------------------------------------------------------------------

#: Callables whose ``cache=`` is a Numba option (numba's decorators and rfbench._jit's wrappers).
NUMBA_CALLABLES = {"jit", "njit", "njit_parallel", "vectorize", "guvectorize", "cfunc", "stencil", "generated_jit",
                   "jit_module", "overload", "overload_method", "overload_attribute", "register_jitable"}
OPTIONS = ("fastmath", "cache")


def _callee(node: ast.Call) -> tuple[str, ...]:
    """The dotted name of a call's target (``numba.njit`` -> ("numba", "njit")), innermost call first."""
    f = node.func
    parts: list[str] = []
    while isinstance(f, ast.Call):
        f = f.func
    while isinstance(f, ast.Attribute):
        parts.append(f.attr)
        f = f.value
    if isinstance(f, ast.Name):
        parts.append(f.id)
    return tuple(reversed(parts))


def numba_options_set(source: str, filename: str = "<source>") -> list[str]:
    """Where ``source`` sets Numba's ``fastmath`` or ``cache`` option: ``fastmath=`` anywhere (it has no other
    meaning), ``cache=`` in a call of a Numba decorator (``numba.njit(cache=True)``, ``njit(cache=False)``),
    and either as a key of a dict literal or ``dict(...)`` (options handed on as ``**options``)."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Call):
            name = _callee(node)
            numba_call = bool(name) and (name[-1] in NUMBA_CALLABLES or name[0] == "numba")
            for kw in node.keywords:
                if kw.arg == "fastmath" or (kw.arg == "cache" and (numba_call or name == ("dict",))):
                    found.append(f"{filename}:{node.lineno}: {kw.arg}= in a call of {'.'.join(name) or '?'}")
        elif isinstance(node, ast.Dict):
            for key in node.keys:
                if isinstance(key, ast.Constant) and key.value in OPTIONS:
                    found.append(f"{filename}:{key.lineno}: {key.value!r} as a dict key (options set inline)")
    return found


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p != JIT)


def test_no_module_but_jit_sets_fastmath_or_cache():
    found = [hit for path in _modules()
             for hit in numba_options_set(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))]
    assert not found, ("Numba options are set in rfbench/_jit.py only (STYLE.md 2: compile kernels with "
                       "rfbench._jit.njit / njit_parallel; a kernel that cannot be cached says why in a comment "
                       "and gets an option there):\n  " + "\n  ".join(found))
    assert len(_modules()) > 50  # the walk saw the package


@pytest.mark.parametrize("source", [
    "from rfbench._jit import njit\n@njit(fastmath=True)\ndef f(x):\n    return x\n",
    "import numba\n@numba.njit(cache=False)\ndef f(x):\n    return x\n",
    "from numba import njit\nf = njit(cache=True, nogil=True)(lambda x: x)\n",
    "import numba\nOPTS = {'fastmath': {'contract'}}\nf = numba.njit(**OPTS)(lambda x: x)\n",
    "import numba\nf = numba.njit(**dict(cache=True))(lambda x: x)\n",
    "from numba import vectorize\n@vectorize(['f8(f8)'], fastmath=True)\ndef f(x):\n    return x\n",
])
def test_the_check_sees_every_way_of_setting_them(source):
    assert numba_options_set(source)


def test_the_check_leaves_other_code_alone():
    source = ("import functools\n@functools.lru_cache(maxsize=None)\ndef f(x):\n    return x\n"
              "def g(cache=None):\n    return load(cache=True)\n"
              "from rfbench._jit import njit\n@njit\ndef k(x):\n    return x\n@njit(inline='always')\ndef h(x):\n"
              "    return x\n")
    assert numba_options_set(source) == []


def test_jit_itself_sets_them():
    # the one place: if rfbench/_jit.py moved, the check above would pass for the wrong reason
    assert numba_options_set(JIT.read_text(encoding="utf-8"))


# -------------------------------------------------------------------------------------------------------------
# tests/naive.py: one import style, one module
# -------------------------------------------------------------------------------------------------------------

def _python_files() -> list[Path]:
    return sorted(list((ROOT / "tests").glob("*.py")) + list((ROOT / "benchmarks").glob("*.py")))


def naive_imports(source: str) -> tuple[int, list[str]]:
    """``(imports written as ``import naive``, other ways of importing tests/naive.py)`` in ``source``."""
    plain, other = 0, []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "naive" and a.asname is None:
                    plain += 1
                elif a.name in ("naive", "tests.naive"):
                    other.append(f"line {node.lineno}: import {a.name}" + (f" as {a.asname}" if a.asname else ""))
        elif isinstance(node, ast.ImportFrom):
            names = {a.name for a in node.names}
            if node.module in ("naive", "tests.naive") or (node.module == "tests" and "naive" in names) or \
                    (node.level and (node.module == "naive" or (node.module is None and "naive" in names))):
                other.append(f"line {node.lineno}: from {'.' * node.level}{node.module or ''} import "
                             + ", ".join(sorted(names)))
    return plain, other


def test_naive_is_imported_one_way():
    """Every test and benchmark writes ``import naive`` (then ``naive.f(...)``). ``from tests.naive import f``
    would load the same file a second time as the module ``tests.naive``: two copies, two sets of globals."""
    bad, users = [], []
    for path in _python_files():
        plain, other = naive_imports(path.read_text(encoding="utf-8"))
        bad += [f"{path.relative_to(ROOT)} {o}" for o in other]
        if plain:
            users.append(path)
    assert not bad, "write `import naive` (then naive.f(...)) instead of:\n  " + "\n  ".join(bad)
    assert len(users) >= 15, users  # the twins are used, and the walk found them


@pytest.mark.parametrize("source", ["from tests.naive import naive_windows\n", "import tests.naive\n",
                                    "from tests import naive\n", "from naive import naive_windows\n",
                                    "import naive as nv\n"])
def test_the_naive_check_sees_other_styles(source):
    assert naive_imports(source)[1]


_LOAD_ALL = r"""
import ast, json, sys
from pathlib import Path
root = Path(sys.argv[1])
sys.path[:0] = [str(root / "tests"), str(root)]  # as pytest runs the suite: rootdir conftest, pythonpath "."
import pytest
for name in sys.argv[2:]:
    try:
        __import__(name)
    except pytest.skip.Exception:
        pass
naive_file = (root / "tests" / "naive.py").resolve()
print(json.dumps(sorted(n for n, m in list(sys.modules.items())
                        if getattr(m, "__file__", None) and Path(m.__file__).resolve() == naive_file)))
"""


def test_naive_loads_as_one_module():
    """Import every test module that uses the twins, in one interpreter (as one pytest session does): the file
    tests/naive.py must be in ``sys.modules`` once, as ``naive``."""
    users = [p.stem for p in sorted((ROOT / "tests").glob("test_*.py"))
             if "naive" in p.read_text(encoding="utf-8") and p.stem != "test_habits"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", _LOAD_ALL, str(ROOT), *users], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == ["naive"], proc.stdout


# -------------------------------------------------------------------------------------------------------------
# every Numba kernel has a gated benchmark of its own
# -------------------------------------------------------------------------------------------------------------

BENCHMARKS = ROOT / "benchmarks"
GATE = ROOT / ".ci" / "bench-gate"
#: Where a new kernel's benchmark most likely belongs, by rfbench sub-package (only a hint in the message).
SUITE_OF = {"io": "bench_parse.py", "csi": "bench_csi.py", "metrics": "bench_metrics.py", "nn": "bench_conv.py",
            "train": "bench_conv.py", "protocols": "bench_split.py", "datasets": "bench_split.py"}


def compiled_kernels() -> dict:
    """Every function compiled by Numba in an rfbench module (``rfbench._jit``'s njit/njit_parallel, or anything
    else that makes a Numba dispatcher), found by importing every module and looking at its globals:
    ``{"rfbench.pkg.module.name": dispatcher}``, each under the module that defines it."""
    import importlib
    import pkgutil

    from numba.core.dispatcher import Dispatcher

    import rfbench

    found = {}
    for info in pkgutil.walk_packages(rfbench.__path__, "rfbench."):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if isinstance(obj, Dispatcher) and obj.py_func.__module__ == module.__name__:
                found[f"{module.__name__}.{obj.py_func.__qualname__}"] = obj
    return found


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def kernel_callers(kernels) -> dict[str, set[str]]:
    """For each kernel, where the rfbench sources refer to it by name (a call, an attribute ``_k.kernel``, or the
    function handed on): the qualified names of the kernels whose bodies refer to it, and ``"python"`` for
    every reference from plain Python code. By short name, so a reference is never missed (a same-named
    variable elsewhere counts as a Python reference: conservative)."""
    by_short: dict[str, list[str]] = {}
    for name in kernels:
        by_short.setdefault(name.rsplit(".", 1)[1], []).append(name)
    callers: dict[str, set[str]] = {name: set() for name in kernels}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))

        def visit(node, enclosing):
            for child in ast.iter_child_nodes(node):
                inner = enclosing
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and enclosing is None:
                    inner = f"{module}.{child.name}"  # noqa: B023 (visit runs inside this iteration)
                ref = child.id if isinstance(child, ast.Name) else (
                    child.attr if isinstance(child, ast.Attribute) else None)
                for target in by_short.get(ref, ()):
                    if inner != target:
                        callers[target].add(inner if inner in kernels else "python")
                visit(child, inner)

        visit(tree, None)
    return callers


def declared_benchmarks() -> dict[str, list[str]]:
    """The ``KERNELS`` declarations of every benchmarks/bench_*.py: kernel -> ["suite.Class.time_method", ...]."""
    out: dict[str, list[str]] = {}
    for path in sorted(BENCHMARKS.glob("bench_*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == "KERNELS" for t in targets):
                    for kernel, bench in ast.literal_eval(node.value).items():
                        out.setdefault(kernel, []).append(f"{path.stem}.{bench}")
    return out


def _methods(suite: str) -> dict[str, set[str]]:
    tree = ast.parse((BENCHMARKS / f"{suite}.py").read_text(encoding="utf-8"))
    return {c.name: {f.name for f in c.body if isinstance(f, ast.FunctionDef)}
            for c in tree.body if isinstance(c, ast.ClassDef)}


def gate_excludes() -> list[str]:
    """The regular expressions of ``EXCLUDE`` in .ci/bench-gate (benchmarks the gate does not run)."""
    import re

    text = GATE.read_text(encoding="utf-8")
    block = text[text.index("EXCLUDE=("):]
    block = block[:block.index("\n)")]
    out = []
    for single, double in re.findall(r"'([^']*)'|\"([^\"]*)\"", block):
        out.append(single or double.replace("\\\\", "\\"))
    return out


def suite_for(kernel: str) -> str:
    """The benchmark file a kernel's benchmark most likely belongs in: an existing bench_<name>.py named like
    one of its module's parts (most specific first: rfbench.datasets.windows.features -> bench_windows.py),
    else the suite of its sub-package."""
    parts = kernel.split(".")[1:-1]
    for part in reversed(parts):
        if (BENCHMARKS / f"bench_{part}.py").is_file():
            return f"bench_{part}.py"
    return SUITE_OF.get(parts[0], f"bench_{parts[0]}.py")


def benchmark_problems(kernels, callers, declared, excludes) -> list[str]:
    """Every way the kernels and the benchmarks' KERNELS declarations disagree, each with what to do."""
    import re

    problems = []
    for kernel in sorted(kernels):
        if "python" not in callers[kernel] and callers[kernel]:
            continue  # called only from other kernels: timed inside theirs (benchmarks/README.md)
        if kernel in declared:
            continue
        short = kernel.rsplit(".", 1)[1].lstrip("_")
        suite = suite_for(kernel)
        unused = "" if callers[kernel] else " (nothing calls it: remove it, or benchmark it)"
        problems.append(
            f"{kernel} has no benchmark of its own{unused}. Add a gated time_ benchmark that times this kernel alone "
            f"to benchmarks/{suite} (for example a method time_{short} of a class whose setup records the "
            f"kernel's call from its public function with benchmarks.common.record_kernel_calls, as bench_csi.py does) "
            f"and name it in that file's KERNELS: \"{kernel}\": \"<Class>.time_{short}\",")
    for kernel, benches in sorted(declared.items()):
        if kernel not in kernels:
            problems.append(f"KERNELS in benchmarks/{benches[0].split('.')[0]}.py names {kernel}, which is not a Numba "
                            f"kernel of rfbench: update or remove the entry")
        for bench in benches:
            suite, cls, method = bench.split(".")
            if method not in _methods(suite).get(cls, ()) or not method.startswith("time_"):
                problems.append(f"KERNELS in benchmarks/{suite}.py maps {kernel} to {cls}.{method}, which is not a "
                                f"time_ method of a class {cls} there")
            hit = [p for p in excludes if re.search(p, bench)]
            if hit:
                problems.append(f"{bench} (the benchmark of {kernel}) is excluded from the gate by {hit[0]!r} "
                                f"in .ci/bench-gate, so a slowdown of the kernel would pass")
    return problems


@pytest.fixture(scope="module")
def kernels():
    import numba

    if numba.config.DISABLE_JIT:
        pytest.skip("NUMBA_DISABLE_JIT=1: there are no compiled kernels to find")
    return compiled_kernels()


def test_the_walk_finds_the_kernels(kernels):
    # Kernels of every layer of the pipeline, whichever decorator made them (njit, njit_parallel, inline ones).
    for name in ("rfbench.metrics.kernels._argmax_rank", "rfbench.metrics.kernels._pose_sums",
                 "rfbench.io.intel5300._scan", "rfbench.io.intel5300._lane_of", "rfbench.nn.conv._conv2d_forward",
                 "rfbench.protocols._sweep.overlap_sweep"):
        assert name in kernels
    assert len(kernels) >= 50


def test_kernel_callers_tell_python_calls_from_kernel_calls(kernels):
    callers = kernel_callers(kernels)
    # _row_of runs only inside the metric kernels; _argmax_rank is called from classify.py; _objective both
    assert callers["rfbench.metrics.kernels._row_of"] == {"rfbench.metrics.kernels._pose_sums",
                                                         "rfbench.metrics.kernels._aligned_error_sums",
                                                         "rfbench.metrics.kernels._class_sums"}
    assert callers["rfbench.metrics.kernels._argmax_rank"] == {"python"}
    assert callers["rfbench.train.adapt._objective"] == {"python", "rfbench.train.adapt._fd_gradient"}


def test_every_kernel_has_a_gated_benchmark_of_its_own(kernels):
    """Each kernel called from Python code is timed alone by a gated time_ benchmark named in a KERNELS dict
    of benchmarks/bench_*.py (benchmarks/README.md, "One kernel, one benchmark"); a kernel called only from
    other kernels is timed inside theirs. A kernel measured only as part of a larger call can double in cost
    and move that call's benchmark by less than the gate's factor (_argmax_rank did: 1.38x)."""
    problems = benchmark_problems(kernels, kernel_callers(kernels), declared_benchmarks(), gate_excludes())
    assert not problems, "\n".join(problems)


def test_the_benchmark_check_says_what_to_add(kernels):
    callers = kernel_callers(kernels)
    declared = declared_benchmarks()
    without = {k: v for k, v in declared.items() if k != "rfbench.metrics.kernels._argmax_rank"}
    before = set(benchmark_problems(kernels, callers, declared, gate_excludes()))
    problems = [p for p in benchmark_problems(kernels, callers, without, gate_excludes()) if p not in before]
    assert problems == [
        "rfbench.metrics.kernels._argmax_rank has no benchmark of its own. Add a gated time_ benchmark that times "
        "this kernel alone to benchmarks/bench_metrics.py (for example a method time_argmax_rank of a class whose "
        "setup records the kernel's call from its public function with benchmarks.common.record_kernel_calls, as "
        "bench_csi.py does) and name it in that file's KERNELS: \"rfbench.metrics.kernels._argmax_rank\": "
        "\"<Class>.time_argmax_rank\","]
    stale = dict(declared, **{"rfbench.gone._kernel": ["bench_csi.SubcarrierKernels.time_interp_rows"]})
    assert any("rfbench.gone._kernel, which is not a Numba kernel" in p
               for p in benchmark_problems(kernels, callers, stale, gate_excludes()))
    wrong = dict(declared, **{"rfbench.csi.subcarrier._interp_rows": ["bench_csi.SubcarrierKernels.track_x"]})
    assert any("not a time_ method" in p for p in benchmark_problems(kernels, callers, wrong, gate_excludes()))
    excluded = benchmark_problems(kernels, callers, declared, gate_excludes() + ["time_interp_rows"])
    assert any("excluded from the gate" in p for p in excluded)


def test_the_suite_hint_prefers_a_suite_named_like_the_module():
    assert suite_for("rfbench.metrics.classify._k") == "bench_classify.py"
    assert suite_for("rfbench.io.intel5300._k") == "bench_parse.py"
    assert suite_for("rfbench.csi.subcarrier._k") == "bench_csi.py"
    assert suite_for("rfbench.nowhere.module._k") == "bench_nowhere.py"


def test_gate_excludes_are_read():
    assert "time_csiread" in gate_excludes() and r"Ingest\.time_ingest\('ci', 2\)" in gate_excludes()


# -------------------------------------------------------------------------------------------------------------
# Lint: ruff, pinned, configured once, run by make test
# -------------------------------------------------------------------------------------------------------------


def test_ruff_is_pinned_configured_and_run_by_make_test():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert any(req.startswith("ruff") for req in project["project"]["optional-dependencies"]["dev"])
    assert any(line.startswith("ruff==") for line in (ROOT / "constraints.txt").read_text().splitlines())
    lint = project["tool"]["ruff"]
    assert lint["line-length"] == 120 and {"E", "F", "I", "B"} <= set(lint["lint"]["select"])
    make = (ROOT / "Makefile").read_text()
    recipe = make[make.index("\ntest:"):].split("\n\n")[0]
    assert "ruff check ." in recipe and recipe.index("ruff check") < recipe.index("pytest")


def test_the_tree_passes_ruff():
    ruff = Path(sys.executable).with_name("ruff")
    if not ruff.exists():
        pytest.skip("ruff is not installed beside this Python (make test installs it)")
    proc = subprocess.run([str(ruff), "check", "--no-cache", "--output-format", "concise", "."], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
