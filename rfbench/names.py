"""Names as a reader sees them.

Two names a reader cannot tell apart must not count as two things: a subject ``kq`` beside ``KQ``, ``josé`` in
its composed and decomposed Unicode forms, a class ``push`` beside ``push`` followed by a zero-width space, a
subject ``user1`` beside ``usеr1`` whose ``е`` is Cyrillic. :func:`plain_name` is the form such names share; the
split audit, the label set and custom skeleton layouts compare names by it.

Look-alike letters: Python does not ship Unicode's confusables table, so :data:`LOOK_ALIKE` lists the Cyrillic and
Greek letters (and the dotless ``ı``) that print as a Latin letter in common fonts — each maps to that letter,
case kept, before the case is folded (Greek ``Η`` reads as ``H``, its small ``η`` as no Latin letter). Letters
that only resemble one in some fonts (Cyrillic small ``в``, ``н``, ``т``, which are small capitals) and
look-alike digits (Cyrillic ``З`` for ``3``) are left alone: a name written in those scripts keeps its meaning.

A table is never complete (Armenian ``օ``, the IPA ``ɡ`` and ``ɑ``, small capitals ``ᴏ``, Cherokee ``Ꭺ`` print as
Latin letters too), so where a look-alike could forge something — two values on the two sides of a split, two
classes, a name beside a built-in one — :func:`read_alike` also takes any letter of the scripts and blocks that
hold Latin look-alikes (:data:`_LOOK_ALIKE_BLOCKS`) for any letter or digit at its place. ASCII names are compared
as they are: ``I`` and ``l``, ``0`` and ``O`` are distinct characters a monospaced terminal shows apart (and
Widar3.0's gestures include both ``Draw-O`` and ``Draw-0``).
"""

from __future__ import annotations

import unicodedata

__all__ = ["INVISIBLE", "LOOK_ALIKE", "alike_pairs", "plain_name", "read_alike"]

#: Letter -> the Latin letter it prints as (pairs from Unicode's confusables data, restricted to whole-letter
#: look-alikes of the Latin alphabet in the Cyrillic and Greek blocks).
LOOK_ALIKE = {
    # Cyrillic capitals
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T",
    "У": "Y", "Х": "X", "Ѕ": "S", "І": "I", "Ј": "J", "Ԛ": "Q", "Ԝ": "W", "Ү": "Y", "Ӏ": "I",
    # Cyrillic small letters
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ј": "j",
    "ԁ": "d", "ԛ": "q", "ԝ": "w", "һ": "h", "ӏ": "l", "ү": "y",
    # Greek capitals
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O",
    "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "Ϲ": "C", "Ϳ": "J",
    # Greek small letters
    "ο": "o", "ρ": "p", "ι": "i", "ν": "v", "υ": "u", "χ": "x", "γ": "y", "ϲ": "c", "ϳ": "j", "α": "a",
    "κ": "k",
    # Latin small dotless i
    "ı": "i",
}
_LOOK_ALIKE = str.maketrans(LOOK_ALIKE)

#: Characters that print as nothing (or a blank) though Unicode calls them letters, marks or symbols, so the test
#: for spaces, format and control characters misses them: the Hangul fillers, the combining grapheme joiner, the
#: Khmer inherent vowels, the Mongolian variation selectors, the variation selectors and the braille blank.
INVISIBLE = "".join(chr(c) for c in (0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, *range(0x180B, 0x1810), 0x2800,
                                     0x3164, *range(0xFE00, 0xFE10), 0xFFA0, *range(0xE0100, 0xE01F0)))
_DROP_INVISIBLE = str.maketrans("", "", INVISIBLE)


def plain_name(name: str) -> str:
    """``name`` with Unicode compatibility forms folded (NFKC), look-alike letters read as the Latin letter they
    print as (:data:`LOOK_ALIKE`), case folded, and every space, format or control character removed:
    ``"h36m17 "``, ``"H36M17"``, ``"h36m\\u200b17"`` and ``"Н36М17"`` (Cyrillic) are all ``h36m17``."""
    # read before NFKC too: it turns the lunate sigma (which prints as c) into a sigma (which does not)
    folded = unicodedata.normalize("NFKC", name.translate(_LOOK_ALIKE)).translate(_LOOK_ALIKE).casefold()
    return "".join(ch for ch in folded.translate(_DROP_INVISIBLE)
                   if not ch.isspace() and unicodedata.category(ch)[0] not in "CZ")


#: Unicode blocks whose letters include look-alikes of Latin letters (first, last code point): Latin-1 and the
#: Latin Extended blocks with IPA, Greek and Coptic, Cyrillic (and its supplements), Armenian, Georgian,
#: Ethiopic, Cherokee, Canadian Syllabics (and their extension), Runic, the phonetic extensions, Latin Extended
#: Additional, letterlike symbols, Glagolitic, Coptic, Tifinagh, Lisu, Vai, Bamum, Cherokee small letters, and
#: the historic alphabets Lycian, Carian, Old Italic, Gothic, Old Permic, Deseret and Osage.
_LOOK_ALIKE_BLOCKS = ((0x00C0, 0x02AF), (0x0370, 0x058F), (0x10A0, 0x10FF), (0x1200, 0x139F), (0x13A0, 0x13FF),
                      (0x1400, 0x167F), (0x16A0, 0x16FF), (0x18B0, 0x18FF), (0x1C80, 0x1C8F), (0x1D00, 0x1DBF),
                      (0x1E00, 0x1EFF), (0x2100, 0x214F), (0x2C00, 0x2C5F), (0x2C60, 0x2CFF), (0x2D30, 0x2D7F),
                      (0xA4D0, 0xA4FF), (0xA500, 0xA63F), (0xA640, 0xA69F), (0xA6A0, 0xA6FF), (0xA720, 0xA7FF),
                      (0xAB30, 0xABBF), (0x10280, 0x102DF), (0x10300, 0x1037F), (0x10400, 0x1044F),
                      (0x104B0, 0x104FF))


def _may_pass_for_latin(ch: str) -> bool:
    """A letter of a block that holds Latin look-alikes, or a decimal digit of another script (Devanagari ``०``,
    Bengali ``০`` and Telugu ``౦`` print as ``0`` or ``O``)."""
    o = ord(ch)
    if o <= 0x7F:
        return False
    if unicodedata.category(ch) == "Nd":
        return True
    return ch.isalpha() and any(lo <= o <= hi for lo, hi in _LOOK_ALIKE_BLOCKS)


def _skeleton(name: str) -> str:
    """``name`` as plain_name reads it but for the look-alike table (each letter stays in its script), without
    the marks a decomposition leaves (``é`` as ``e``)."""
    folded = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", name).casefold()).translate(_DROP_INVISIBLE)
    return "".join(ch for ch in folded if not ch.isspace() and unicodedata.category(ch)[0] not in "CZM")


def read_alike(a: str, b: str) -> bool:
    """Whether a reader may take ``a`` and ``b`` for one name: their :func:`plain_name` agree, or, marks left
    out, they have the same length and agree at every place but where one of them has a letter of a script that
    holds Latin look-alikes and the other a letter or digit (``bob`` and ``bօb``, Armenian ``օ``; ``gina`` and
    ``ɡina``; ``josé`` and ``jose``). Two names only a non-ASCII letter tells apart are not names to audit by."""
    if plain_name(a) == plain_name(b):
        return True
    x, y = _skeleton(a), _skeleton(b)
    if len(x) != len(y) or x == y and x.isascii():
        return x == y
    for p, q in zip(x, y):
        if p == q:
            continue
        if not ((_may_pass_for_latin(p) and q.isalnum()) or (_may_pass_for_latin(q) and p.isalnum())):
            return False
    return True


def alike_pairs(left, right) -> list[tuple[str, str]]:
    """Every ``(a, b)``, ``a`` of ``left`` and ``b`` of ``right``, ``a != b``, that :func:`read_alike`; in the
    order of ``left``, then ``right``. Names equal in :func:`plain_name` are paired through one table; only a
    name with a non-ASCII letter left is held against the other side's names of its length."""
    left, right = list(dict.fromkeys(left)), list(dict.fromkeys(right))
    place = {b: k for k, b in enumerate(right)}
    plain_right: dict = {}
    ascii_by_length: dict = {}  # two ASCII names read alike only when their plain names agree: never held
    other_by_length: dict = {}  # against each other, so an ASCII name meets only the non-ASCII names
    for b in right:
        plain_right.setdefault(plain_name(b), []).append(b)
        (ascii_by_length if b.isascii() else other_by_length).setdefault(len(_skeleton(b)), []).append(b)
    out = []
    for a in left:
        found = [b for b in plain_right.get(plain_name(a), ()) if b != a]
        length = len(_skeleton(a))
        candidates = other_by_length.get(length, [])
        if not a.isascii():
            candidates = ascii_by_length.get(length, []) + candidates
        seen = set(found)
        found += [b for b in candidates if b != a and b not in seen and read_alike(a, b)]
        out += [(a, b) for b in sorted(found, key=place.__getitem__)]
    return out
