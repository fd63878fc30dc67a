"""A stop signal whose interrupt Python ignores — raised while a ``__del__`` or a weakref callback runs (an import's
module lock has one) — still ends the job as signalled: ``rfbench generate widar`` under SIGTERM once went on to
write its whole tree, printed the ignored exception's traceback, and exited 0."""

from __future__ import annotations

import signal
import sys

import pytest

from rfbench.commands._progress import Signalled, signals_as_interrupt


class _SignalsInDel:
    def __del__(self):
        signal.raise_signal(signal.SIGTERM)
        for _ in range(100):  # the handler runs at a bytecode boundary in here: its exception is ignored
            pass


def test_an_interrupt_python_ignores_is_raised_when_the_job_ends(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)  # what Python calls with an exception it ignores
    done = []
    with pytest.raises(Signalled) as caught:
        with signals_as_interrupt():
            _SignalsInDel()  # deleted at once
            done.append(True)  # the job went on
    assert caught.value.signum == signal.SIGTERM and done == [True]
    assert seen == []  # the ignored interrupt is not reported (it was printed as a traceback)
    assert sys.unraisablehook == seen.append  # and the hook is put back


def test_other_ignored_exceptions_still_reach_the_hook(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)

    class Fails:
        def __del__(self):
            raise ValueError("in __del__")

    with signals_as_interrupt():
        Fails()
    assert [type(u.exc_value) for u in seen] == [ValueError]
