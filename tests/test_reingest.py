"""``rfbench.datasets.reingest``: the ingest command that writes a manifest again from its tree, as ``rfbench
verify`` runs it. For each way ``ingest`` is called, the manifest written again by the command rebuilt from the
first one's own record is the same document (its root excepted); a manifest ingest does not write is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rfbench.cli import app
from rfbench.datasets.reingest import ROOT_FIELD, ingest_argv
from rfbench.errors import FormatError
from rfbench.io.writer import synthetic_log


def _run(runner, args):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


def _again(runner, tmp_path, first: Path, root: Path) -> tuple[dict, dict, list]:
    doc = json.loads(first.read_text())
    out = tmp_path / f"again-{first.stem}.json"
    argv = ingest_argv(doc, str(root), str(out))
    _run(runner, argv)
    again = json.loads(out.read_text())
    doc.pop(ROOT_FIELD), again.pop(ROOT_FIELD)
    return doc, again, argv


def _put(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_a_template_manifest_with_every_setting_is_written_again(runner, tmp_path):
    tree = tmp_path / "corpus"
    same = synthetic_log(5, seed=9)
    for rel, data in (("a/u1-1-r1.dat", synthetic_log(9, seed=1)), ("a/u1-1-r2.dat", synthetic_log(5, seed=2)),
                      ("b/u2-2-r1.dat", same), ("b/u3-2-r1.dat", same), ("b/u2-2-r2.dat", synthetic_log(4, seed=3)),
                      ("b/notes.txt", b"x")):
        _put(tree / rel, data)
    first = tmp_path / "m.json"
    _run(runner, ["ingest", "files", tree, "--template", "{room}/{user}-{gesture}-r{receiver}.dat",
                  "--recording-by", "room,user,gesture", "--label", "gesture", "--subject", "user", "--room", "room",
                  "--dataset", "my-corpus", "--drop-duplicates", "-o", first])
    doc, again, argv = _again(runner, tmp_path, first, tree)
    assert doc["dataset"] == "my-corpus" and doc["drop_duplicates"] is True and doc["problems"]
    assert "--drop-duplicates" in argv and "--recording-by=room,user,gesture" in argv
    assert again == doc


def test_mmfi_with_verify_frames_and_widar_with_receivers_are_written_again(runner, tmp_path):
    _run(runner, ["generate", "mmfi", tmp_path / "mmfi", "--subjects", "S01", "--actions", "A01,A02",
                  "--frames", "3"])
    first = tmp_path / "mmfi.json"
    _run(runner, ["ingest", "mmfi", tmp_path / "mmfi", "--verify-frames", "-o", first])
    doc, again, argv = _again(runner, tmp_path, first, tmp_path / "mmfi")
    assert doc["verify_frames"] is True and "--verify-frames" in argv and again == doc
    _run(runner, ["generate", "widar", tmp_path / "widar", "--repetitions", "1"])
    first = tmp_path / "widar.json"
    _run(runner, ["ingest", "widar", tmp_path / "widar", "--receivers", "6", "-o", first])
    doc, again, argv = _again(runner, tmp_path, first, tmp_path / "widar")
    assert argv[argv.index("--receivers") + 1] == "6" and again == doc


@pytest.mark.parametrize("doc, words", [
    ({"dataset": "my-bvp"}, "is not one rfbench ingest writes"),
    ({"dataset": "x", "template": {"text": ""}}, "not a template"),
    ({"dataset": "mmfi", "follow_symlinks": "yes"}, "not true or false"),
    ({"dataset": "x", "template": {"text": "{a}.dat", "recording_by": "a"}}, "not a list of field names"),
    ({"dataset": "x", "template": {"text": "{a}.dat"}, "roles": {"colour": "a"}}, "not an object of"),
])
def test_a_manifest_ingest_does_not_write_is_refused(doc, words):
    with pytest.raises(FormatError, match=words):
        ingest_argv(doc, "/data", "/out.json", "m.json")
