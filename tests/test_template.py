"""File-name templates: every rule of issue 16 item 1, and the matcher against a brute-force twin."""

from __future__ import annotations

import itertools
import random

import pytest

from rfbench.datasets.template import compile_template, infer_field_types, is_canonical_int
from rfbench.errors import ValidationError


def test_fields_literals_and_segments():
    t = compile_template("{distance}_alldata/csi_a{activity}_{sample}.dat")
    assert t.fields == ("distance", "activity", "sample")
    assert t.match("1_alldata/csi_a12_4.dat") == {"distance": "1", "activity": "12", "sample": "4"}
    # a field never crosses '/': one path segment per template segment
    assert "does not match" in t.match("1_alldata/sub/csi_a12_4.dat")
    assert "does not match" in t.match("csi_a12_4.dat")
    # a field matches at least one character
    assert "does not match" in t.match("_alldata/csi_a12_4.dat")


def test_dot_is_a_literal_not_any_character():
    t = compile_template("{user}.dat")
    assert t.match("kq.dat") == {"user": "kq"}
    assert "does not match" in t.match("kqxdat")
    assert "does not match" in t.match("kq.DAT")  # literals are case-sensitive


def test_escaped_braces():
    t = compile_template("{{{a}}}_{b}.dat")  # '{' a '}' '_' b '.dat'
    assert t.fields == ("a", "b")
    assert t.match("{x}_y.dat") == {"a": "x", "b": "y"}
    assert t.render({"a": "x", "b": "y"}) == "{x}_y.dat"


def test_a_field_used_twice_must_match_the_same_text():
    t = compile_template("{user}/{user}_{gesture}.dat")
    assert t.fields == ("user", "gesture")
    assert t.match("kq/kq_3.dat") == {"user": "kq", "gesture": "3"}
    reason = t.match("kq/mj_3.dat")
    assert reason.startswith("field {user} is 'kq' in one place and 'mj' in another")


def test_two_parses_are_ambiguous():
    t = compile_template("{a}_{b}.dat")
    reason = t.match("x_y_z.dat")
    # a=x, b=y_z or a=x_y, b=z: both read the whole name
    assert reason.startswith("ambiguous") and "a='x', b='y_z'" in reason and "a='x_y', b='z'" in reason
    assert t.match("x_y.dat") == {"a": "x", "b": "y"}


def test_repeated_field_can_resolve_an_ambiguity():
    # {a}_{b}/{a}: the second segment fixes a, so 'x_y_z/x_y' has exactly one reading (a=x_y, b=z)
    t = compile_template("{a}_{b}/{a}")
    assert t.match("x_y_z/x_y") == {"a": "x_y", "b": "z"}


@pytest.mark.parametrize("text, match", [
    ("", "empty"),
    ("x.dat", "has no {field}"),
    ("{{a}}.dat", "has no {field}"),  # escaped braces are no field
    ("{a}{b}.dat", "adjacent"),
    ("d/{a}{b}", "adjacent"),
    ("{a", "never closed"),
    ("a}.dat", "closes nothing"),
    ("{1a}.dat", "not a field name"),
    ("{a-b}.dat", "not a field name"),
    ("{}.dat", "not a field name"),
    ("/{a}.dat", "relative path"),
    ("{a}/", "relative path"),
    ("{a}//x", "relative path"),
    ("../{a}.dat", "relative path"),
    ("./{a}.dat", "relative path"),
])
def test_template_errors_are_one_line(text, match):
    with pytest.raises(ValidationError, match=match) as info:
        compile_template(text)
    assert "\n" not in str(info.value)


def test_adjacent_fields_across_a_slash_are_fine():
    t = compile_template("{a}/{b}.dat")
    assert t.match("x/y.dat") == {"a": "x", "b": "y"}


@pytest.mark.parametrize("text, ok", [
    ("0", True), ("7", True), ("10", True), ("20181205", True), ("9" * 15, True),
    ("01", False), ("00", False), ("", False), ("-1", False), ("+1", False), (" 1", False), ("1.0", False),
    ("1e3", False), ("20181205_2", False), ("٣", False), ("²", False), ("1" * 16, False),
])
def test_canonical_decimals(text, ok):
    assert is_canonical_int(text) is ok


def test_a_column_is_an_integer_only_if_every_value_is():
    kinds = infer_field_types({"date": ["20181109", "20181205_2"], "rep": ["1", "2", "10"], "u": ["kq"],
                               "z": ["0", "01"]})
    assert kinds == {"date": "str", "rep": "int", "u": "str", "z": "str"}


def test_segment_prefilter_and_render():
    t = compile_template("{distance}_alldata/csi_a{activity}_{sample}.dat")
    assert t.segment_matches(0, "3_alldata") and not t.segment_matches(0, "notes")
    assert t.segment_text(0) == "{distance}_alldata"
    values = t.match("3_alldata/csi_a1_10.dat")
    assert t.render(values) == "3_alldata/csi_a1_10.dat"
    assert t.render(values, placeholder={"sample": "*"}) == "3_alldata/csi_a1_*.dat"


def test_patterns_restrict_values():
    t = compile_template("{user}-{n}.dat", patterns={"user": "user[0-9]+", "n": "[0-9]+"})
    assert t.match("user1-2.dat") == {"user": "user1", "n": "2"}
    assert "does not match" in t.match("User1-2.dat")
    # without the patterns '-' may sit in a field: 'a-b-c.dat' reads two ways; with them it reads none
    assert compile_template("{user}-{n}.dat").match("a-b-c.dat").startswith("ambiguous")
    assert "does not match" in t.match("a-b-c.dat")
    with pytest.raises(ValidationError, match="does not use"):
        compile_template("{a}.dat", patterns={"b": "x"})


def test_long_hostile_names_are_read_or_refused():
    # 250 separators and no extension, or one: a scan of the literals refuses the first, the second is ambiguous
    t = compile_template("{a}_{b}_{c}_{d}_{e}_{f}.dat")
    assert t.match("_" * 250).startswith("does not match")
    assert t.match("a_" * 120 + ".dat").startswith("ambiguous")
    assert t.match("a_" * 5 + ".dat").startswith("does not match")  # {f} would be empty
    assert t.match("1_2_3_4_5_6.dat") == dict(zip("abcdef", "123456"))


# ---------------------------------------------------------------------------------------------------------
# the matcher against a brute-force twin: every way to cut the text, literal by literal
# ---------------------------------------------------------------------------------------------------------


def _naive_readings(template: str, path: str) -> list[dict]:
    """All distinct consistent readings, by trying every set of field boundaries (slow, obviously right)."""
    t = compile_template(template)
    tokens = [tok for seg_i, seg in enumerate(t.segments) for tok in (list(seg) + ([("lit", "/")]
              if seg_i + 1 < len(t.segments) else []))]
    n_fields = sum(1 for kind, _ in tokens if kind == "field")
    out = []
    for cuts in itertools.combinations_with_replacement(range(len(path) + 1), 2 * n_fields):
        pos, k, values, ok = 0, 0, {}, True
        for kind, text in tokens:
            if kind == "lit":
                if not path.startswith(text, pos):
                    ok = False
                    break
                pos += len(text)
            else:
                start, end = cuts[2 * k], cuts[2 * k + 1]
                k += 1
                if start != pos or end <= start or "/" in path[start:end]:
                    ok = False
                    break
                value = path[start:end]
                if values.setdefault(text, value) != value:
                    ok = False
                    break
                pos = end
        if ok and pos == len(path) and values not in out:
            out.append(values)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_matcher_agrees_with_brute_force(seed):
    rnd = random.Random(seed)
    templates = ["{a}_{b}", "{a}_{b}_{c}", "{a}/{b}_{a}", "x{a}_{b}y", "{a}__{b}", "{a}_{a}", "{a}.{b}.{c}",
                 "{a}_/{b}", "_{a}", "{a}_", "ab{a}ba", "{a}aa{b}"]
    for _ in range(60):
        template = rnd.choice(templates)
        path = "".join(rnd.choice("ab_./xy") for _ in range(rnd.randint(1, 8)))
        want = _naive_readings(template, path)
        got = compile_template(template).match(path)
        if len(want) == 1:
            assert got == want[0], (template, path)
        elif len(want) > 1:
            assert isinstance(got, str) and got.startswith("ambiguous"), (template, path, got)
        else:
            assert isinstance(got, str) and not got.startswith("ambiguous"), (template, path, got)
