"""The project's habits (STYLE.md), each checked so that breaking one fails a test:

- Numba options are set in one place: no module outside ``rfbench/_jit.py`` writes ``fastmath=`` or ``cache=``;
- ``tests/naive.py`` is imported one way (``import naive``) and so loads as one module;
- every Numba kernel has a gated ``time_`` benchmark of its own (the convention is in benchmarks/README.md).
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
