"""A label-set file saved with a UTF-8 byte-order mark (as some Windows editors write it) reads as the same names
as the file without one; a byte-order mark anywhere else in the file is refused with one line."""

from __future__ import annotations

import pytest

from rfbench.errors import ValidationError
from rfbench.metrics.labelset import LabelSet, as_label_set


def test_a_leading_byte_order_mark_is_not_part_of_the_first_name(tmp_path):
    bom = tmp_path / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbfPush&Pull\nSweep\n")
    plain = tmp_path / "plain.txt"
    plain.write_bytes(b"Push&Pull\nSweep\n")
    ls = LabelSet.from_file(bom)
    assert ls.names == ("Push&Pull", "Sweep")
    assert ls.sha256 == LabelSet.from_file(plain).sha256
    assert as_label_set(str(bom)).encode(["Push&Pull", "Sweep"]).tolist() == [0, 1]


def test_a_leading_byte_order_mark_with_crlf_lines(tmp_path):
    p = tmp_path / "crlf.txt"
    p.write_bytes("\ufeffPush&Pull\r\nSweep\r\n".encode("utf-8"))
    assert LabelSet.from_file(p).names == ("Push&Pull", "Sweep")


def test_a_byte_order_mark_inside_the_file_is_refused(tmp_path):
    p = tmp_path / "joined.txt"  # two files saved with a mark, joined
    p.write_bytes(b"\xef\xbb\xbfPush&Pull\n\xef\xbb\xbfSweep\n")
    with pytest.raises(ValidationError, match=r"line 2 holds a byte-order mark \(U\+FEFF\)"):
        LabelSet.from_file(p)


@pytest.mark.parametrize("line, match", [
    (b"Push\x1b[2J", r"control character '\\x1b'"),  # an escape sequence, kept in index.json as it was
    (b"Push\tPull", r"control character '\\t'"),
    (b"Push\x7f", r"control character '\\x7f'"),
    ("Push\u009b2J".encode(), r"control character"),  # a C1 control (CSI)
    (b"P" * 257, r"257 characters long; a class name is at most 256"),
])
def test_a_class_name_with_a_control_character_or_past_the_longest_is_refused(tmp_path, line, match):
    """A label set of `Push` + ESC [2J (which clears a terminal that prints it) or a tab was read and kept in the
    windows index as it was; a name of any length was too. Both are one line now (exit 2 at the command)."""
    p = tmp_path / "names.txt"
    p.write_bytes(b"Sweep\n" + line + b"\n")
    with pytest.raises(ValidationError, match=match):
        LabelSet.from_file(p)
    assert LabelSet.from_file(_write(tmp_path / "ok.txt", b"Sweep\n" + b"P" * 256 + b"\n")).size == 2


def _write(path, data: bytes):
    path.write_bytes(data)
    return path
