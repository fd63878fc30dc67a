"""The MAT reader's inflation: ISA-L's inflate where it succeeds, zlib's word for word where it does not.

``rfbench.io.matv5._inflate`` takes ISA-L's output only for a stream ISA-L inflates completely within the
bound; everything else is inflated again by zlib (``_inflate_zlib``, the reference), whose errors are the ones
raised. These tests hold the two to the same bytes and the same errors over valid, truncated, overlong and
damaged streams.
"""

from __future__ import annotations

import random
import zlib

import pytest

from rfbench.errors import FormatError
from rfbench.io import matv5


def _outcome(fn, payload, budget):
    try:
        return fn(payload, budget, "f.mat")
    except FormatError as exc:
        return f"error: {exc}"


def _stream(seed: int) -> bytes:
    rng = random.Random(seed)
    data = bytes(rng.randrange(8) for _ in range(3000)) * 4 + bytes(20000)
    return zlib.compress(data, rng.choice((1, 6, 9)))


def test_isal_is_the_fast_path():
    assert matv5._ISAL is not None  # rfbench requires isal; without it only zlib runs (and these tests say little)


@pytest.mark.parametrize("seed", range(3))
def test_damaged_streams_inflate_or_fail_as_zlib_does(seed):
    rng = random.Random(seed)
    good = _stream(seed)
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
        for budget in (1 << 22, 32000, 100):
            want = _outcome(matv5._inflate_zlib, payload, budget)
            got = _outcome(matv5._inflate, payload, budget)
            assert got == want, (payload[:16], budget)
            outcomes.add(want if isinstance(want, str) else "ok")
    assert "ok" in outcomes and any("incorrect data check" in o for o in outcomes)
    assert any("truncated" in o for o in outcomes) and any("bound" in o for o in outcomes)
