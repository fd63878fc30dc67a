"""The MAT reader's inflation: libdeflate's or ISA-L's inflate where it succeeds, zlib's word for word where
neither does.

``rfbench.io.matv5._inflate`` takes libdeflate's output for a stream it inflates completely into the room it is
given, then ISA-L's for a stream ISA-L inflates completely within the bound; everything else is inflated again
by zlib (``_inflate_zlib``, the reference), whose errors are the ones raised. These tests hold them to the same
bytes and the same errors over valid, truncated, overlong and damaged streams: streams that compress well
(which need more room than libdeflate is given, so ISA-L inflates them) and streams of doubles, as a BVP
profile holds (which libdeflate inflates).
"""

from __future__ import annotations

import random
import zlib

import numpy as np
import pytest

from rfbench.errors import FormatError
from rfbench.io import matv5


def _outcome(fn, payload, budget):
    try:
        return fn(payload, budget, "f.mat")
    except FormatError as exc:
        return f"error: {exc}"


def _stream(seed: int, doubles: bool = False) -> bytes:
    rng = random.Random(seed)
    if doubles:  # a profile's values: barely compressible
        data = np.random.default_rng(seed).normal(size=4000).astype("<f8").tobytes()
    else:
        data = bytes(rng.randrange(8) for _ in range(3000)) * 4 + bytes(20000)
    return zlib.compress(data, rng.choice((1, 6, 9)))


def test_isal_and_libdeflate_are_the_fast_paths():
    # rfbench requires both; without them only zlib runs (and these tests say little)
    assert matv5._ISAL is not None and matv5._LIBDEFLATE is not None


def test_libdeflate_inflates_a_profile_and_isal_a_stream_needing_more_room(monkeypatch):
    """Which inflater runs: a stream of doubles is libdeflate's alone (ISA-L and zlib made to fail), one that
    compresses 5 times or more does not fit libdeflate's room and is ISA-L's."""
    doubles, zeros = _stream(0, doubles=True), zlib.compress(bytes(200000))
    want = {id(doubles): zlib.decompress(doubles), id(zeros): zlib.decompress(zeros)}

    class _Refused:
        error = ValueError

        @staticmethod
        def decompressobj():
            raise AssertionError("ISA-L was asked")

    monkeypatch.setattr(matv5, "_ISAL", _Refused)
    monkeypatch.setattr(matv5, "_inflate_zlib", lambda *a: pytest.fail("zlib was asked"))
    assert matv5._inflate(doubles, 1 << 22, "f.mat") == want[id(doubles)]
    with pytest.raises(AssertionError, match="ISA-L was asked"):
        matv5._inflate(zeros, 1 << 22, "f.mat")
    monkeypatch.undo()
    assert matv5._inflate(zeros, 1 << 22, "f.mat") == want[id(zeros)]


@pytest.mark.parametrize("doubles", [False, True], ids=["compressible", "doubles"])
@pytest.mark.parametrize("seed", range(3))
def test_damaged_streams_inflate_or_fail_as_zlib_does(seed, doubles):
    rng = random.Random(seed)
    good = _stream(seed, doubles)
    cases = [good, good + b"trailing", good[:-1], good[:-4], good[: len(good) // 2], good[:2], b"", b"\x00" * 40]
    bad_check = bytearray(good)
    bad_check[-1] ^= 0x01  # the Adler-32 at the stream's end
    cases.append(bytes(bad_check))
    for _ in range(300):
        b = bytearray(good)
        for _ in range(rng.randint(1, 3)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        cases.append(bytes(b[: rng.choice((len(b), rng.randrange(len(b))))]))
    outcomes = set()
    for payload in cases:
        for budget in (1 << 22, 32000, 100) if not doubles else (1 << 22, len(good) * 2, 31999, 32000, 100):
            want = _outcome(matv5._inflate_zlib, payload, budget)
            got = _outcome(matv5._inflate, payload, budget)
            assert got == want, (payload[:16], budget)
            outcomes.add(want if isinstance(want, str) else "ok")
    assert "ok" in outcomes and any("incorrect data check" in o for o in outcomes)
    assert any("truncated" in o for o in outcomes) and any("bound" in o for o in outcomes)
