"""The label set: the ordered class names every gesture label refers to (see :mod:`rfbench.metrics.classify`).

Kept apart from the classification kernels so that building windows, which needs only the names, loads no Numba.
"""

from __future__ import annotations

import hashlib
import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rfbench.errors import FormatError, ValidationError
from rfbench.io.files import read_input_bytes

__all__ = ["LabelSet", "as_label_set", "MAX_CLASSES"]

#: Most classes one label set may hold. WiFi-sensing corpora have tens (Widar3.0 22 gestures, MM-Fi 27
#: actions); a report of more would be a confusion matrix no table can show, and a label set arrives in files
#: other people write (a windows index, names.txt), whose names are checked pairwise for look-alikes.
MAX_CLASSES = 1024
#: Longest class name (characters): a name is a row and a column of every table; a longer one is not a name.
MAX_NAME_CHARS = 256


@dataclass(frozen=True)
class LabelSet:
    """The ordered class names every label refers to.

    Attributes
    ----------
    names : tuple of str
        Class names in class-index order (unique, non-empty, no line breaks).
    source : str
        ``declared`` (given by the user, e.g. ``--label-set names.txt``) or ``inferred`` (the sorted union of
        the string labels seen; classes absent from the data are then unknowable).
    """

    names: tuple[str, ...]
    source: str = "declared"

    def __post_init__(self):
        names = tuple(self.names)
        object.__setattr__(self, "names", names)
        if not names:
            raise ValidationError("the label set is empty; list one class name per line")
        if len(names) > MAX_CLASSES:
            raise ValidationError(f"the label set names {len(names)} classes; rfbench scores at most {MAX_CLASSES}")
        for n in names:
            if not isinstance(n, str) or not n.strip() or n != n.strip() or "\n" in n or "\r" in n:
                raise ValidationError(f"label set entry {n!r} is not a class name (non-empty text without "
                                      f"surrounding spaces or line breaks)")
            if len(n) > MAX_NAME_CHARS:
                raise ValidationError(f"label set entry {n[:40]!r}… is {len(n):,} characters long; a class name "
                                      f"is at most {MAX_NAME_CHARS}")
            control = next((ch for ch in n if unicodedata.category(ch) == "Cc"), None)
            if control is not None:  # an escape sequence, a tab: kept in index.json and shown by whoever reads it
                raise ValidationError(f"label set entry {n!r} holds the control character {control!r}; a class "
                                      "name is printable text")
        if len(set(names)) != len(names):
            seen: set = set()
            dup = next(n for n in names if n in seen or seen.add(n))
            raise ValidationError(f"class {dup!r} appears twice in the label set; each name once")
        from rfbench.names import alike_pairs

        # two classes shown alike in every table would be two rows no reader can tell apart
        alike = alike_pairs(names, names)
        if alike:
            other, n = alike[0]
            raise ValidationError(f"classes {other!r} and {n!r} read as one name (they differ only by case, "
                                  f"Unicode form, spaces, invisible characters or look-alike letters); give each "
                                  f"class a name a reader can tell apart")
        if self.source not in ("declared", "inferred"):
            raise ValidationError(f"label set source must be declared or inferred, got {self.source!r}")

    @property
    def size(self) -> int:
        return len(self.names)

    @property
    def sha256(self) -> str:
        """sha256 of the names joined by ``\\n`` with a final ``\\n`` (UTF-8): the label set's identity."""
        return hashlib.sha256(("\n".join(self.names) + "\n").encode("utf-8")).hexdigest()

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "LabelSet":
        """Read ``names.txt``: one class name per line, in class-index order; blank lines are skipped and
        surrounding spaces stripped. A UTF-8 byte-order mark at the start of the file (as some editors save one)
        is not part of the first name; one anywhere else is refused."""
        return cls.read_hashed(path)[0]

    @classmethod
    def read_hashed(cls, path: str | os.PathLike) -> tuple["LabelSet", str]:
        """:meth:`from_file` and the sha256 of the bytes the names were read from (one read: the digest an index
        records is of the names it uses, never of a file put in place after)."""
        path = Path(path)
        data = read_input_bytes(path, "--label-set")
        return cls._from_bytes(data, path), hashlib.sha256(data).hexdigest()

    @classmethod
    def _from_bytes(cls, data: bytes, path: Path) -> "LabelSet":
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise FormatError(f"`label_set` {path}: not UTF-8 text; list one class name per line") from None
        lines = text.splitlines()
        marked = next((k for k, line in enumerate(lines, 1) if "\ufeff" in line), None)
        if marked is not None:
            raise ValidationError(f"`label_set` {path}: line {marked} holds a byte-order mark (U+FEFF), an "
                                  f"invisible character no class name may hold; only the file's first character "
                                  f"may be one (were files joined?)")
        names = tuple(line.strip() for line in lines if line.strip())
        try:
            return cls(names, "declared")
        except ValidationError as exc:
            raise ValidationError(f"`label_set` {path}: {exc}") from None

    @classmethod
    def infer(cls, *arrays) -> "LabelSet":
        """The union of the string labels of ``arrays`` (None entries are skipped) in natural order
        (:func:`rfbench._order.natural_key`: ``1, 2, …, 10``; names without digits sorted as text)."""
        seen: set[str] = set()
        for a in arrays:
            if a is None:
                continue
            a = np.asarray(a)
            if a.dtype.kind not in "Uiu":
                raise ValidationError(f"labels must be class names (strings) or integer indices, found dtype {a.dtype}")
            if a.dtype.kind != "U":
                raise ValidationError(
                    "integer labels need a declared label set (--label-set names.txt, one class name per line; "
                    "label i is line i, from 0): a bare number does not say which class it is (a Widar3.0 gesture "
                    "number means different gestures on different dates)")
            seen.update(np.unique(a).tolist())
        if not seen:
            raise ValidationError("no labels to infer a label set from")
        from rfbench._order import natural_sorted

        return cls(tuple(natural_sorted(seen)), "inferred")

    def encode(self, labels, what: str = "labels", check_range: bool = True) -> np.ndarray:
        """Class indices (int64) of ``labels``: names (a unicode array) or indices (an integer array).

        ``check_range=False`` leaves the range check of integer labels to the caller (:func:`prepare_labels`
        makes it during its counting pass).

        Raises
        ------
        ValidationError
            A name not in the set, an index outside ``0..size-1``, or labels of another dtype.
        """
        a = np.asarray(labels)
        if a.ndim != 1:
            raise ValidationError(f"{what} must be one label per row (1-D), got shape {a.shape}")
        if a.dtype.kind in "iu":
            if a.dtype.kind == "u" and a.dtype.itemsize == 8 and a.size and a.max() > np.iinfo(np.int64).max:
                check_range = True  # would wrap around in int64
            if check_range and a.size and (a.min() < 0 or a.max() >= self.size):
                bad = a[(a < 0) | (a >= self.size)][0]
                raise ValidationError(f"{what}: label index {int(bad)} is outside the label set's 0..{self.size - 1} "
                                      f"({self.size} classes); integer labels are line numbers of the label set, "
                                      f"from 0")
            return np.ascontiguousarray(a.astype(np.int64, copy=False))
        if a.dtype.kind == "U":
            names = np.array(self.names)
            sorter = np.argsort(names, kind="stable")
            pos = np.searchsorted(names, a, sorter=sorter)
            pos = np.minimum(pos, self.size - 1)
            idx = sorter[pos]
            ok = names[idx] == a
            if not ok.all():
                unknown = np.unique(a[~ok])
                raise ValidationError(f"{what}: {unknown.size} label(s) not in the label set "
                                      f"(e.g. {str(unknown[0])!r}); add them to the label set or fix the labels")
            return idx.astype(np.int64)
        if a.dtype.kind == "b":
            raise ValidationError(f"{what}: boolean labels are ambiguous; give class names or integer indices")
        if a.dtype.kind == "f":
            raise ValidationError(f"{what}: labels must be integers (indices into the label set) or strings (names), "
                                  f"found floats; (N, C) float arrays are scores and go to --pred only")
        raise ValidationError(f"{what}: labels must be integers or strings, found dtype {a.dtype}")

    def to_dict(self) -> dict[str, Any]:
        return {"names": list(self.names), "source": self.source, "size": self.size, "sha256": self.sha256}


def as_label_set(labels) -> LabelSet | None:
    """A :class:`LabelSet` from a LabelSet, a sequence of names, or a path to ``names.txt``; None stays None."""
    if labels is None or isinstance(labels, LabelSet):
        return labels
    if isinstance(labels, (str, os.PathLike)):
        return LabelSet.from_file(labels)
    return LabelSet(tuple(labels), "declared")
