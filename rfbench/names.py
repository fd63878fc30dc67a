"""Names as a reader sees them.

Two names a reader cannot tell apart must not count as two things: a subject ``kq`` beside ``KQ``, ``josé`` in
its composed and decomposed Unicode forms, a class ``push`` beside ``push`` followed by a zero-width space.
:func:`plain_name` is the form such names share; the split audit, the label set and custom skeleton layouts
compare names by it. Look-alike letters of other scripts (a Cyrillic ``о`` for a Latin ``o``) are not folded:
that needs Unicode's confusables table, which Python does not ship.
"""

from __future__ import annotations

import unicodedata

__all__ = ["plain_name"]


def plain_name(name: str) -> str:
    """``name`` with Unicode compatibility forms folded (NFKC), case folded, and every space, format or control
    character removed: ``"h36m17 "``, ``"H36M17"`` and ``"h36m\\u200b17"`` are all ``h36m17``."""
    folded = unicodedata.normalize("NFKC", name).casefold()
    return "".join(ch for ch in folded if not ch.isspace() and unicodedata.category(ch)[0] not in "CZ")
