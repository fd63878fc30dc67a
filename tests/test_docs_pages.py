"""The pages of docs/ are transcripts that still hold, run like the README (tests/readme_runner.py).

Each page runs in a folder of its own. The pages in :data:`DEMO_PAGES` run where ``rfbench demo`` ran: the
demo runs once per session and each of them gets a copy of its ``demo-out``. docs/corpora.md runs on the two
real corpora in ../shared/conformance, reached through a ``corpora`` link in the page's folder; it is skipped
when they are absent (a plain clone)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import readme_runner as rr
from tests.conftest import conformance_path

DOCS = rr.ROOT / "docs"
PAGES = sorted(p.name for p in DOCS.glob("*.md"))


@pytest.mark.parametrize("page", PAGES)
def test_every_block_is_run_or_marked(page):
    unmarked = [f"line {b.line_no}: ```{b.lang}" for b in rr.blocks((DOCS / page).read_text(encoding="utf-8"))
                if b.marker is None and b.lang not in rr.RUN_LANGS]
    assert not unmarked, f"{page}: blocks neither run nor marked: " + ", ".join(unmarked)


#: Pages with a test of their own (they need data or set-up); every other page is run as it is.
OWN_TEST = {"corpora.md", "content-leakage.md", "predict.md", "bring-your-model.md"}

#: Pages whose examples run in the folder where ``rfbench demo`` ran (they say so).
DEMO_PAGES = {"audit.md", "compare.md", "python-api.md", "score.md", "verify.md", "robustness-suite.md"}


@pytest.fixture(scope="session")
def demo_out(tmp_path_factory):
    """One ``rfbench demo`` (standard size, as the README's) for every page that runs beside it."""
    session = rr.Session(tmp_path_factory.mktemp("demo"))
    code, text = session.run("rfbench demo")
    assert code == 0, text
    return session.cwd / "demo-out"


def test_there_are_docs_pages():
    assert set(PAGES) >= {"ingest.md", "corpora.md", "metric-spec.md", "compare.md", "verify.md"}


@pytest.mark.long
@pytest.mark.parametrize("page", [p for p in PAGES if p not in OWN_TEST])
def test_docs_page_runs_as_written(tmp_path, page, request):
    text = (DOCS / page).read_text(encoding="utf-8")
    if page in DEMO_PAGES:
        assert "where `rfbench demo`" in " ".join(text.split()), f"{page} does not say it runs beside the demo"
        shutil.copytree(request.getfixturevalue("demo_out"), tmp_path / "demo-out", symlinks=True)
    runnable = [b for b in rr.blocks((DOCS / page).read_text(encoding="utf-8"))
                if b.marker != "not-run" and (b.lang in rr.RUN_LANGS or b.marker == "file")]
    ran, failures = rr.run_file(DOCS / page, rr.Session(tmp_path))
    assert ran > 0 or not runnable
    assert not failures, "\n\n".join(failures)


@pytest.mark.long  # every real-corpus example: ingest, split, windows, predict, score and verify (about a minute)
def test_corpora_page_runs_as_written(tmp_path):
    conformance_path("gesture5x6")
    conformance_path("wiar", "distance_factor_activity_data")
    (tmp_path / "corpora").symlink_to(Path(conformance_path()).resolve())
    session = rr.Session(tmp_path)
    ran, failures = rr.run_file(DOCS / "corpora.md", session)
    assert ran >= 15
    assert not failures, "\n\n".join(failures)
    # content-leakage.md goes on from the manifests corpora.md made
    ran, failures = rr.run_file(DOCS / "content-leakage.md", session)
    assert ran >= 2
    assert not failures, "\n\n".join(failures)


def test_the_runner_sees_a_wrong_transcript(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```console\n$ rfbench ingest files nowhere --template '{a}.dat'\nerror: something else\n```\n")
    ran, failures = rr.run_file(page, rr.Session(tmp_path))
    assert ran == 1 and len(failures) == 1 and "nowhere: not a folder" in failures[0]
