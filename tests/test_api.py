"""The front door: ``import rfbench`` exposes one function per stage and the settings types, lazily, each with a
numpydoc docstring whose example runs (here)."""

from __future__ import annotations

import doctest
import inspect
import subprocess
import sys

import pytest

import rfbench

PUBLIC = [name for name in rfbench.__all__ if name != "__version__"]


def test_import_rfbench_and_its_names_load_no_numpy():
    code = ("import sys, rfbench; names = rfbench.__all__; "
            "print('numpy' in sys.modules, 'numba' in sys.modules, len(names))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[:2] == ["False", "False"] and int(proc.stdout.split()[2]) == len(rfbench.__all__)


def test_every_stage_has_its_function():
    for name in ("read_log", "ingest_widar", "ingest_mmfi", "ingest_files", "make_splits", "audit_split",
                 "load_split", "score_pose", "score_gesture", "verify_report", "predict"):
        assert name in PUBLIC and callable(getattr(rfbench, name))
    for name in ("PoseSettings", "GestureSettings", "BootstrapSettings", "ReportOptions", "ScoreInputs",
                 "PredictSettings", "VerifyLimits"):
        assert name in PUBLIC and inspect.isclass(getattr(rfbench, name))


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'no_such_stage'"):
        rfbench.no_such_stage  # noqa: B018


@pytest.mark.long
@pytest.mark.parametrize("name", PUBLIC)
def test_each_public_name_is_documented_with_a_running_example(name, tmp_path, monkeypatch):
    obj = getattr(rfbench, name)
    doc = inspect.getdoc(obj) or ""
    assert doc.strip(), f"rfbench.{name} has no docstring"
    sections = ("Parameters\n", "Returns\n") if inspect.isfunction(obj) else ()
    for section in sections:
        assert section in doc, f"rfbench.{name}'s docstring has no numpydoc {section.strip()} section"
    assert "Examples\n" in doc and ">>> " in doc, f"rfbench.{name}'s docstring has no example"
    monkeypatch.chdir(tmp_path)
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = finder.find(obj, name, globs={})
    assert tests and any(t.examples for t in tests)
    for t in tests:
        runner.run(t)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"rfbench.{name}'s example failed (run it with python -m doctest)"
