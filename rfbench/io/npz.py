"""``.npz`` archives written as one list of buffers: stored (uncompressed) zip members, each CRC computed once.

:func:`numpy.savez` goes through :mod:`zipfile` member by member: it copies every array in chunks
(``tobytes``), computes each member's CRC while writing, and pays :mod:`zipfile`'s per-member bookkeeping;
for the archives ``rfbench parse`` writes (a dozen small header arrays beside one large CSI array) that cost
more than parsing the log (measured, docs/parse.md). :func:`npz_buffers` builds the same archive as a list of
buffers instead — the zip headers as ``bytes``, each array's data as a view of the array itself — so a
single ``os.writev`` writes it with no copy in user space, and the only pass over the data before the write
is the CRC-32 (ISA-L's when the ``isal`` package is installed, as rfbench requires: the same values as
``zlib.crc32`` at a small fraction of its cost; ``zlib``'s otherwise; both release the GIL on large buffers).

Each member ``NAME.npy`` holds exactly the bytes :func:`numpy.save` writes for that array (format 1.0
header, same padding), so :func:`numpy.load` reads the archive like one from :func:`numpy.savez`. Members
are stored (method 0) with fixed timestamps (1980-01-01 00:00), so the same arrays always give the same
bytes. Archives past the classic zip limits (4 GiB, 65,535 members) need zip64: :func:`npz_buffers` raises
:class:`ArchiveTooLarge` and callers fall back to :func:`numpy.savez`.
"""

from __future__ import annotations

import struct
from typing import Mapping

import numpy as np

try:  # ISA-L's CRC-32 (carry-less multiplication): the values of zlib.crc32, many times faster (docs/parse.md)
    from isal.isal_zlib import crc32 as _crc32
except ImportError:  # pragma: no cover - a platform without an isal wheel
    from zlib import crc32 as _crc32

__all__ = ["npz_buffers", "npy_header", "ArchiveTooLarge", "ZIP32_LIMIT"]

#: Largest archive (and member count) written without zip64.
ZIP32_LIMIT = 0xFFFFFFFF
_MAX_MEMBERS = 0xFFFF
_SMALL = 64 << 10  # members up to this many data bytes are copied into the headers' buffer
_GROWTH_AXIS_MAX_DIGITS = 21  # numpy.lib.format: spare room after the shape so a header can grow in place
_ARRAY_ALIGN = 64
_DOS_DATE = (0 << 9) | (1 << 5) | 1  # 1980-01-01, the earliest DOS date
_DOS_TIME = 0
_VERSION = 20  # 2.0: stored members, no zip64
_MADE_BY = (3 << 8) | _VERSION  # Unix
_EXTERNAL_ATTR = (0o100644 << 16)  # a regular file, rw-r--r--
_LOCAL = struct.Struct("<IHHHHHIIIHH")
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
_END = struct.Struct("<IHHHHIIH")


class ArchiveTooLarge(ValueError):
    """The archive would need zip64 (a member or the whole archive past 4 GiB, or more than 65,535 members)."""


_HEADERS: dict = {}  # (dtype, shape) -> header: a job's archives repeat the same few


def npy_header(array: np.ndarray) -> bytes:
    """The ``.npy`` format 1.0 header :func:`numpy.save` writes for a C-ordered ``array`` (magic, length,
    the header dictionary padded with spaces to a multiple of 64 bytes, newline)."""
    key = (array.dtype, array.shape)
    header = _HEADERS.get(key)
    if header is None:
        header = _npy_header(array.dtype, array.shape)
        if len(_HEADERS) >= 4096:
            _HEADERS.clear()
        _HEADERS[key] = header
    return header


def _npy_header(dtype: np.dtype, shape: tuple) -> bytes:
    # numpy's dtype_to_descr is dtype.str for a plain dtype (no fields, no subarray, no metadata)
    descr = dtype.str if dtype.names is None and dtype.subdtype is None and not dtype.metadata \
        else np.lib.format.dtype_to_descr(dtype)
    text = "{'descr': %r, 'fortran_order': False, 'shape': %r, }" % (descr, shape)
    if shape:
        text += " " * (_GROWTH_AXIS_MAX_DIGITS - len(repr(shape[0])))
    body = text.encode("latin1")
    hlen = len(body) + 1
    padlen = _ARRAY_ALIGN - ((6 + 2 + 2 + hlen) % _ARRAY_ALIGN)
    if hlen + padlen > 0xFFFF:
        raise ArchiveTooLarge("an array header too long for .npy format 1.0")
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", hlen + padlen) + body + b" " * padlen + b"\n"


def _data(array: np.ndarray) -> memoryview:
    """The bytes of ``array`` in C order, without a copy when it is already C-contiguous."""
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    return memoryview(array.reshape(-1).view(np.uint8))


def npz_buffers(arrays: Mapping[str, np.ndarray]) -> tuple[list, int]:
    """The buffers of an ``.npz`` archive of ``arrays`` (in order) and their total length.

    Parameters
    ----------
    arrays : mapping of str to ndarray
        Member names (without ``.npy``; ASCII) to arrays of a plain dtype (object arrays are refused, as
        ``numpy.save(allow_pickle=False)`` would).

    Returns
    -------
    buffers : list
        Bytes and memoryviews (format ``B``) to write one after another (``os.writev``): the data of each
        array over 64 KiB is a view of the array (keep it unchanged until written); the zip headers and the
        small arrays between them are joined into one ``bytes`` each.
    size : int
        Total bytes.

    Raises
    ------
    ArchiveTooLarge
        The archive needs zip64; write it with :func:`numpy.savez` instead.
    ValueError
        An object array, or a name that is not ASCII.
    """
    if len(arrays) > _MAX_MEMBERS:
        raise ArchiveTooLarge(f"{len(arrays)} members need zip64")
    buffers: list = []
    small: list[bytes] = []  # consecutive small members, joined into one buffer
    central: list[bytes] = []
    offset = 0
    for key, array in arrays.items():
        array = np.asanyarray(array)
        if array.dtype.hasobject:
            raise ValueError(f"{key}: object arrays cannot be stored without pickles")
        name = f"{key}.npy".encode("ascii")
        header = npy_header(array)
        data = _data(array)
        size = len(header) + data.nbytes
        if size >= ZIP32_LIMIT or offset >= ZIP32_LIMIT:
            raise ArchiveTooLarge(f"member {key} needs zip64")
        if data.nbytes <= _SMALL:  # copied: one buffer and one CRC call instead of two of each
            body = header + data
            crc = _crc32(body)
        else:
            crc = _crc32(data, _crc32(header))
        local = _LOCAL.pack(0x04034B50, _VERSION, 0, 0, _DOS_TIME, _DOS_DATE, crc, size, size, len(name), 0)
        central.append(_CENTRAL.pack(0x02014B50, _MADE_BY, _VERSION, 0, 0, _DOS_TIME, _DOS_DATE, crc, size, size,
                                     len(name), 0, 0, 0, 0, _EXTERNAL_ATTR, offset) + name)
        if data.nbytes <= _SMALL:
            small += [local, name, body]
        else:
            small += [local, name, header]
            buffers += [b"".join(small), data]
            small = []
        offset += len(local) + len(name) + size
    directory = b"".join(central)
    if offset + len(directory) >= ZIP32_LIMIT:
        raise ArchiveTooLarge("the archive needs zip64")
    end = _END.pack(0x06054B50, 0, 0, len(central), len(central), len(directory), offset, 0)
    buffers.append(b"".join(small + [directory, end]))
    return buffers, offset + len(directory) + len(end)
