"""docs/windows.md is a transcript that still holds (run like README.md), and its options table is the settings'
own metadata."""

from __future__ import annotations

import re

import readme_runner as rr
from rfbench.datasets.windows.settings import describe, option_name, setting_fields

PAGE = rr.ROOT / "docs" / "windows.md"
TEXT = PAGE.read_text(encoding="utf-8")


def test_every_block_is_run_or_marked():
    unmarked = [f"line {b.line_no}: ```{b.lang}" for b in rr.blocks(TEXT)
                if b.marker is None and b.lang not in rr.RUN_LANGS]
    assert not unmarked, unmarked


def test_the_page_runs_as_written(tmp_path):
    ran, failures = rr.run_page(TEXT, rr.Session(tmp_path), "docs/windows.md")
    assert ran > 20
    assert not failures, "\n\n".join(failures)


def test_the_options_table_is_the_settings_metadata():
    table = dict(re.findall(r"^\| `(--[a-z-]+)` \| (.*) \|$", TEXT, re.M))
    assert table == {option_name(f): describe(f) for f in setting_fields()}
