"""``score --rows`` derives the label set again, as ``windows`` derived it, and holds the index to it.

The class names an index records were taken as read: an index whose ``labels.names`` were permuted (and their
``sha256`` recomputed) renamed every class of the report — a per-class recall shown under another gesture's
name — and with plain predictions ``verify`` said MATCH, since the re-run read the same index. (A label-set
file the index's settings name is never opened by score: tests/test_security.py.)
"""

from __future__ import annotations

import json
import shutil

import pytest

from rfbench.cli import app
from rfbench.metrics.labelset import LabelSet

NAMES = ["Clap", "Draw-O(Horizontal)", "Draw-Zigzag(Horizontal)", "Push&Pull", "Slide", "Sweep"]


@pytest.fixture()
def chain(tiny_demo, tmp_path):
    shutil.copytree(tiny_demo, tmp_path / "d", symlinks=True)
    d = tmp_path / "d"
    shutil.copyfile(d / "bvp" / "scores.npy", d / "plain.npy")  # predictions without their record
    return d


def _score(runner, d, index):
    return runner.invoke(app, ["score", "--task", "gesture", "--pred", str(d / "plain.npy"), "--rows", str(index),
                               "--split", str(d / "bvp-split.json"), "-o", str(d / "report.json")])


def _one_line(result) -> str:
    return " ".join(result.output.split())


def test_an_index_with_its_class_names_permuted_is_refused(runner, chain):
    index = chain / "windows" / "bvp-test" / "index.json"
    assert _score(runner, chain, index).exit_code == 0  # the honest index scores
    (chain / "report.json").unlink()
    (chain / "report.md").unlink()
    doc = json.loads(index.read_text())
    assert doc["labels"]["names"] == NAMES and doc["labels"]["source"] == "manifest"
    swapped = [NAMES[1], NAMES[0], *NAMES[2:]]
    doc["labels"].update(names=swapped, sha256=LabelSet(tuple(swapped)).sha256)  # consistent with itself
    index.write_text(json.dumps(doc))
    result = _score(runner, chain, index)
    assert result.exit_code == 2, result.output
    assert "label set differs" in _one_line(result) and "other class names or order" in _one_line(result)
    assert not (chain / "report.json").exists()


def test_an_edited_label_field_is_refused(runner, chain):
    index = chain / "windows" / "bvp-test" / "index.json"
    doc = json.loads(index.read_text())
    doc["labels"]["key"] = "repetition"  # shown in the report as where the ground truth's classes came from
    index.write_text(json.dumps(doc))
    result = _score(runner, chain, index)
    assert result.exit_code == 2 and "label set differs" in _one_line(result), result.output


def test_a_label_set_of_more_classes_than_rfbench_scores_is_one_line():
    """A windows index (or names.txt) naming 100,000 classes held verify's own process for hours: every pair of
    names of one length was compared for look-alikes. A label set holds at most MAX_CLASSES now."""
    from rfbench.errors import ValidationError
    from rfbench.metrics.labelset import MAX_CLASSES

    LabelSet(tuple(f"class{k:07d}" for k in range(MAX_CLASSES)))
    with pytest.raises(ValidationError, match=f"names {MAX_CLASSES + 1} classes; rfbench scores at most"):
        LabelSet(tuple(f"class{k:07d}" for k in range(MAX_CLASSES + 1)))


def test_alike_pairs_is_every_pair_read_alike_finds():
    """alike_pairs holds an ASCII name only against the non-ASCII names of its length (two ASCII names read alike
    only when their plain names agree: walking them pairwise made 20,000 ids against 20,000 a quadratic loop);
    its pairs are still every (a, b) that read_alike, a != b, in the order of left, then right."""
    from rfbench.names import alike_pairs, read_alike

    left = [f"user{k:02d}" for k in range(40)] + ["b\u0585b", "jos\u00e9", "Kq", "\u0261ina"]
    right = [f"user{k:02d}" for k in range(20, 60)] + ["bob", "BOB", "b\u0585b", "jose", "KQ", "gina", "g ina"]
    expected = [(a, b) for a in left for b in right if a != b and read_alike(a, b)]
    assert alike_pairs(left, right) == expected
    assert ("b\u0585b", "bob") in expected and ("Kq", "KQ") in expected and ("\u0261ina", "gina") in expected
