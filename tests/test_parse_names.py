"""``rfbench parse`` shows a file name as one cell of one row: every control character in it (a line break, a
carriage return, a tab, an escape) is written as a visible ``\\xNN``, in the table, the notes, the ``wrote`` line
and a failed input's error line alike, so a crafted name cannot draw a row of its own."""

from __future__ import annotations

import json

import pytest

from rfbench.cli import app
from rfbench.io.writer import synthetic_log

#: A name holding a line break that, printed raw, would look like a second, made-up row of the table.
FORGED = "a.dat\nfake.dat    2998 3x1: 2998 -       0xC1: 2998  2.997 999.9\nz"


@pytest.mark.parametrize(("char", "escape"), [("\n", "\\x0a"), ("\r", "\\x0d"), ("\t", "\\x09"),
                                               ("\x1b", "\\x1b")])
def test_a_control_character_in_a_name_is_shown_escaped(runner, tmp_path, char, escape):
    root = tmp_path / "logs"
    root.mkdir()
    name = f"a{char}b.dat"
    (root / name).write_bytes(synthetic_log(3))
    out = tmp_path / "out"
    result = runner.invoke(app, ["parse", str(root), "-o", str(out)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.split("\n")[:-1]  # the output's own line breaks only: a name holds none
    assert len(lines) == 5 and not any(char in line for line in lines), result.stdout
    row = next(line for line in lines if line.startswith("a"))
    assert row.split()[:2] == [f"a{escape}b.dat", "3"], row  # the name, then its 3 records, on one line
    assert lines[-1] == f"wrote {out / f'a{escape}b.npz'}", lines[-1]
    assert (out / f"a{char}b.npz").is_file()  # the archive keeps the real name


def test_a_forged_name_draws_no_row_of_its_own(runner, tmp_path):
    root = tmp_path / "logs"
    root.mkdir()
    (root / FORGED).write_bytes(synthetic_log(3))
    result = runner.invoke(app, ["parse", str(root), "-o", str(tmp_path / "out"), "--glob", "*"],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.split("\n")[:-1]
    # title, header, rule, the one row, the wrote line: nothing starts with the forged row's name
    assert len(lines) == 5, result.stdout
    assert not any(line.startswith(("fake.dat", "z")) for line in lines), result.stdout
    assert lines[3].startswith("a.dat\\x0afake.dat"), lines[3]
    assert lines[4].startswith("wrote ") and lines[4].endswith("\\x0az.npz"), lines[4]


def test_a_failed_input_s_error_line_shows_the_name_escaped(runner, tmp_path):
    root = tmp_path / "logs"
    root.mkdir()
    (root / "bad\nname.dat").write_bytes(b"")  # no record: a failed input
    result = runner.invoke(app, ["parse", str(root), "-o", str(tmp_path / "out")], env={"COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "bad\\x0aname.dat" in errors[0], result.stderr
    assert any(line.startswith("bad\\x0aname.dat") and "failed" in line for line in result.stdout.splitlines())


def test_json_keeps_the_real_name(runner, tmp_path):
    root = tmp_path / "logs"
    root.mkdir()
    (root / "a\nb.dat").write_bytes(synthetic_log(3))
    result = runner.invoke(app, ["parse", str(root), "-o", str(tmp_path / "out"), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [f["name"] for f in doc["files"]] == ["a\nb.dat"]
