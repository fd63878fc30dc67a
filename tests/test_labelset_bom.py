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
