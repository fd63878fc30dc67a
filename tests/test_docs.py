"""Every command is discoverable, has help text, and has its reference page in docs/, linked from README.md
(sqlite-utils' test_docs)."""

from __future__ import annotations

import re

import pytest

import readme_runner as rr
from rfbench.cli import app

README = rr.README.read_text(encoding="utf-8")


def _commands():
    """(path, click command) for every command and group of the Typer app, discovered, not listed by hand."""
    import typer.main

    root = typer.main.get_command(app)
    out = []

    def walk(cmd, path):
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            out.append((path + [name], sub))
            walk(sub, path + [name])

    walk(root, [])
    return out


COMMANDS = _commands()


def test_the_app_has_every_pipeline_command():
    top = {tuple(p) for p, _ in COMMANDS if len(p) == 1}
    for name in ("parse", "ingest", "split", "audit", "score", "verify", "proof", "adapt", "config", "demo"):
        assert (name,) in top
    assert ("ingest", "widar") in {tuple(p) for p, _ in COMMANDS}


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=[" ".join(p) for p, _ in COMMANDS])
def test_help_exits_0_with_help_text(runner, path):
    cmd = dict((tuple(p), c) for p, c in COMMANDS)[tuple(path)]
    assert (cmd.help or "").strip(), f"rfbench {' '.join(path)} has no help text"
    for flag in ("--help", "-h"):
        result = runner.invoke(app, path + [flag])
        assert result.exit_code == 0, result.output
        assert "Usage" in result.output
        first = cmd.help.strip().split("\n")[0].split(".")[0][:40]
        assert " ".join(first.split()[:4]) in " ".join(result.output.split()), result.output


#: Commands whose reference page has another name (docs/robustness.md is the page on bad input).
PAGE_OF = {"robustness": "robustness-suite"}


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_command_has_its_docs_page(path):
    top = path[0]
    name = PAGE_OF.get(top, top)
    page = rr.ROOT / "docs" / f"{name}.md"
    assert page.exists(), f"docs/{name}.md, the reference of rfbench {top}, is missing"
    text = page.read_text(encoding="utf-8")
    assert text.startswith(f"# rfbench {top}"), f"docs/{name}.md does not start with '# rfbench {top}'"
    assert f"rfbench {' '.join(path)}" in text, f"docs/{name}.md never shows rfbench {' '.join(path)}"
    assert f"](docs/{name}.md)" in README, f"README.md does not link docs/{name}.md"


def test_readme_is_a_newcomers_page():
    lines = README.splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; reference material belongs in docs/"
    headings = re.findall(r"^## (.*)$", README, re.M)
    for needed in ("Set-up", "The demo", "The pipeline", "Score your own model on MM-Fi", "Documentation"):
        assert needed in headings, headings
    contents = next(line for line in lines if line.startswith("**Contents:**") or line == "## Contents")
    assert contents, "README.md has no table of contents"
    for heading in headings:  # every section is in the table of contents
        anchor = "#" + re.sub(r"[^a-z0-9 -]", "", heading.lower()).replace(" ", "-")
        assert f"]({anchor})" in README, f"the contents do not link '{heading}' ({anchor})"
    assert ".venv/bin/rfbench" in README and "source .venv/bin/activate" in README


def test_readme_links_lead_somewhere():
    for target in re.findall(r"\]\(((?:docs/)?[\w./-]+\.md)(?:#[\w-]+)?\)", README):
        assert (rr.ROOT / target).exists(), f"README.md links {target}, which does not exist"
    for page in sorted((rr.ROOT / "docs").glob("*.md")):
        for target in re.findall(r"\]\(([\w./-]+\.md)(?:#[\w-]+)?\)", page.read_text(encoding="utf-8")):
            assert (page.parent / target).resolve().exists(), f"docs/{page.name} links {target}, which does not exist"


def test_the_pipeline_table_follows_the_pipeline():
    table = README[README.index("## The pipeline"):README.index("## Score your own model")]
    order = re.findall(r"^\| `rfbench (\w+)", table, re.M)
    pipeline = ["parse", "ingest", "split", "audit", "windows", "predict", "score", "verify"]
    assert [c for c in order if c in pipeline] == pipeline, order
