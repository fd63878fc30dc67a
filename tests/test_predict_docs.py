"""docs/predict.md runs as written (the README's conventions, through readme_runner.run_document)."""

from __future__ import annotations

import pytest

import readme_runner as rr

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

PAGE = rr.ROOT / "docs" / "predict.md"


def test_every_block_is_run_or_marked():
    unmarked = [f"line {b.line_no}: ```{b.lang}" for b in rr.blocks(PAGE.read_text(encoding="utf-8"))
                if b.marker is None and b.lang not in rr.RUN_LANGS]
    assert not unmarked, unmarked


@pytest.mark.long
def test_predict_page_runs_as_written(tmp_path):
    ran, failures = rr.run_document(PAGE, tmp_path)
    assert ran >= 10
    assert not failures, "\n\n".join(failures)
    assert (tmp_path / "run" / "pred.json").is_file() and not (tmp_path / "run56").exists()


def test_run_document_reports_a_wrong_output(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```console\n$ python -c \"print('hello')\"\ngoodbye\n```\n", encoding="utf-8")
    ran, failures = rr.run_document(page, tmp_path)
    assert ran == 1 and len(failures) == 1 and "printed:\nhello" in failures[0]
