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


def test_readme_examples_run_as_written(tmp_path):
    session = rr.Session(tmp_path)
    failures = []
    ran = 0
    for b in rr.blocks(TEXT):
        if b.marker == "not-run":
            continue
        if b.marker == "file":
            session.write(b.file, b.lines)
            continue
        if b.lang == "python":
            try:
                session.exec_python("\n".join(b.lines), f"README.md:{b.line_no}")
            except Exception as exc:  # report every failing example, not only the first
                failures.append(f"python block at line {b.line_no}: {exc.__class__.__name__}: {exc}")
            ran += 1
            continue
        if b.lang != "console":
            continue
        steps = rr.steps(b)
        for i, step in enumerate(steps):
            code, text = session.run(step.command)
            ran += 1
            want = rr.expected_code(step, steps[i + 1] if i + 1 < len(steps) else None)
            if (want is None and code == 0) or (want is not None and code != want):
                failures.append(f"line {b.line_no}: `{step.command}` exited {code}, expected "
                                f"{'non-zero' if want is None else want}:\n{text}")
            elif not rr.matches(step.expected, text.splitlines()):
                failures.append(f"line {b.line_no}: `{step.command}` printed:\n{text}\n--- the README shows:\n"
                                + "\n".join(step.expected))
    assert ran >= 12
    assert not failures, "\n\n".join(failures)
