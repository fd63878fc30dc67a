"""The pages under docs/ are transcripts that still hold: each runs like README.md (tests/readme_runner.py's
conventions), in a fresh folder, and prints what it shows."""

from __future__ import annotations

import pytest

import readme_runner as rr

PAGES = sorted((rr.ROOT / "docs").glob("*.md"))


def test_there_are_docs_pages():
    assert {p.name for p in PAGES} >= {"metric-spec.md", "compare.md"}


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_docs_page_runs_as_written(tmp_path, page):
    ran, failures = rr.run_file(page, tmp_path)
    assert ran > 0
    assert not failures, "\n\n".join(failures)


def test_run_file_reports_a_wrong_output(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```console\n$ rfbench --version\nrfbench 0.0.0-not-this\n```\n")
    ran, failures = rr.run_file(page, tmp_path)
    assert ran == 1 and len(failures) == 1 and "printed" in failures[0]
