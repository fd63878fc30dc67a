"""A small reader for MATLAB v5 ``.mat`` files holding numeric arrays, with no SciPy.

It reads what an MM-Fi WiFi frame holds (``CSIamp``, ``CSIphase``: real double arrays) and, more generally,
every numeric matrix (double, single, 8–64-bit integers, real or complex), compressed (``miCOMPRESSED``, as
MATLAB's ``save`` writes by default) or not, in either byte order. Other variables (char, cell, struct,
sparse, objects) are skipped and listed. Files in the HDF5-based v7.3 format are refused with a clear error.

Untrusted files are safe to read: the file's size and the total its compressed elements inflate to are bounded
by ``max_bytes`` (default :data:`MAX_MAT_BYTES`), inflation stops at the bound (``zlib.decompressobj`` with
``max_length``), every size an element declares is checked against the bytes left before anything is sliced,
an array's dimensions are checked against the values actually present before it is shaped (never
allocated from the dimensions), and the arrays a read returns take at most ``max_bytes`` together in their
classes, checked before any value is converted (a double stored as int8 takes 8 times its stored bytes, a
complex one 16). The work is one pass over the file: each compressed element must inflate to exactly one
variable, as MATLAB writes it (a stream holding none, two, or another compressed element is refused, so nothing
nests), a skipped variable's contents are not parsed, and at most :data:`MAX_MAT_ELEMENTS` data
elements are parsed in one file. A variable name appearing twice is refused: MATLAB writes each variable once,
and no reader may choose which one a file means. Error messages name a variable only when its name is a valid MATLAB
identifier (at most 63 characters): they never quote arbitrary bytes of the file.

Reference: MathWorks, "MAT-File Format" (matfile_format.pdf), Version 5 MAT-File Format, chapter 1.
``scipy.io.loadmat`` is the peer the tests compare with.
"""

from __future__ import annotations

import itertools
import math
import os
import re
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rfbench.errors import FormatError

__all__ = ["read_mat", "read_mat_bytes", "MatFile", "MatLayout", "mat_layout", "MatHeader", "compressed_header",
           "plain_header", "single_matrix", "MAX_MAT_BYTES", "MAX_MAT_ELEMENTS"]

#: Default bound on a MAT-file's size and, separately, on the total its compressed elements inflate to.
MAX_MAT_BYTES = 256 << 20
#: Most data elements one read of a file parses: its top-level elements (variables, and the compressed elements
#: holding them) and the sub-elements of its numeric variables (flags, dimensions, name, real and imaginary
#: parts: MATLAB writes 5 to 7 elements per variable, so this is about 10,000 variables). Past it, a
#: FormatError: a file of tiny elements would otherwise cost time out of proportion to its bytes.
MAX_MAT_ELEMENTS = 1 << 16
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,62}\Z")

# Data types of the tags (matfile_format.pdf, table 1-1).
_MI_DTYPES = {1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4", 7: "f4", 9: "f8", 12: "i8", 13: "u8"}
_MI_MATRIX, _MI_COMPRESSED = 14, 15
# Array classes (table 1-3): numeric ones and the dtype MATLAB gives them.
_MX_NUMERIC = {6: "f8", 7: "f4", 8: "i1", 9: "u1", 10: "i2", 11: "u2", 12: "i4", 13: "u4", 14: "i8", 15: "u8"}
_MX_NAMES = {1: "cell", 2: "struct", 3: "object", 4: "char", 5: "sparse"}
_COMPLEX_FLAG = 0x0800
#: Most dimensions an array may have (NumPy's limit).
_MAX_DIMS = 64


class MatFile(dict):
    """Variables of a MAT-file by name (NumPy arrays), plus ``skipped``: ``{name: class}`` of the rest."""

    skipped: dict[str, str]


def _shown(name: str) -> str:
    """A variable name as a message may show it: only a valid MATLAB identifier, never arbitrary bytes."""
    return repr(name) if _NAME.match(name) else "with an invalid name"


def _spans(buf, pos: int, end: int, endian: str, where: str):
    """Yield ``(type, start, size)`` for each data element in ``buf[pos:end]``: its payload is
    ``buf[start:start + size]``."""
    while pos + 8 <= end:
        first, second = struct.unpack_from(endian + "II", buf, pos)
        if first >> 16:  # small data element: type and size share the first word, data in the next 4 bytes
            mi_type, size = first & 0xFFFF, first >> 16
            if size > 4:
                raise FormatError(f"{where}: corrupt small data element (size {size} > 4)")
            yield mi_type, pos + 4, size
            pos += 8
            continue
        mi_type, size = first, second
        start = pos + 8
        if start + size > end:
            raise FormatError(f"{where}: truncated data element (needs {size} bytes, {end - start} left)")
        yield mi_type, start, size
        pos = start + size
        if mi_type != _MI_COMPRESSED:
            pos += (-size) % 8
    if pos < end and any(buf[pos:end]):
        raise FormatError(f"{where}: {end - pos} stray byte(s) after the last data element")


def _elements(buf, pos: int, end: int, endian: str, where: str):
    """Yield ``(type, payload)`` for each data element in ``buf[pos:end]`` (a memoryview slice: no copy)."""
    for mi_type, start, size in _spans(buf, pos, end, endian, where):
        yield mi_type, buf[start:start + size]


def _numeric(mi_type: int, payload: bytes, endian: str, where: str) -> np.ndarray:
    code = _MI_DTYPES.get(mi_type)
    if code is None:
        raise FormatError(f"{where}: unsupported numeric data type {mi_type}")
    dtype = np.dtype(code).newbyteorder(endian)
    if len(payload) % dtype.itemsize:
        raise FormatError(f"{where}: {len(payload)} bytes is not a whole number of {code} values")
    return np.frombuffer(payload, dtype=dtype)


#: MATLAB's names of the numeric classes, by the dtype :data:`_MX_NUMERIC` gives them.
_CLASS_NAMES = {"f8": "double", "f4": "single", "i1": "int8", "u1": "uint8", "i2": "int16", "u2": "uint16",
                "i4": "int32", "u4": "uint32", "i8": "int64", "u8": "uint64"}


def _unheld(values: np.ndarray, out_dtype: np.dtype) -> str | None:
    """Why ``values`` (as stored) cannot all become ``out_dtype`` (the variable's class) unchanged but for a
    float's rounding, or None when they can: the first non-finite, fractional or out-of-range value (in that
    order) for an integer class, the first finite value beyond single's range for single; a double holds
    every stored value. Nothing is cast before this says yes, so NumPy never warns and never wraps."""
    if values.size == 0 or np.can_cast(values.dtype, out_dtype) or out_dtype.kind == "f" and values.dtype.kind in "iu":
        return None  # every value fits (an integer becomes a float, rounded if it must, as in MATLAB)
    if out_dtype.kind == "f":  # a single stored as doubles: NaN and infinities are singles too
        big = np.finfo(out_dtype).max
        outside = np.isfinite(values) & (np.abs(values) > big)
        if outside.any():
            return f"{_value_text(values[np.argmax(outside)])}, outside single's range {-big:g} to {big:g}"
        return None
    info = np.iinfo(out_dtype)
    bounds = f"{_CLASS_NAMES[out_dtype.str[1:]]}'s range {info.min} to {info.max}"
    if values.dtype.kind == "f":
        finite = np.isfinite(values)
        if not finite.all():
            return _value_text(values[np.argmin(finite)])
        fractional = values != np.trunc(values)
        if fractional.any():
            return f"{_value_text(values[np.argmax(fractional)])}, not a whole number"
    low, high = values.min(), values.max()
    if int(low) < info.min:  # exact: a finite whole float, or an integer, as a Python int
        return f"{_value_text(low)}, outside {bounds}"
    if int(high) > info.max:
        return f"{_value_text(high)}, outside {bounds}"
    return None


def _value_text(value) -> str:
    """A stored value as a message shows it: a whole number of up to 20 digits in full, else ``%g``."""
    if value.dtype.kind in "iu":
        return str(int(value))
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isfinite(value) and value == math.trunc(value) and abs(value) < 1e20:
        return str(int(value))
    return f"{value:g}"


def _as_class(values: np.ndarray, out_dtype: np.dtype, where: str, name: str, part: str = "") -> np.ndarray:
    """``values`` (as stored) in the variable's class ``out_dtype``, or a FormatError naming the variable when
    a stored value is one the class cannot hold (:func:`_unheld`). MATLAB writes an integer class's values
    with an integer data type no wider than the class, so such a value only comes from a damaged or forged
    file; it is refused, not converted: NumPy's cast would turn NaN into 0 and an out-of-range value into an
    undefined or wrapped number, and even MATLAB's rules (rounding a fraction to the nearest integer,
    saturating at the class's bounds, NaN to 0) would invent values the file does not hold."""
    problem = _unheld(values, out_dtype)
    if problem is not None:
        cls = _CLASS_NAMES[out_dtype.str[1:]]
        raise FormatError(f"{where}: variable {_shown(name)} is of class {cls} but stores {problem}{part}, which "
                          f"{cls} cannot hold (a damaged or forged file); refused rather than converted")
    return values.astype(out_dtype)


def _too_many(where: str) -> FormatError:
    return FormatError(f"{where}: more than {MAX_MAT_ELEMENTS:,} data elements; not read further (MATLAB writes "
                       "5 to 7 per variable)")


def _matrix(payload: bytes, endian: str, where: str, left: int,
            room: int = MAX_MAT_BYTES) -> tuple[str, np.ndarray | str, int]:
    """Name and array of one miMATRIX element (or name and class name when it is not numeric: its contents past
    the name are not parsed), and how many sub-elements were parsed; more than ``left`` is a FormatError, and so
    is an array that would take more than ``room`` bytes in its class (checked before any value is converted:
    a double stored as int8 takes 8 times its stored bytes, a complex one 16)."""
    sub = _elements(payload, 0, len(payload), endian, where)
    parts = list(itertools.islice(sub, 3))
    if len(parts) > left:
        raise _too_many(where)
    if len(parts) < 3:
        raise FormatError(f"{where}: matrix element with {len(parts)} sub-element(s); expected flags, "
                          f"dimensions and name")
    flags = _numeric(parts[0][0], parts[0][1], endian, where)
    if flags.size == 0:
        raise FormatError(f"{where}: matrix element with empty array flags")
    dims = _numeric(parts[1][0], parts[1][1], endian, where)
    if flags.dtype.kind not in "iu" or dims.dtype.kind not in "iu":  # MATLAB writes miUINT32 flags, miINT32 dims
        raise FormatError(f"{where}: matrix element whose array flags or dimensions are not integers")
    if dims.size > _MAX_DIMS:
        raise FormatError(f"{where}: matrix element with {dims.size} dimensions (at most {_MAX_DIMS} are read)")
    dims = [int(d) for d in dims]
    name = bytes(parts[2][1]).decode("ascii", "replace")
    mx_class = int(flags[0]) & 0xFF
    if mx_class not in _MX_NUMERIC:
        return name, _MX_NAMES.get(mx_class, f"class {mx_class}"), len(parts)
    parts += itertools.islice(sub, left - len(parts) + 1)  # the rest, up to one past the bound
    if len(parts) > left:
        raise _too_many(where)
    if any(d < 0 for d in dims):
        raise FormatError(f"{where}: variable {_shown(name)} has negative dimensions {dims[:8]}")
    count = math.prod(dims)  # a Python int: no overflow, and nothing is allocated from it
    is_complex = bool(int(flags[0]) & _COMPLEX_FLAG)
    if len(parts) < 4 + is_complex:
        raise FormatError(f"{where}: variable {_shown(name)} has no data")
    out_dtype = np.dtype(_MX_NUMERIC[mx_class])
    real = _numeric(parts[3][0], parts[3][1], endian, where)
    if real.size != count:
        raise FormatError(f"{where}: variable {_shown(name)} holds {real.size} values for dimensions {dims[:8]}")
    out_bytes = count * np.dtype(np.result_type(out_dtype, np.complex64) if is_complex else out_dtype).itemsize
    if out_bytes > room:
        raise FormatError(f"{where}: variable {_shown(name)} would take {out_bytes:,} bytes as "
                          f"{'complex ' if is_complex else ''}{_CLASS_NAMES[out_dtype.str[1:]]}, more than the "
                          f"{room:,}-byte bound left of this file's limit; not read")
    arr = _as_class(real, out_dtype, where, name)
    if is_complex:
        imag = _numeric(parts[4][0], parts[4][1], endian, where)
        if imag.size != count:
            raise FormatError(f"{where}: variable {_shown(name)}: imaginary part holds {imag.size} values, not "
                              f"{count}")
        imag = _as_class(imag, out_dtype, where, name, " in its imaginary part")
        arr = arr.astype(np.result_type(out_dtype, np.complex64)) + 1j * imag
    try:
        return name, arr.reshape(tuple(dims), order="F"), len(parts)
    except ValueError:  # zero values, yet dimensions whose other factors overflow an array's size
        raise FormatError(f"{where}: variable {_shown(name)} has dimensions no array can have {dims[:8]}") from None


def _inflate(payload, budget: int, where: str) -> bytes:
    """Inflate one miCOMPRESSED payload to at most ``budget`` bytes; past it, or truncated, a FormatError.

    Three inflaters, each taken only where it succeeds completely, all giving the same bytes (each checks the
    stream's Adler-32; ``tests/test_matv5_inflate.py`` holds them to zlib's bytes and errors on damaged streams):
    libdeflate's (the ``deflate`` package rfbench requires) first, into room for at most
    :data:`_ROOM_PER_BYTE` times the payload (and the bound): a BVP profile, whose doubles barely compress,
    inflates about 1.4 times faster than with ISA-L; ISA-L's (``isal``) for a stream that needs more room; zlib
    for any stream either refuses, runs past the bound or ends early, so every error is zlib's, word for word.
    """
    if _LIBDEFLATE is not None:
        try:
            return _LIBDEFLATE.zlib_decompress(payload, min(budget, max(_ROOM_MIN, _ROOM_PER_BYTE * len(payload))))
        except _LIBDEFLATE.DeflateError:  # damaged, or more than the room: the inflaters below decide
            pass
    if _ISAL is not None:
        d = _ISAL.decompressobj()
        try:
            inner = d.decompress(payload, budget + 1)
        except _ISAL.error:
            inner = None
        if inner is not None and len(inner) <= budget and d.eof and not d.unconsumed_tail:
            return inner
    return _inflate_zlib(payload, budget, where)


#: libdeflate inflates into a buffer sized beforehand: room for this many bytes per compressed byte (at least
#: :data:`_ROOM_MIN`); a stream that needs more (mostly zeros, say) is inflated by ISA-L.
_ROOM_PER_BYTE = 4
_ROOM_MIN = 1 << 16


def _inflate_zlib(payload, budget: int, where: str) -> bytes:
    """:func:`_inflate` with zlib alone (the reference the faster path is held to)."""
    d = zlib.decompressobj()
    try:
        inner = d.decompress(payload, budget + 1)
    except zlib.error as exc:
        raise FormatError(f"{where}: corrupt compressed element ({exc})") from None
    if len(inner) > budget or d.unconsumed_tail:
        raise FormatError(f"{where}: compressed element inflates past the {budget:,}-byte bound left of this "
                          f"file's limit; not read further")
    if not d.eof:
        raise FormatError(f"{where}: truncated compressed element")
    return inner


try:
    from isal import isal_zlib as _ISAL
except ImportError:  # pragma: no cover - a platform without an isal wheel: zlib alone
    _ISAL = None
try:
    import deflate as _LIBDEFLATE
except ImportError:  # pragma: no cover - a platform without a deflate wheel: ISA-L and zlib
    _LIBDEFLATE = None


def read_mat(source, *, max_bytes: int = MAX_MAT_BYTES) -> MatFile:
    """Read the numeric variables of a MATLAB v5 ``.mat`` file.

    Parameters
    ----------
    source : path-like, bytes, bytearray or memoryview
        The file, or its bytes.
    max_bytes : int
        Bound on the file's size, on the total its compressed elements inflate to and on the total bytes of the
        arrays returned (default :data:`MAX_MAT_BYTES`, 256 MiB); past any, a :class:`FormatError`.

    Returns
    -------
    MatFile
        ``{name: ndarray}`` in MATLAB's shape (column-major data, so ``a[i, j]`` is MATLAB's ``a(i+1, j+1)``)
        and dtype (a double variable stored compactly as uint8 comes back as float64, as in MATLAB);
        ``.skipped`` names the variables that are not numeric matrices.

    Raises
    ------
    FormatError
        Not a v5 MAT-file (too short, a v7.3/HDF5 file, a bad byte-order mark), a corrupt element, or a file
        past the bound.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        return read_mat_bytes(source, "<bytes>", max_bytes=max_bytes)
    path = Path(source)
    where = str(path)
    from rfbench.io.files import input_errors, open_input

    with input_errors(path, expected="a MAT-file"):
        with open_input(path, where, "a MAT-file") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > max_bytes:
                raise FormatError(f"{where}: {size:,} bytes, more than the {max_bytes:,}-byte limit")
            buf = fh.read(max_bytes + 1)
    return read_mat_bytes(buf, where, max_bytes=max_bytes)


def _endian(buf, where: str) -> str:
    """The byte order of a v5 file after the header checks (length, v7.3, byte-order mark)."""
    if len(buf) < 128:
        raise FormatError(f"{where}: {len(buf)} bytes is too short for a MAT-file header (128 bytes)")
    if _is_v73(buf):
        raise FormatError(f"{where}: a MATLAB v7.3 (HDF5) file; re-save it with save(..., '-v7') or read it with h5py")
    mark = bytes(buf[126:128])
    if mark == b"IM":
        return "<"
    if mark == b"MI":
        return ">"
    raise FormatError(f"{where}: not a MATLAB v5 MAT-file (no byte-order mark at bytes 126-127)")


def _is_v73(buf) -> bool:
    return bytes(buf[:10]) == b"MATLAB 7.3" or bytes(buf[512:520]) == b"\x89HDF\r\n\x1a\n"


def read_mat_bytes(buf, where: str = "MAT-file", *, max_bytes: int = MAX_MAT_BYTES) -> MatFile:
    """:func:`read_mat` of a file's bytes (``bytes``, ``bytearray`` or ``memoryview``); ``where`` names the file
    in error messages. The bytes and, separately, the total the compressed elements inflate to are bounded by
    ``max_bytes``."""
    buf = memoryview(buf).cast("B")
    if len(buf) > max_bytes:
        raise FormatError(f"{where}: {len(buf):,} bytes, more than the {max_bytes:,}-byte limit")
    endian = _endian(buf, where)
    out = MatFile()
    out.skipped = {}
    budget = max_bytes  # bytes all compressed elements together may still inflate to
    room = max_bytes  # bytes the arrays read so far leave for the rest, in their classes (widened)
    parsed = 0  # data elements parsed so far, at most MAX_MAT_ELEMENTS
    for mi_type, payload in _elements(buf, 128, len(buf), endian, where):
        parsed += 1
        if mi_type == _MI_COMPRESSED:
            if parsed >= MAX_MAT_ELEMENTS:  # it and the variable it holds
                raise _too_many(where)
            inner = memoryview(_inflate(payload, budget, where))
            budget -= len(inner)
            mi_type, payload = _only_matrix(inner, endian, where)
            parsed += 1
        elif mi_type != _MI_MATRIX:
            raise FormatError(f"{where}: unexpected top-level data element of type {mi_type}")
        if parsed > MAX_MAT_ELEMENTS:
            raise _too_many(where)
        name, value, parts = _matrix(payload, endian, where, MAX_MAT_ELEMENTS - parsed, room)
        parsed += parts
        if name in out or name in out.skipped:
            raise FormatError(f"{where}: variable {_shown(name)} appears twice; MATLAB writes each variable once, "
                              "and which one the file means is not guessed")
        if isinstance(value, str):
            out.skipped[name] = value
        else:
            out[name] = value
            room -= value.nbytes
    return out


def _only_matrix(inner, endian: str, where: str):
    """``(type, payload)`` of the one matrix element a compressed element's inflated bytes ``inner`` hold (as
    MATLAB writes them: one variable per compressed element, padding at most); anything else is a FormatError."""
    spans = _spans(inner, 0, len(inner), endian, where)
    first = next(spans, None)
    if first is None:
        raise FormatError(f"{where}: a compressed element that inflates to no data element")
    mi_type, start, size = first
    if mi_type != _MI_MATRIX:
        raise FormatError(f"{where}: a compressed element holding a data element of type {mi_type}, not a variable "
                          "(MATLAB writes one variable in each)")
    if next(spans, None) is not None:
        raise FormatError(f"{where}: a compressed element holding more than one data element (MATLAB writes one "
                          "variable in each)")
    return mi_type, inner[start:start + size]


@dataclass(frozen=True)
class MatLayout:
    """The layout of one uncompressed MAT-file, to read files laid out the same way without parsing them.

    Many files written by one program (the WiFi frames of a dataset) differ only in their values: the same
    variables, dimensions and element tags at the same offsets. :meth:`read` checks that a file's every byte
    outside the variables' data (from byte 124, the version, to the end) equals this layout's template and,
    if so, returns the variables as :func:`read_mat_bytes` would; otherwise it returns None and the caller
    parses the file. Equal bytes outside the data make the parse identical (the data's own bytes decide only
    the values), so the two paths never disagree.

    Build one with :func:`mat_layout`.
    """

    size: int
    template: bytes
    variables: tuple  # (name, offset, count, stored dtype, MATLAB dtype, dims)
    checked: tuple  # (start, stop) byte ranges that must equal the template

    def read(self, buf) -> MatFile | None:
        """The numeric variables of ``buf`` (NumPy arrays; views of ``buf`` where no conversion is needed),
        or None when ``buf`` is not laid out like the template (parse it with :func:`read_mat_bytes`)."""
        if len(buf) != self.size or _is_v73(buf):
            return None
        template = self.template
        for a, b in self.checked:
            if buf[a:b] != template[a:b]:
                return None
        out = MatFile()
        out.skipped = {}
        for name, offset, count, stored, matlab, dims in self.variables:
            arr = np.frombuffer(buf, dtype=stored, count=count, offset=offset)
            if arr.dtype != matlab:
                if _unheld(arr, matlab) is not None:  # the full read's error, with the file's name
                    return None
                arr = arr.astype(matlab)
            out[name] = arr.reshape(dims, order="F")
        return out


def mat_layout(buf, where: str = "MAT-file") -> MatLayout | None:
    """The :class:`MatLayout` of a file's bytes, or None when the file has compressed elements or complex
    variables (those are always parsed with :func:`read_mat_bytes`).

    Raises
    ------
    FormatError
        ``buf`` is not a readable v5 MAT-file (as :func:`read_mat_bytes`).
    """
    parsed = read_mat_bytes(buf, where)
    endian = _endian(buf, where)
    variables, holes = [], []
    for mi_type, start, size in _spans(buf, 128, len(buf), endian, where):
        if mi_type != _MI_MATRIX:
            return None
        parts = list(_spans(buf, start, start + size, endian, where))
        flags = struct.unpack_from(endian + "I", buf, parts[0][1])[0]
        name = bytes(buf[parts[2][1]:parts[2][1] + parts[2][2]]).decode("ascii", "replace")
        if (flags & 0xFF) not in _MX_NUMERIC:
            continue  # skipped variables are part of the checked bytes
        if flags & _COMPLEX_FLAG:
            return None
        _, data_start, data_size = parts[3]
        stored = np.dtype(_MI_DTYPES[parts[3][0]]).newbyteorder(endian)
        value = parsed[name]
        variables.append((name, data_start, data_size // stored.itemsize, stored, value.dtype, value.shape))
        holes.append((data_start, data_start + data_size))
    checked, pos = [], 124
    for a, b in sorted(holes):
        if a > pos:
            checked.append((pos, a))
        pos = max(pos, b)
    if pos < len(buf):
        checked.append((pos, len(buf)))
    return MatLayout(size=len(buf), template=bytes(buf), variables=tuple(variables), checked=tuple(checked))


@dataclass(frozen=True)
class MatHeader:
    """The header of the one matrix a compressed MAT-file holds, as :func:`compressed_header` reads it: its
    name, array class, whether complex, dimensions, the data type and byte count its real part's tag declares
    (``data_type`` None when not a numeric type), and the byte count of the whole matrix element; for an
    uncompressed matrix (:func:`plain_header`, :func:`single_matrix`) also where its real part's data starts."""

    name: str
    mx_class: int
    is_complex: bool
    dims: tuple
    data_type: str | None
    data_bytes: int
    matrix_bytes: int
    data_offset: int | None = None

    @property
    def numeric(self) -> bool:
        """Whether the array class is a numeric one (what :func:`read_mat_bytes` reads)."""
        return self.mx_class in _MX_NUMERIC


def compressed_header(buf, where: str = "MAT-file", *, max_bytes: int = MAX_MAT_BYTES,
                      peek: int = 1024) -> MatHeader | None:
    """The :class:`MatHeader` of a v5 file whose only top-level element is one ``miCOMPRESSED`` element
    holding a matrix, read from the first ``peek`` bytes that element inflates to; None for any other layout
    and for anything unusual (then parse the file with :func:`read_mat_bytes`, which says what is wrong).

    What it checks: the file header, that the compressed element's declared size fits the file with nothing
    but padding after it, that the file and the matrix's declared size are within ``max_bytes``, and that the
    matrix's flags, dimensions, name and real-part tag are well formed and lie in the inflated prefix. What it
    does not: the rest of the compressed stream (its data, its checksum and whether anything follows the matrix
    are seen only by a full read, which refuses a stream holding more than the one matrix).
    """
    buf = memoryview(buf).cast("B")
    if len(buf) > max_bytes:
        return None
    try:
        endian = _endian(buf, where)
        spans = list(_spans(buf, 128, len(buf), endian, where))
    except FormatError:
        return None
    if len(spans) != 1 or spans[0][0] != _MI_COMPRESSED:
        return None
    _, start, size = spans[0]
    try:
        head = zlib.decompressobj().decompress(buf[start:start + size], peek)
    except zlib.error:
        return None

    def tag(pos: int):
        """(type, payload start, size, next element) of the element at ``pos`` of ``head``, or None."""
        if pos + 8 > len(head):
            return None
        first, second = struct.unpack_from(endian + "II", head, pos)
        if first >> 16:
            if first >> 16 > 4:
                return None
            return first & 0xFFFF, pos + 4, first >> 16, pos + 8
        return first, pos + 8, second, pos + 8 + second + (-second) % 8

    top = tag(0)
    if top is None or top[0] != _MI_MATRIX or 8 + top[2] > max_bytes:
        return None
    parts, pos = [], top[1]
    for _ in range(3):  # flags, dimensions, name: whole in the prefix
        t = tag(pos)
        if t is None or t[1] + t[2] > len(head):
            return None
        parts.append(t)
        pos = t[3]
    data = tag(pos)  # the real part: only its tag need be in the prefix
    (ft, fs, fn, _), (dt, ds, dn, _), (nt, ns, nn, _) = parts
    if data is None or ft != 6 or fn < 4 or dt != 5 or dn % 4 or dn == 0 or nt not in (1, 2):
        return None
    if data[1] + data[2] > top[1] + top[2]:  # the real part must fit the matrix's declared size
        return None
    flags = struct.unpack_from(endian + "I", head, fs)[0]
    dims = struct.unpack_from(f"{endian}{dn // 4}i", head, ds)
    name = bytes(head[ns:ns + nn]).decode("ascii", "replace")
    return MatHeader(name=name, mx_class=flags & 0xFF, is_complex=bool(flags & _COMPLEX_FLAG), dims=tuple(dims),
                     data_type=_MI_DTYPES.get(data[0]), data_bytes=data[2], matrix_bytes=top[2])


def plain_header(buf, where: str = "MAT-file", *, max_bytes: int = MAX_MAT_BYTES) -> MatHeader | None:
    """The :class:`MatHeader` of a v5 file holding exactly one uncompressed, real matrix laid out as MATLAB writes
    it, or None for any other layout (then parse the file with :func:`read_mat_bytes`, which says what is wrong).

    The layout taken: the file header, then one ``miMATRIX`` element ending at the file's last byte, holding
    exactly the array flags (``miUINT32``, 8 bytes), the dimensions (``miINT32``), the name and the real part,
    which ends (with its padding) where the matrix ends. Every size is checked against the bytes present, so
    for a file it returns a header for, :func:`read_mat_bytes` reads that one variable without error whenever
    the real part holds as many values as the dimensions ask (``data_bytes`` / item size = their product, which
    the caller checks): nothing but the data's own values is left unread.
    """
    buf = memoryview(buf).cast("B")
    endian = _endian_within(buf, where, max_bytes)
    return None if endian is None else _matrix_header(buf, 128, endian)


def single_matrix(buf, where: str = "MAT-file", *, max_bytes: int = MAX_MAT_BYTES):
    """``(header, data, endian)`` of a v5 file whose only element is one real matrix laid out as MATLAB writes
    it, uncompressed (:func:`plain_header`) or as one ``miCOMPRESSED`` element spanning the rest of the file
    whose inflated bytes are exactly that matrix; ``data`` holds the matrix (the file's bytes, or the inflated
    ones) and ``header.data_offset`` is where its real part starts in ``data``. None for any other layout (parse
    the file with :func:`read_mat_bytes`).

    For a file it returns a result for, :func:`read_mat_bytes` finds the same one variable, from the same bytes,
    whenever the real part holds as many values as the dimensions ask (the caller checks). The inflation is the
    full read's (:func:`_inflate`, bounded by ``max_bytes``): a stream it refuses raises the very
    :class:`FormatError` the full read raises.
    """
    buf = memoryview(buf).cast("B")
    endian = _endian_within(buf, where, max_bytes)
    if endian is None or len(buf) < 136:
        return None
    top_type, size = struct.unpack_from(endian + "II", buf, 128)
    if top_type == _MI_MATRIX:
        h = _matrix_header(buf, 128, endian)
        return None if h is None else (h, buf, endian)
    if top_type != _MI_COMPRESSED or 136 + size != len(buf):
        return None
    inner = memoryview(_inflate(buf[136:], max_bytes, where))
    h = _matrix_header(inner, 0, endian)
    return None if h is None else (h, inner, endian)


def _endian_within(buf, where: str, max_bytes: int) -> str | None:
    """The byte order of a v5 file of at most ``max_bytes`` (``"<"`` or ``">"``), or None (too large, not v5)."""
    if len(buf) > max_bytes:
        return None
    try:
        return _endian(buf, where)
    except FormatError:
        return None


def _matrix_header(buf, pos: int, endian: str) -> MatHeader | None:
    """The :class:`MatHeader` of the ``miMATRIX`` element at ``pos`` of ``buf`` when it ends at the buffer's last
    byte and holds exactly flags (``miUINT32``, 8 bytes), dimensions (``miINT32``), a name and a real part that
    ends (with its padding) where the matrix ends, every size within the buffer; None otherwise."""
    n = len(buf)
    unpack = struct.unpack_from
    if pos + 8 > n:
        return None
    top_type, size = unpack(endian + "II", buf, pos)
    if top_type != _MI_MATRIX or pos + 8 + size != n:
        return None

    def tag(at: int):
        """(type, payload start, size, next element) of the sub-element at ``at``, or None."""
        if at + 8 > n:
            return None
        first, second = unpack(endian + "II", buf, at)
        if first >> 16:
            if first >> 16 > 4:
                return None
            return first & 0xFFFF, at + 4, first >> 16, at + 8
        if at + 8 + second > n:
            return None
        return first, at + 8, second, at + 8 + second + (-second) % 8

    flags = tag(pos + 8)
    if flags is None or flags[0] != 6 or flags[2] != 8 or flags[1] != pos + 16:
        return None
    dims = tag(flags[3])
    if dims is None or dims[0] != 5 or dims[2] % 4 or dims[2] == 0 or dims[1] == dims[3] - 4:  # not a small one
        return None
    name = tag(dims[3])
    if name is None:
        return None
    data = tag(name[3])
    if data is None or data[1] == data[3] - 4 or data[3] != n or data[0] not in _MI_DTYPES:  # full tag, at the end
        return None
    word = unpack(endian + "I", buf, flags[1])[0]
    if word & _COMPLEX_FLAG:
        return None
    shape = unpack(f"{endian}{dims[2] // 4}i", buf, dims[1])
    return MatHeader(name=bytes(buf[name[1]:name[1] + name[2]]).decode("ascii", "replace"), mx_class=word & 0xFF,
                     is_complex=False, dims=tuple(shape), data_type=_MI_DTYPES[data[0]], data_bytes=data[2],
                     matrix_bytes=size, data_offset=data[1])
