"""Forged input files for the robustness and fuzz tests: .npy headers that declare more than the file holds, and
.npz archives whose member is a valid deflate stream of zeros that expands ~1000:1 (a "zip bomb" with honest
sizes and CRC), built in milliseconds without compressing anything.

The deflate stream (RFC 1951) is two blocks: a stored block with the .npy header, then one fixed-Huffman block
holding a literal 0 and matches "length 258, distance 1" (code 285: 8 bits ``11000101``; distance code 0: 5 bits
``00000``), 13 bits per 258 zero bytes. After the block header, the literal and one match the bit position is a
multiple of 8, and eight matches are exactly 13 bytes, so the bulk of the stream is one 13-byte pattern
repeated. The CRC-32 of the expanded member is computed with zlib's crc32_combine algorithm (GF(2) matrices),
so nothing of its size is ever materialised.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
from numpy.lib import format as npy_format


def npy_header(shape, dtype="<f8", fortran: bool = False) -> bytes:
    """The bytes of a version 1.0 .npy header declaring ``shape`` and ``dtype`` (no data)."""
    import io

    buf = io.BytesIO()
    npy_format.write_array_header_1_0(buf, {"descr": npy_format.dtype_to_descr(np.dtype(dtype)),
                                            "fortran_order": fortran, "shape": tuple(shape)})
    return buf.getvalue()


class _Bits:
    def __init__(self):
        self.bits: list[int] = []

    def lsb(self, value: int, n: int) -> None:  # header fields: least significant bit first
        self.bits += [(value >> i) & 1 for i in range(n)]

    def code(self, value: int, n: int) -> None:  # Huffman codes: most significant bit first
        self.bits += [(value >> (n - 1 - i)) & 1 for i in range(n)]

    def bytes(self) -> bytes:
        assert len(self.bits) % 8 == 0
        return bytes(sum(b << i for i, b in enumerate(self.bits[k:k + 8])) for k in range(0, len(self.bits), 8))


_LITERAL_0 = (0x30, 8)
_MATCH_258 = (0xC5, 8)
_DIST_1 = (0, 5)


def deflate_zeros(prefix: bytes, zeros: int) -> bytes:
    """A raw deflate stream that inflates to ``prefix`` followed by ``zeros`` zero bytes (``zeros >= 259``)."""
    assert zeros >= 259 and len(prefix) < 65536
    out = bytearray()
    out += bytes([0])  # BFINAL=0, BTYPE=00 (stored), padded to the byte
    out += struct.pack("<HH", len(prefix), len(prefix) ^ 0xFFFF) + prefix
    head = _Bits()
    head.lsb(1, 1)
    head.lsb(1, 2)  # BFINAL=1, BTYPE=01 (fixed Huffman)
    head.code(*_LITERAL_0)
    head.code(*_MATCH_258)
    head.code(*_DIST_1)
    out += head.bytes()  # 3 + 8 + 13 = 24 bits
    left = zeros - 1 - 258
    groups, left = divmod(left, 8 * 258)
    eight = _Bits()
    for _ in range(8):
        eight.code(*_MATCH_258)
        eight.code(*_DIST_1)
    out += eight.bytes() * groups
    tail = _Bits()
    tail.bits = []
    for _ in range(left):
        tail.code(*_LITERAL_0)
    tail.code(0, 7)  # end of block
    tail.bits += [0] * (-len(tail.bits) % 8)
    out += tail.bytes()
    return bytes(out)


def _gf2_times(mat, vec):
    s, i = 0, 0
    while vec:
        if vec & 1:
            s ^= mat[i]
        vec >>= 1
        i += 1
    return s


def _gf2_square(mat):
    return [_gf2_times(mat, mat[n]) for n in range(32)]


def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """CRC-32 of A + B from crc32(A), crc32(B) and len(B) (zlib's crc32_combine)."""
    if len2 <= 0:
        return crc1
    op = [0xEDB88320] + [1 << n for n in range(31)]  # the CRC of one more zero bit
    for _ in range(3):
        op = _gf2_square(op)  # ... of 2, 4, then 8 zero bits: one zero byte
    while len2:
        if len2 & 1:
            crc1 = _gf2_times(op, crc1)
        len2 >>= 1
        op = _gf2_square(op)
    return crc1 ^ crc2


def crc32_zeros(n: int) -> int:
    """crc32 of ``n`` zero bytes, by doubling."""
    result, block, size = 0, zlib.crc32(b"\0"), 1
    done = 0
    while n:
        if n & 1:
            result = crc32_combine(result, block, size) if done else block
            done += size
        n >>= 1
        if n:
            block = crc32_combine(block, block, size)
            size *= 2
    return result


def write_zip(path, name: str, raw_deflate: bytes, size: int, crc: int) -> None:
    """A one-member zip (no zip64: sizes below 4 GiB) holding an already deflated member."""
    fname = name.encode()
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, crc, len(raw_deflate), size, len(fname), 0)
    central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0x21, crc, len(raw_deflate), size,
                          len(fname), 0, 0, 0, 0, 0, 0) + fname
    offset = len(local) + len(fname) + len(raw_deflate)
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central), offset, 0)
    with open(path, "wb") as fh:
        fh.write(local + fname + raw_deflate + central + end)


def npz_bomb(path, name: str, shape, dtype="<c8") -> int:
    """An .npz whose member ``name`` is a zero array of ``shape`` and ``dtype``, deflated ~1000:1 with honest
    zip sizes and CRC. Returns the member's expanded size in bytes."""
    header = npy_header(shape, dtype)
    zeros = int(np.prod(shape, dtype=object)) * np.dtype(dtype).itemsize
    stream = deflate_zeros(header, zeros)
    size = len(header) + zeros
    crc = crc32_combine(zlib.crc32(header), crc32_zeros(zeros), zeros)
    write_zip(path, f"{name}.npy", stream, size, crc)
    return size


def mat_bomb(path, name: str = "CSIamp", shape=(3, 114, 800_000)) -> int:
    """A MATLAB v5 file whose one variable (double zeros of ``shape``) sits in a miCOMPRESSED element: a valid
    zlib stream (header, the deflate stream of :func:`deflate_zeros`, Adler-32) that inflates ~160:1. Returns
    the inflated size in bytes."""
    n = 1
    for d in shape:
        n *= d
    padded = name.encode() + b"\0" * (-len(name) % 8)

    def element(mi_type: int, payload: bytes) -> bytes:
        return struct.pack("<II", mi_type, len(payload)) + payload + b"\0" * (-len(payload) % 8)

    body = (element(6, struct.pack("<II", 6, 0))  # array flags: mxDOUBLE_CLASS
            + element(5, struct.pack(f"<{len(shape)}i", *shape))
            + struct.pack("<II", 1, len(name)) + padded
            + struct.pack("<II", 9, n * 8))  # miDOUBLE real part, then its n * 8 zero bytes
    matrix_tag = struct.pack("<II", 14, len(body) + n * 8)
    prefix = matrix_tag + body
    a0 = zlib.adler32(prefix)
    low, high = a0 & 0xFFFF, a0 >> 16
    adler = ((high + (n * 8) * low) % 65521) << 16 | low
    stream = b"\x78\x01" + deflate_zeros(prefix, n * 8) + struct.pack(">I", adler)
    header = (b"MATLAB 5.0 MAT-file, written by tests/forge.py".ljust(116, b" ") + b"\0" * 8
              + struct.pack("<H", 0x0100) + b"IM")
    with open(path, "wb") as fh:
        fh.write(header + struct.pack("<II", 15, len(stream)) + stream)
    return len(prefix) + n * 8
