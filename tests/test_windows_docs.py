"""docs/windows.md's options table is the settings' own metadata (the page itself runs in
tests/test_docs_pages.py)."""

from __future__ import annotations

import re

import readme_runner as rr
from rfbench.datasets.windows.settings import describe, option_name, setting_fields

PAGE = rr.ROOT / "docs" / "windows.md"
TEXT = PAGE.read_text(encoding="utf-8")


def test_the_options_table_is_the_settings_metadata():
    table = dict(re.findall(r"^\| `(--[a-z-]+)` \| (.*) \|$", TEXT, re.M))
    assert table == {option_name(f): describe(f) for f in setting_fields()}
