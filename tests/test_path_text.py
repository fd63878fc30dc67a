"""A path read from a document that no file name can be (a JSON ``"\\u0000"`` or ``"\\ud800"``) is one line and
exit 2; it was a ``ValueError``/``UnicodeEncodeError`` traceback with exit 1 (for ``audit``: "a leak found")."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from rfbench.cli import app
from rfbench.errors import FormatError
from rfbench.io.files import check_path_text, open_regular


@pytest.mark.parametrize("path, words", [("a\x00b", "NUL byte"), ("\ud800", "unpaired surrogate"),
                                         (b"x\x00", "NUL byte")])
def test_a_path_no_file_name_can_be_is_refused(path, words):
    with pytest.raises(FormatError, match=words):
        check_path_text(path)
    with pytest.raises(FormatError, match=words):
        open_regular(path)


def test_a_byte_of_a_non_utf8_name_is_a_path():
    check_path_text("caf\udce9.dat")  # how Python holds the name b"caf\xe9.dat": not refused


def _copy(tiny_demo, tmp_path):
    d = tmp_path / "d"
    shutil.copytree(tiny_demo, d, symlinks=True)
    return d


@pytest.mark.parametrize("value", ["a\x00b", "\ud800"])
def test_audit_and_windows_of_a_split_naming_such_a_manifest(runner, tiny_demo, tmp_path, value):
    d = _copy(tiny_demo, tmp_path)
    doc = json.loads((d / "bvp-split.json").read_text())
    doc["manifest"]["path"] = value
    (d / "bad.json").write_text(json.dumps(doc))
    for argv in (["audit", str(d / "bad.json")], ["windows", str(d / "bad.json"), "--side", "test", "-o",
                                                   str(d / "w")]):
        result = runner.invoke(app, argv)
        assert result.exit_code == 2, result.output
        assert "no file name can" in result.output and "Traceback" not in result.output
        assert len(result.output.strip().splitlines()) == 1, result.output


def test_a_manifest_root_holding_nul_is_one_line(runner, tiny_demo, tmp_path):
    d = _copy(tiny_demo, tmp_path)
    m = json.loads((d / "bvp-manifest.json").read_text())
    m["root"] = "da\x00ta"
    data = json.dumps(m).encode()
    (d / "m.json").write_bytes(data)
    split = json.loads((d / "bvp-split.json").read_text())
    split["manifest"] = {"path": "m.json", "sha256": hashlib.sha256(data).hexdigest()}
    (d / "s.json").write_text(json.dumps(split))
    result = runner.invoke(app, ["audit", str(d / "s.json")])
    assert result.exit_code == 2, result.output
    assert "holds a NUL byte" in result.output and "Traceback" not in result.output
