"""rfbench's canonical JSON writer gives the bytes of the standard library's indenting encoder.

``dumps_json`` encodes runs of plain scalars with JSON's C encoder instead of walking every value in Python;
the reference here is ``json.dumps(indent=2, sort_keys=True, ensure_ascii=False)`` after NaN/inf become None
and NumPy values their Python ones (what the writer documents), so a difference in one byte fails.
"""

from __future__ import annotations

import json
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rfbench.io.files import dumps_json


def _reference(obj):
    def clean(v):
        if isinstance(v, float):
            return v if math.isfinite(v) else None
        if isinstance(v, dict):
            return {str(k): clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        if isinstance(v, np.generic):
            return clean(v.item())
        if isinstance(v, np.ndarray):
            return clean(v.tolist())
        return v

    return json.dumps(clean(obj), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)
_scalars = st.none() | st.booleans() | st.integers() | st.floats() | _text
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=5)
                       | st.dictionaries(_text, inner, max_size=6), max_leaves=40)


@settings(max_examples=200, deadline=None)
@given(_values)
def test_same_bytes_as_the_standard_encoder(obj):
    assert dumps_json(obj) == _reference(obj)


def test_keys_and_values_the_markers_could_be_confused_with():
    # control characters in keys and strings are escaped, so they never meet the writer's \x00/\x01 markers
    doc = {"a\x00b": "c\x01d", "\x01": ["\x00", {"k": "v\x00"}], "z": {"y": [1.5, float("nan"), -0.0, 10**30]},
           "m": [], "n": {}, "o": [[], {}], "p": True, "q": None}
    assert dumps_json(doc) == _reference(doc)


def test_containers_among_plain_values_keep_the_sorted_order():
    doc = {"b": 1, "a": [1], "d": {"x": 1}, "c": "s", "e": float("inf"), "aa": 2, "f": [float("nan")]}
    assert dumps_json(doc) == _reference(doc)
    assert list(json.loads(dumps_json(doc))) == sorted(doc)


def test_numpy_values_and_non_string_keys():
    doc = {1: np.float32(0.5), "arr": np.arange(3), "one": np.array([7]), 2.5: np.int64(3), "t": (1, "x")}
    assert dumps_json(doc) == _reference({**doc, "one": 7})
    assert json.loads(dumps_json(doc))["one"] == 7  # a one-value array is written as its value


def test_lone_surrogate_is_written_as_an_escape():
    text = dumps_json({"path": "bad\udcffname"})
    assert "\\udcff" in text
    text.encode("utf-8")


def test_long_digit_runs_are_found_as_the_naive_scan_finds_them():
    """The bounded reader measures numbers one by one only when a run of 38 digits is somewhere in the text (a
    table lookup per byte and a substring search): the same verdict as a character-by-character scan, over runs
    at the bound, next to non-ASCII digits, inside strings and split by other characters."""
    import random

    import naive
    from rfbench.io.documents import MAX_NUMBER_CHARS, _has_long_digits

    run = MAX_NUMBER_CHARS - 2
    rng = random.Random(7)
    alphabet = "0123456789" * 6 + 'abc ,.:"[]{}é٣\u00b2\U0001d7d8'  # Arabic-Indic 3, superscript 2, math 0
    texts = ["", "1" * run, "1" * (run - 1), "x" + "9" * run + "x", "1" * (run - 1) + "٣", "é" + "5" * run,
             '{"a": "' + "7" * run + '"}', "1" * 20 + "\u00b2" + "1" * 20]
    for _ in range(400):
        texts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 200))))
        texts.append("x" * rng.randint(0, 3) + "4" * rng.randint(run - 2, run + 1) + "y")
    verdicts = set()
    for text in texts:
        want = naive.naive_has_long_digits(text, run)
        assert _has_long_digits(text.encode("utf-8")) == want, text
        verdicts.add(want)
    assert verdicts == {True, False}


def test_lists_of_records_written_together_give_the_same_bytes():
    """A list of eight or more dicts is written by layout (a template per key set and value types, every scalar
    in one C-encoder call, the dicts of their lists together): the same bytes as the standard encoder, for
    records like a manifest's and for the odd ones that send the list back to the general walk (a NaN, a dict
    value, a non-string key, a tuple, a NumPy scalar)."""
    import random

    rng = random.Random(3)

    def record(k: int) -> dict:
        rec = {"id": f"r{k}", "frames": rng.randrange(50), "room": rng.choice([1, 2, "3"]), "ok": k % 2 == 0,
               "%s key": None, "é": "ü\n\x00", "files": [{"path": f"p{k}/{j}", "bytes": j, "sha256": None}
                                                         for j in range(rng.randrange(3))]}
        if k % 3 == 0:
            rec["receivers"] = [1, 2, 3] if k % 2 else []
        if k % 5 == 0:
            rec["score"] = rng.random()
            rec["files"].append({"path": "x", "nested": [1, {"a": 2}], "skipped": []})
        if k % 7 == 0:
            rec["files"].append("not a dict")
        return rec

    records = [record(k) for k in range(40)]
    assert dumps_json({"recordings": records}) == _reference({"recordings": records})
    assert dumps_json([{} for _ in range(9)] + [{"a": 1}]) == _reference([{} for _ in range(9)] + [{"a": 1}])
    for odd in ({"x": float("nan")}, {"x": {"y": 1}}, {1: "int key"}, {"x": (1, 2)}, {"x": np.float32(1.5)},
                {"x": float("inf"), "files": [{"a": 1}]}):
        doc = records[:10] + [{**records[10], **odd}] + records[11:20]
        assert dumps_json(doc) == _reference(doc), odd


def _has_float(v) -> bool:
    """Whether ``v`` holds a finite float (NaN and infinities are written as null)."""
    if isinstance(v, float):
        return math.isfinite(v)
    if isinstance(v, dict):
        return any(_has_float(x) for x in v.values())
    if isinstance(v, (list, tuple)):
        return any(_has_float(x) for x in v)
    return False


_words = st.sampled_from(["true", "false", "null", "1e5", "1.5", "e", "u", "s", "l", '"', "\\", "\\\"", "é"])
_tricky_text = st.lists(_words | _text, max_size=4).map("".join)
_tricky = st.recursive(st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1) | st.floats() | _tricky_text,
                       lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_tricky_text, inner, max_size=5),
                       max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(_tricky)
def test_both_writers_give_the_standard_bytes(obj):
    """dumps_json has two writers: orjson's (a document without a float) and the Python one (any other). Each is
    held to the standard encoder on its own, and orjson's is used exactly when the document holds no finite float
    (both write NaN and infinities as null) —
    strings that spell ``true``, ``1e5`` or hold quotes and backslashes do not confuse the scan that says so."""
    from rfbench.io import files

    assert files._text(obj, "\n") + "\n" == _reference(obj)
    compiled = files._compiled_text(obj)
    assert (compiled is not None) == (not _has_float(obj))
    if compiled is not None:
        assert compiled == _reference(obj)


def test_a_float_anywhere_leaves_the_document_to_the_python_writer():
    """orjson writes 1e-07 as 1e-7: a document holding a float, wherever it sits (after a true, a false or a null,
    alone, in an exponent-only form), is written by the Python writer; one without is orjson's."""
    from rfbench.io import files

    for doc in (1e-07, [None, 1e-05], [True, 1e-05], {"a": False, "b": 2.5e-8}, {"x": "1e5", "y": -0.0},
                ["\\", 1e-07], {"k": [1, 2, {"z": 1e300}]}):
        assert files._compiled_text(doc) is None, doc
        assert dumps_json(doc) == _reference(doc)
    for doc in ({"t": "1.5e-7", "u": True, "v": False, "w": None}, ["e", "\\\"1e5", 10**18, True],
                {"a\\": ["null", "s", "u e"]}):
        assert files._compiled_text(doc) == _reference(doc), doc


_string_literals = st.text(alphabet='"\\[]{}a é', max_size=6).map(json.dumps)  # escaped quotes and backslashes
_json_pieces = _string_literals | st.sampled_from(["[", "]", "{", "}", ",", ":", " ", "1"])


@settings(max_examples=400, deadline=None)
@given(st.lists(_json_pieces, max_size=40).map("".join) | _values.map(json.dumps))
def test_nesting_depth_is_the_naive_scan_s(text):
    """The bounded reader's nesting pre-check (escapes removed, every byte but quotes and brackets dropped, quote
    pairs with nothing between them dropped, the brackets outside strings counted) gives the depth a scan one
    character at a time gives: over JSON texts, and over runs of brackets and string literals (brackets, quotes and
    backslashes inside them) that need not balance."""
    import naive
    from rfbench.io.documents import _json_depth

    assert _json_depth(text) == naive.naive_json_depth(text)
