"""File-name templates: ``{distance}_alldata/csi_a{activity}_{sample}.dat`` → the fields of a path.

A template is a path relative to a dataset root in which ``{field}`` stands for a part that varies. The rules
(``docs/ingest.md`` says them for users):

- ``{field}`` matches one or more characters other than ``/``; a field name is an identifier (letters, digits,
  ``_``, not starting with a digit);
- everything else is literal and matches itself (``.`` is a dot, not "any character"); ``{{`` and ``}}`` are
  literal braces;
- a template names at least one field, and two fields may not touch (``{a}{b}``: where one ends is undefined);
- the template is relative: no leading ``/``, no empty, ``.`` or ``..`` segment, and it ends in a file name;
- a field used twice must match the same text each time; a path where it does not is a problem for that file;
- a path the template reads in two ways (``{a}_{b}.dat`` on ``x_y_z.dat``) is *ambiguous*, a problem too;
- a field is an integer column only if **every** value found is a canonical decimal (``0`` or digits without a
  leading zero, at most :data:`MAX_INT_DIGITS` of them, so every value is exact as a JSON number); otherwise the
  whole column is text (``20181205`` and ``20181205_2`` keep a date column text; ``01`` stays ``"01"``).

Matching is pure Python and per path (not a hot loop: a path costs a few microseconds; see
``benchmarks/bench_ingest.py``). The matcher enumerates every way to read a path, pruning dead ends, so
ambiguity is detected, not resolved by a regex engine's preference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from rfbench.errors import ValidationError

__all__ = ["Template", "compile_template", "is_canonical_int", "infer_field_types", "MAX_INT_DIGITS",
           "MAX_PARSES"]

#: Longest canonical decimal read as an integer (10**15 < 2**53: exact as a JSON number in any reader).
MAX_INT_DIGITS = 15
#: Ways of reading one path the matcher enumerates before calling it ambiguous without listing more.
MAX_PARSES = 64

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class Template:
    """A compiled template.

    Attributes
    ----------
    text : str
        The template as written.
    segments : tuple of tuples
        One tuple per path segment of ``("lit", text)`` and ``("field", name)`` parts.
    fields : tuple of str
        Field names in order of first appearance (each once).
    patterns : mapping
        Optional extra constraint per field (a compiled regex the whole value must match), for built-in
        templates such as Widar3.0's (``user\\d+``); user templates have none.
    """

    text: str
    segments: tuple
    fields: tuple
    patterns: Mapping[str, "re.Pattern"] = field(default_factory=dict)

    def segment_text(self, k: int) -> str:
        """Segment ``k`` as written in the template (for messages)."""
        return self.text.split("/")[k]  # '/' only ever appears in literals, and no segment is empty

    def segment_matches(self, k: int, name: str) -> bool:
        """Whether a folder or file name can be segment ``k`` (fields used twice are not compared here)."""
        return bool(_segment_parses(self.segments[k], name, self.patterns, 1))

    def match(self, path: str) -> dict[str, str] | str:
        """Read ``path`` (POSIX, relative to the root): ``{field: text}``, or a one-line reason it cannot.

        Reasons: the path does not match; a field used twice matches different texts; the path can be read in
        more than one way (ambiguous).
        """
        parts = path.split("/")
        if len(parts) != len(self.segments):
            return f"does not match the template {self.text!r}"
        per_segment = []
        for seg, text in zip(self.segments, parts):
            found = _segment_parses(seg, text, self.patterns, MAX_PARSES + 1)
            if not found:
                return f"does not match the template {self.text!r}"
            per_segment.append(found)
        raw: list[list[tuple[str, str]]] = [[]]
        for found in per_segment:
            raw = [a + b for a in raw for b in found][:MAX_PARSES + 1]
        consistent = []
        clash = None
        for parse in raw:
            values: dict[str, str] = {}
            ok = True
            for name, value in parse:
                if name in values and values[name] != value:
                    ok = False
                    clash = clash or (name, values[name], value)
                    break
                values[name] = value
            if ok and values not in consistent:
                consistent.append(values)
        if not consistent:
            name, a, b = clash
            return f"field {{{name}}} is {a!r} in one place and {b!r} in another; the template needs the same text"
        if len(consistent) > 1:
            shown = " or ".join(", ".join(f"{k}={v!r}" for k, v in c.items()) for c in consistent[:2])
            more = " or more" if len(consistent) > 2 else ""
            return f"ambiguous: the template {self.text!r} reads this name in more than one way ({shown}{more})"
        return consistent[0]

    def render(self, values: Mapping[str, object], placeholder: Mapping[str, str] | None = None) -> str:
        """The path of ``values`` (the inverse of :meth:`match`); fields in ``placeholder`` are written as given
        (e.g. ``{"receiver": "*"}``)."""
        placeholder = placeholder or {}
        out = []
        for seg in self.segments:
            out.append("".join(text if kind == "lit" else str(placeholder.get(text, values.get(text)))
                               for kind, text in seg))
        return "/".join(out)


def compile_template(text: str, patterns: Mapping[str, str] | None = None) -> Template:
    """Check and compile a template (see the module docstring for the rules).

    Parameters
    ----------
    text : str
        The template, e.g. ``"{user}_{gesture}_{repetition}.dat"``.
    patterns : mapping, optional
        Extra per-field constraints (regular expressions a value must match entirely); built-in templates only.

    Raises
    ------
    ValidationError
        One line naming what is wrong: no field, adjacent fields, an unmatched brace, a field name that is
        not an identifier, an absolute path or an empty, ``.`` or ``..`` segment.
    """
    if not isinstance(text, str) or not text:
        raise ValidationError("the template is empty; write a path relative to the root with a {field} for each "
                              "part that varies, e.g. '{user}_{gesture}_{repetition}.dat'")
    tokens: list[tuple[str, str]] = []
    lit: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "{" and text.startswith("{{", i):
            lit.append("{")
            i += 2
        elif c == "}" and text.startswith("}}", i):
            lit.append("}")
            i += 2
        elif c == "{":
            close = text.find("}", i + 1)
            if close < 0:
                raise ValidationError(f"template {text!r}: '{{' at character {i + 1} is never closed; write '{{{{' "
                                      "for a literal brace")
            name = text[i + 1:close]
            if not _IDENT.match(name):
                raise ValidationError(f"template {text!r}: {{{name}}} is not a field name (letters, digits and _, "
                                      "not starting with a digit); write '{{' and '}}' for literal braces")
            if lit:
                tokens.append(("lit", "".join(lit)))
                lit = []
            if tokens and tokens[-1][0] == "field":
                raise ValidationError(f"template {text!r}: fields {{{tokens[-1][1]}}} and {{{name}}} are adjacent, "
                                      f"so where one ends is undefined; put a literal between them, e.g. "
                                      f"'{{{tokens[-1][1]}}}_{{{name}}}'")
            tokens.append(("field", name))
            i = close + 1
        elif c == "}":
            raise ValidationError(f"template {text!r}: '}}' at character {i + 1} closes nothing; write '}}}}' for a "
                                  "literal brace")
        else:
            lit.append(c)
            i += 1
    if lit:
        tokens.append(("lit", "".join(lit)))
    fields = tuple(dict.fromkeys(name for kind, name in tokens if kind == "field"))
    if not fields:
        raise ValidationError(f"template {text!r} has no {{field}}: every file would have the same metadata; mark "
                              "each part that varies, e.g. '{user}_{gesture}_{repetition}.dat'")
    # Split into path segments at the '/' of literals.
    segments: list[list[tuple[str, str]]] = [[]]
    for kind, value in tokens:
        if kind == "field":
            segments[-1].append((kind, value))
            continue
        pieces = value.split("/")
        for k, piece in enumerate(pieces):
            if k:
                segments.append([])
            if piece:
                segments[-1].append(("lit", piece))
    for seg in segments:
        if not seg or (len(seg) == 1 and seg[0] in (("lit", "."), ("lit", ".."))):
            raise ValidationError(f"template {text!r} must be a relative path ending in a file name: no leading or "
                                  "trailing '/', no '//', and no '.' or '..' segment")
    compiled = {}
    for name, pattern in (patterns or {}).items():
        if name not in fields:
            raise ValidationError(f"template {text!r}: a pattern is given for {{{name}}}, which it does not use")
        compiled[name] = re.compile(pattern)
    return Template(text=text, segments=tuple(tuple(s) for s in segments), fields=fields, patterns=compiled)


def _segment_parses(seg: tuple, text: str, patterns: Mapping, limit: int) -> list[list[tuple[str, str]]]:
    """Up to ``limit`` ways of reading ``text`` as segment ``seg``: each a list of ``(field, value)``."""
    n_parts = len(seg)
    # A necessary condition, checked in one left-to-right scan: the literals occur in order, fields take at least
    # one character, the first and last literals sit at the ends. It turns the costly no-match case (a long
    # hostile name) into a linear scan; the search below then runs only where a reading is likely.
    pos = 0
    for i, (kind, value) in enumerate(seg):
        if kind == "field":
            pos += 1
        elif i == 0:
            if not text.startswith(value):
                return []
            pos = len(value)
        else:
            j = text.find(value, pos)
            if j < 0:
                return []
            pos = j + len(value)
    if pos > len(text) or (seg[-1][0] == "lit" and not text.endswith(seg[-1][1])):
        return []
    dead: set[tuple[int, int]] = set()
    out: list[list[tuple[str, str]]] = []

    def ends_of(i: int, pos: int) -> Iterable[int]:
        """Where field ``i`` starting at ``pos`` may end: before an occurrence of the next literal, or at the end."""
        if i + 1 == n_parts:
            if pos < len(text):
                yield len(text)
            return
        nxt = seg[i + 1][1]  # a literal: fields never touch
        j = text.find(nxt, pos + 1)
        while j >= 0:
            yield j
            j = text.find(nxt, j + 1)

    def walk(i: int, pos: int, acc: list) -> bool:
        """Extend ``acc`` from part ``i`` at ``pos``; returns whether any complete reading was found."""
        if len(out) >= limit:
            return True
        if i == n_parts:
            if pos == len(text):
                out.append(list(acc))
                return True
            return False
        if (i, pos) in dead:
            return False
        kind, value = seg[i]
        found = False
        if kind == "lit":
            if text.startswith(value, pos):
                found = walk(i + 1, pos + len(value), acc)
        else:
            pattern = patterns.get(value)
            for end in ends_of(i, pos):
                piece = text[pos:end]
                if pattern is not None and not pattern.fullmatch(piece):
                    continue
                acc.append((value, piece))
                found = walk(i + 1, end, acc) or found
                acc.pop()
                if len(out) >= limit:
                    break
        if not found:
            dead.add((i, pos))
        return found

    walk(0, 0, [])
    return out


def is_canonical_int(text: str) -> bool:
    """``0``, or ASCII digits without a leading zero, at most :data:`MAX_INT_DIGITS` long (no sign, no spaces)."""
    if not text or len(text) > MAX_INT_DIGITS or not text.isascii() or not text.isdigit():
        return False
    return text == "0" or text[0] != "0"


def infer_field_types(values: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """``{field: "int" | "str"}``: ``int`` only when every value of the field is a canonical decimal."""
    return {name: "int" if all(is_canonical_int(v) for v in vals) else "str" for name, vals in values.items()}
