"""The resynchronisation kernel the nexmon and PicoScenes framers share (``hwlog.next_plausible``) against its
naive twin, over a real-layout capture with garbage spliced in."""

from __future__ import annotations

import numpy as np
import pytest

import naive
from rfbench.io import nexmon
from rfbench.io.hwlog import next_plausible


@pytest.mark.parametrize("seed", range(3))
def test_next_plausible_matches_naive(seed):
    rng = np.random.default_rng(seed)
    data = bytearray(nexmon.synthesize(seed, 12, chip="bcm43455c0", bandwidth_mhz=20))
    for _ in range(4):  # garbage between records (and inside them)
        at = int(rng.integers(24, len(data)))
        data[at:at] = rng.integers(0, 256, int(rng.integers(1, 40)), dtype=np.uint8).tobytes()
    data = bytes(data)
    b = np.frombuffer(data, dtype=np.uint8)
    link = -1  # the generator writes Ethernet frames, little-endian pcap headers
    starts = sorted({24, len(data) - 1, *rng.integers(24, len(data), 40).tolist()})
    found = 0
    for start in starts:
        got = next_plausible(b, start, nexmon._MIN_FRAME, nexmon._resumes_at, False, link)
        want = naive.naive_next_plausible(data, start, nexmon._MIN_FRAME,
                                          lambda p: naive.naive_nexmon_resumes_at(data, p, False, link))
        assert got == want, start
        found += got >= 0
    assert found > 0 and next_plausible(b, len(data) - 1, nexmon._MIN_FRAME, nexmon._resumes_at, False, link) == -1
