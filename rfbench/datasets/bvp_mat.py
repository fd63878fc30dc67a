"""The BVP file itself: a MATLAB v5 file holding ``velocity_spectrum_ro`` (20, 20, T), read by the bounded MAT
reader (:mod:`rfbench.io.matv5`): the profile (:func:`read_bvp_bytes`), or T alone from the header
(:func:`bvp_frames`). :mod:`rfbench.datasets.widar_bvp` names these for the rest of rfbench."""

from __future__ import annotations

from rfbench.errors import FormatError

__all__ = ["read_bvp", "read_bvp_bytes", "bvp_frames", "BVP_VARIABLE", "GRID", "MAX_BVP_BYTES"]

#: The variable a BVP file holds, and its velocity grid (per body-frame axis).
BVP_VARIABLE = "velocity_spectrum_ro"
GRID = 20
#: Largest BVP file read, and the most its compressed elements may inflate to: a real file (T ≤ ~40) holds
#: 20·20·40 doubles, 128 KB. T is bounded by the bytes per step as stored: up to ~1,300 for doubles (3,200
#: bytes a step), ~10,400 for a profile stored compactly as uint8 (400 bytes a step, a few KB compressed);
#: ``rfbench windows`` bounds the row width separately (``t_max``: ``MAX_T_MAX`` of its settings).
MAX_BVP_BYTES = 4 << 20


def read_bvp_bytes(buf, where: str):
    """The ``velocity_spectrum_ro`` array (20, 20, T) float64 of a BVP file's bytes.

    Raises
    ------
    FormatError
        Not a readable v5 MAT-file within :data:`MAX_BVP_BYTES`, no such variable, or not 20×20×T.
    """
    value = _profile_as_saved(buf, where)
    if value is not None:
        return value
    return _read_bvp_full(buf, where)


def _profile_as_saved(buf, where: str):
    """The profile of a file laid out as MATLAB's ``save`` writes a double array (one matrix, uncompressed or in
    one compressed element: :func:`rfbench.io.matv5.single_matrix`), as a view of its bytes (or of the inflated
    ones); None for any other file, which :func:`_read_bvp_full` parses. The values, and any error the
    inflation raises, are the full read's."""
    import numpy as np

    from rfbench.io.matv5 import single_matrix

    found = single_matrix(buf, where, max_bytes=MAX_BVP_BYTES)
    if found is None:
        return None
    h, data, endian = found
    if h.name != BVP_VARIABLE or h.mx_class != 6 or h.data_type != "f8":  # a double array stored as doubles
        return None
    dims = h.dims
    t = 1 if dims == (GRID, GRID) else dims[2] if len(dims) == 3 and dims[:2] == (GRID, GRID) else -1
    if t < 0 or h.data_bytes != GRID * GRID * t * 8:
        return None
    value = np.frombuffer(data, dtype=np.dtype(endian + "f8"), count=GRID * GRID * t, offset=h.data_offset)
    return value.reshape((GRID, GRID, t), order="F").astype(np.float64, copy=False)


def _read_bvp_full(buf, where: str):
    """:func:`read_bvp_bytes` by the general MAT reader (every layout, every error)."""
    import numpy as np

    from rfbench.io.matv5 import read_mat_bytes

    mat = read_mat_bytes(buf, where, max_bytes=MAX_BVP_BYTES)
    value = mat.get(BVP_VARIABLE)
    if value is None:
        other = sorted(mat) + sorted(mat.skipped)
        kind = f" (a {mat.skipped[BVP_VARIABLE]})" if BVP_VARIABLE in mat.skipped else ""
        raise FormatError(f"{where}: no numeric {BVP_VARIABLE} variable{kind}; holds {len(other)} other "
                          "variable(s)")
    if value.ndim == 2 and value.shape == (GRID, GRID):
        value = value.reshape(GRID, GRID, 1)  # MATLAB drops a trailing singleton dimension
    if value.ndim != 3 or value.shape[:2] != (GRID, GRID) or np.iscomplexobj(value):
        kind = " (complex)" if np.iscomplexobj(value) else ""
        raise FormatError(f"{where}: {BVP_VARIABLE} has shape {tuple(value.shape)}{kind}; expected real ({GRID}, "
                          f"{GRID}, T)")
    return value.astype(np.float64, copy=False)


def bvp_frames(buf, where: str) -> int:
    """T of a BVP file's bytes — for ingest, which records T and the file's sha256 and needs no values.

    A file laid out as MATLAB's ``save`` writes it is judged from its header, without building the array: one
    compressed element (:func:`rfbench.io.matv5.compressed_header`: the variable's name, a real numeric class,
    20×20×T dimensions, a real part whose declared size is 400·T values, all within :data:`MAX_BVP_BYTES`;
    the profile is not inflated), or one uncompressed matrix (:func:`rfbench.io.matv5.plain_header`: the same
    fields, and every element's size checked against the file's bytes, so only the values themselves are left
    unread). Any other file, and any header that is not exactly that, is parsed whole. For a file parsed whole
    this is ``read_bvp_bytes(buf, where).shape[2]`` or the same :class:`FormatError`; for one uncompressed
    matrix, the same T, unless its values are ones its class cannot hold. For a compressed one it is what the
    header says: the rest of the stream is not seen, so damage past the header (a corrupt or truncated stream, a
    wrong checksum, a second element after the matrix) is found by ``rfbench windows``, which inflates and
    parses every file it reads with :func:`read_bvp_bytes` and refuses such a file with the reader's error.
    """
    from rfbench.io.matv5 import compressed_header, plain_header

    compressed = len(buf) > 131 and 15 in (buf[128], buf[131])  # miCOMPRESSED, either byte order
    h = compressed_header(buf, where, max_bytes=MAX_BVP_BYTES) if compressed else None
    if h is None:
        h = plain_header(buf, where, max_bytes=MAX_BVP_BYTES)
    if h is not None and h.name == BVP_VARIABLE and h.numeric and not h.is_complex and h.data_type is not None:
        dims = h.dims
        t = 1 if dims == (GRID, GRID) else dims[2] if len(dims) == 3 and dims[:2] == (GRID, GRID) else None
        if t is not None and t >= 0 and h.data_bytes == GRID * GRID * t * _ITEMSIZE[h.data_type]:
            return int(t)
    return int(read_bvp_bytes(buf, where).shape[2])


#: Bytes per value of the MAT-file data types (:data:`rfbench.io.matv5._MI_DTYPES`' codes).
_ITEMSIZE = {"i1": 1, "u1": 1, "i2": 2, "u2": 2, "i4": 4, "u4": 4, "f4": 4, "f8": 8, "i8": 8, "u8": 8}


def read_bvp(path, where: str | None = None):
    """:func:`read_bvp_bytes` of a file (read through the safe opener, at most :data:`MAX_BVP_BYTES`)."""
    from rfbench.io.files import read_input_bytes

    return read_bvp_bytes(read_input_bytes(path, cap=MAX_BVP_BYTES, expected="a BVP .mat file"),
                          where or str(path))
