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
"""

from __future__ import annotations

import unicodedata

__all__ = ["LOOK_ALIKE", "plain_name"]

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


def plain_name(name: str) -> str:
    """``name`` with Unicode compatibility forms folded (NFKC), look-alike letters read as the Latin letter they
    print as (:data:`LOOK_ALIKE`), case folded, and every space, format or control character removed:
    ``"h36m17 "``, ``"H36M17"``, ``"h36m\\u200b17"`` and ``"Н36М17"`` (Cyrillic) are all ``h36m17``."""
    # read before NFKC too: it turns the lunate sigma (which prints as c) into a sigma (which does not)
    folded = unicodedata.normalize("NFKC", name.translate(_LOOK_ALIKE)).translate(_LOOK_ALIKE).casefold()
    return "".join(ch for ch in folded if not ch.isspace() and unicodedata.category(ch)[0] not in "CZ")
