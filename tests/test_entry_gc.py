"""A command runs with the collector's thresholds of :data:`rfbench._entry.GC_THRESHOLDS`: at Python's default
(a young collection every 700 allocations) the parent of ``rfbench windows`` on a 43,350-recording BVP split spent
0.25 s more planning its rows, collecting a manifest's million objects again and again (numbers in the constant's
comment)."""

from __future__ import annotations

import gc
import sys

import pytest

from rfbench import _entry


def test_a_command_runs_with_rfbench_s_collector_thresholds(monkeypatch, capsys):
    for name in _entry.CODE_ENV:  # (else main() would start this test process again, isolated)
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(sys, "argv", ["rfbench", "--help"])
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        with pytest.raises(SystemExit) as ended:
            _entry.main()
        assert ended.value.code == 0
        assert gc.get_threshold() == _entry.GC_THRESHOLDS
        assert _entry.GC_THRESHOLDS[0] >= 10_000
    finally:
        gc.set_threshold(*before)
    assert "Usage" in capsys.readouterr().out
