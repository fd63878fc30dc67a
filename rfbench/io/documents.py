"""Bounded parsing of the JSON and TOML documents rfbench reads from other people.

Every JSON file that passes between stages (manifests, splits, windows indexes, prediction records, reports)
and every TOML file (claims, layouts, configuration) may come from someone else. Before Python's parsers see
the text it is bounded, and what they accept is narrowed to what rfbench itself writes:

- **size**: the caller reads at most a documented number of bytes (:data:`MAX_JSON_BYTES`,
  :data:`MAX_TOML_BYTES`) through :func:`rfbench.io.files.read_regular`;
- **nesting**: arrays and objects (JSON) or arrays, inline tables and dotted keys (TOML) nest at most
  :data:`MAX_NESTING` levels — a file of ``[[[[…`` is one line, not a ``RecursionError``, and a TOML key
  ``a.a.a.…`` 200,000 parts long (which the standard parser handles in quadratic memory) is refused unread;
- **values**: a JSON document holds at most :data:`MAX_JSON_VALUES` arrays, objects and scalars (a 120 MB
  file of ``[]`` would be billions of bytes of Python objects);
- **numbers**: a number literal has at most :data:`MAX_NUMBER_CHARS` characters (a 5,000-digit integer is
  refused with one line, where Python's ``int`` would raise its own error), and ``NaN``/``Infinity`` are not
  JSON (rfbench writes them as ``null`` or as the strings ``"inf"``/``"nan"``);
- **keys**: an object that names a key twice is refused — Python keeps the last value where another reader
  keeps the first, so one file could mean two things.

Every refusal is one :class:`~rfbench.errors.FormatError` (or the ``error`` class a caller passes) naming the
file, exit 2.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rfbench.errors import FormatError

__all__ = ["MAX_NESTING", "MAX_JSON_BYTES", "MAX_TOML_BYTES", "MAX_JSON_VALUES", "MAX_NUMBER_CHARS",
           "check_nesting", "parse_json_bytes", "parse_json_text", "parse_toml_text"]

#: Deepest nesting of arrays and objects (JSON) or arrays, inline tables and dotted keys (TOML) rfbench parses.
#: Its own files nest less than 10 levels; a deeper file is refused before the parser (which recurses) sees it.
MAX_NESTING = 64
#: Largest JSON document rfbench reads (a manifest of every MM-Fi frame file is about 60 MB).
MAX_JSON_BYTES = 512 << 20
#: Largest TOML document rfbench reads (claims, skeleton layouts and configuration are a few kB).
MAX_TOML_BYTES = 4 << 20
#: Most arrays, objects and scalars one JSON document may hold (counted from its commas and brackets, an upper
#: bound): a windows index of 100,000 rows holds about 400,000.
MAX_JSON_VALUES = 16_000_000
#: Longest number literal: a float rfbench writes takes at most 24 characters, a 64-bit integer 20.
MAX_NUMBER_CHARS = 40

#: Every ASCII digit to "0", every other byte to " ": a run of the needle's length is a run of that many digits.
_DIGIT_RUNS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_RUN = b"0" * (MAX_NUMBER_CHARS - 2)


def _has_long_digits(raw: bytes) -> bool:
    """Whether UTF-8 bytes hold a run of at least ``MAX_NUMBER_CHARS - 2`` ASCII digits, as the regex
    ``[0-9]{38,}`` finds in their text (a multi-byte character holds no byte below 0x80; its naive twin is
    ``tests/naive.py``), five times as fast on a large file: a table lookup per byte and one substring search,
    where the regex engine tries each position."""
    return _LONG_RUN in raw.translate(_DIGIT_RUNS)
_JSON_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[]{}')


def without_escapes(raw: bytes) -> bytes:
    """JSON text's bytes with every escaped backslash, then every escaped quote, removed (left to right, as JSON
    reads them): the quotes left alternate between opening a string and closing it."""
    if b"\\" in raw:  # most documents hold no escape at all: two passes over them saved
        raw = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    return raw


def _json_depth(text: str, raw: bytes | None = None) -> int:
    """Deepest nesting of ``[]``/``{}`` outside JSON strings, at C speed (manifests can be large): escaped
    backslashes, then escaped quotes, are removed (left to right, as JSON reads them), every byte but quotes
    and brackets is dropped, and the brackets after an even number of quotes are counted. ``raw``: the text's
    bytes (``text.encode("utf-8", "surrogatepass")``), when the caller has them."""
    import numpy as np

    if raw is None:
        raw = text.encode("utf-8", "surrogatepass")
    raw = without_escapes(raw)
    # two quotes with no bracket between them go together: no bracket's count of quotes before it changes, and
    # most strings hold no bracket (the 2.3 million quotes of a 43,350-recording manifest become none)
    marks = np.frombuffer(raw.translate(None, _JSON_NOT_STRUCTURE).replace(b'""', b""), np.uint8)
    is_quote = marks == 0x22
    inside = np.bitwise_xor.accumulate(is_quote.view(np.uint8))  # 1 after an odd number of quotes
    kind = marks[~is_quote & (inside == 0)]
    if kind.size == 0:
        return 0
    steps = np.where((kind == 0x5B) | (kind == 0x7B), np.int8(1), np.int8(-1))
    return max(0, int(np.cumsum(steps, dtype=np.int64).max()))  # (a text that closes first: not deeper than 0)


# What cannot hold a bracket that counts in TOML: strings (basic, literal, multi-line) and comments.
_TOML_SKIP = re.compile(r'"""(?:[^"\\]|\\[\s\S]|"(?!""))*"""+|\'\'\'[\s\S]*?\'\'\'+|"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
                        r"|'[^'\n]*'|#[^\n]*")
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
# A key (bare parts, quoted parts already replaced by "", dots and spaces) before '=': at a line's start or
# after '{' or ',' (inline tables); and a table header at a line's start.
_TOML_KEY = re.compile(r'(?:^|[{,])[ \t]*([A-Za-z0-9_\-" \t.]+?)[ \t]*=', re.M)
_TOML_HEADER = re.compile(r'^[ \t]*\[\[?([A-Za-z0-9_\-" \t.]*)\]\]?[ \t]*$', re.M)


def _toml_depth(text: str) -> int:
    """The deepest nesting a TOML text can build: brackets and braces (arrays, inline tables), plus the parts
    of its longest dotted key or table header (``a.b.c`` nests three tables)."""
    stripped = _TOML_SKIP.sub('""', text)
    depth = peak = 0
    for ch in _NOT_BRACKET.sub("", stripped):
        depth += 1 if ch in "[{" else -1
        peak = max(peak, depth)
    keys = max((m.group(1).count(".") + 1 for m in _TOML_KEY.finditer(stripped)), default=0)
    headers = max((m.group(1).count(".") + 1 for m in _TOML_HEADER.finditer(stripped)), default=0)
    return max(peak + keys, headers + keys, peak)


def check_nesting(text: str, where: str, *, toml: bool = False, limit: int = MAX_NESTING,
                  error: type = FormatError, raw: bytes | None = None) -> None:
    """Raise ``error`` when ``text`` nests arrays/objects (JSON) or arrays, inline tables and dotted keys (TOML,
    ``toml=True``) deeper than ``limit`` levels, counting outside strings (and TOML comments). Call it before a
    parser that recurses (``json.loads``, ``tomllib.loads``). ``raw``: the JSON text's bytes, when the caller
    has them."""
    if not toml and text.count("[") + text.count("{") <= limit:
        return
    depth = _toml_depth(text) if toml else _json_depth(text, raw)
    if depth > limit:
        raise error(f"{where}: nested {depth} levels deep; rfbench reads at most {limit} levels of arrays and "
                    "objects")


class _Refused(ValueError):
    """A value the strict JSON hooks refuse (its message is the reason)."""


def _unique_keys(pairs: list) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise _Refused(f"the key {key!r} appears twice in one object; rfbench reads each key once (readers differ "
                       "on which value a repeated key has)")
    return obj


def _no_constant(name: str):
    raise _Refused(f"{name} is not a JSON number; rfbench writes a missing value as null")


def _int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise _Refused(f"a number of {len(text)} characters; rfbench reads numbers of at most {MAX_NUMBER_CHARS}")
    return int(text)


def _finite(text: str) -> float:
    """A JSON number with a fraction or an exponent, which must be finite: ``1e999`` is a short number whose
    float is infinity (the value ``Infinity`` the reader refuses by name)."""
    value = float(text)
    if value - value != 0:
        raise _Refused(f"the number {text[:24]} is too large for a float (it would read as infinity); rfbench "
                       "reads finite numbers only")
    return value


def _float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise _Refused(f"a number of {len(text)} characters; rfbench reads numbers of at most {MAX_NUMBER_CHARS}")
    return _finite(text)


def parse_json_text(text: str, where: str, error: type = FormatError) -> Any:
    """Parse untrusted JSON ``text`` within the bounds of this module (nesting, values, number length, no NaN, no
    repeated key); anything else raises ``error`` with one line naming ``where``."""
    return _parse_json(text, text.encode("utf-8", "surrogatepass"), where, error)


def _parse_json(text: str, raw: bytes, where: str, error: type) -> Any:
    """:func:`parse_json_text` of ``text``, whose UTF-8 bytes (surrogates passed) are ``raw``."""
    check_nesting(text, where, error=error, raw=raw)
    values = text.count(",") + text.count("[") + text.count("{") + 1
    if values > MAX_JSON_VALUES:
        raise error(f"{where}: holds up to {values} JSON values; rfbench reads at most {MAX_JSON_VALUES} in one file")
    hooks: dict[str, Any] = {"object_pairs_hook": _unique_keys, "parse_constant": _no_constant,
                             "parse_float": _finite}  # (a manifest or index holds few floats: integers stay in C)
    if _has_long_digits(raw):  # only then are numbers measured one by one (the common case stays at C speed)
        hooks.update(parse_int=_int, parse_float=_float)
    try:
        return json.loads(text, **hooks)
    except _Refused as exc:
        raise error(f"{where}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise error(f"{where}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except (RecursionError, ValueError) as exc:  # a nesting the scan could not see; int()'s own digit limit
        raise error(f"{where}: not valid JSON rfbench reads ({' '.join(str(exc).split())[:120]})") from None


def parse_json_bytes(data: bytes, where: str, error: type = FormatError) -> Any:
    """:func:`parse_json_text` of UTF-8 ``data`` (anything else is ``error``)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{where}: not UTF-8 text, expected a JSON file") from None
    return _parse_json(text, bytes(data), where, error)  # valid UTF-8: its bytes are the text's


def parse_toml_text(text: str, where: str, error: type = FormatError) -> dict:
    """Parse untrusted TOML ``text`` (``tomllib``, or ``tomli`` before Python 3.11) after bounding its nesting
    (:func:`check_nesting` with ``toml=True``); TOML itself refuses a repeated key. Invalid TOML raises
    ``error`` with the parser's one-line reason."""
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib

    if len(text) > MAX_TOML_BYTES:
        raise error(f"{where}: {len(text)} characters of TOML; rfbench reads at most {MAX_TOML_BYTES}")
    check_nesting(text, where, toml=True, error=error)
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise error(f"{where}: nested too deeply to read") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{where}: not valid TOML ({' '.join(str(exc).split())[:160]})") from None
