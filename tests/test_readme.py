"""README.md is a transcript that still holds: every example runs as written and prints what it shows.

The conventions (console and python blocks run in order in one folder, ``...`` elides, ``<!-- file: NAME -->``
and ``<!-- not-run -->`` markers) are described in ``tests/readme_runner.py`` and in the README itself.
"""

from __future__ import annotations

import pytest

import readme_runner as rr

TEXT = rr.README.read_text(encoding="utf-8")


def test_every_block_is_run_or_marked():
    unmarked = [f"line {b.line_no}: ```{b.lang}" for b in rr.blocks(TEXT)
                if b.marker is None and b.lang not in rr.RUN_LANGS]
    assert not unmarked, "README blocks neither run nor marked <!-- not-run --> / <!-- file: NAME -->: " + \
        ", ".join(unmarked)
    # Marked blocks stay few: most of the README must actually run.
    run = [b for b in rr.blocks(TEXT) if b.marker is None]
    not_run = [b for b in rr.blocks(TEXT) if b.marker == "not-run"]
    assert len(not_run) <= 5 and len(run) >= len(not_run)


def test_matcher_elides_lines_and_text():
    assert rr.matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert rr.matches(["a", "...", "d"], ["a", "d"])
    assert rr.matches(["took ... s"], ["took 3.2 s  "])
    assert not rr.matches(["a", "d"], ["a", "b", "d"])
    assert not rr.matches(["took ... s"], ["took 3.2 ms"])
    assert not rr.matches(["a"], ["a", "b"])


@pytest.mark.long
def test_readme_examples_run_as_written(tmp_path):
    ran, failures = rr.run_file(rr.README, rr.Session(tmp_path))
    assert ran >= 12
    assert not failures, "\n\n".join(failures)
