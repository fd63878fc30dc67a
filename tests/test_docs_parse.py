"""docs/parse.md is a transcript that still holds: its examples run as written (the README's conventions)."""

from __future__ import annotations

import readme_runner as rr

PAGE = rr.ROOT / "docs" / "parse.md"


def test_parse_reference_examples_run_as_written(tmp_path):
    session = rr.Session(tmp_path)
    failures, ran = [], 0
    for b in rr.blocks(PAGE.read_text(encoding="utf-8")):
        if b.marker == "not-run":
            continue
        if b.marker == "file":
            session.write(b.file, b.lines)
            continue
        assert b.lang in rr.RUN_LANGS, f"docs/parse.md line {b.line_no}: unmarked ```{b.lang} block"
        if b.lang == "python":
            session.exec_python("\n".join(b.lines), f"docs/parse.md:{b.line_no}")
            ran += 1
            continue
        steps = rr.steps(b)
        for i, step in enumerate(steps):
            code, text = session.run(step.command)
            ran += 1
            want = rr.expected_code(step, steps[i + 1] if i + 1 < len(steps) else None)
            if (want is None and code == 0) or (want is not None and code != want):
                failures.append(f"line {b.line_no}: `{step.command}` exited {code}:\n{text}")
            elif not rr.matches(step.expected, text.splitlines()):
                failures.append(f"line {b.line_no}: `{step.command}` printed:\n{text}\n--- the page shows:\n"
                                + "\n".join(step.expected))
    assert ran >= 3
    assert not failures, "\n\n".join(failures)
