"""Property test: thousands of damaged logs never crash the parser, and it always agrees with its naive twin."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rfbench.io.intel5300 import count_records, read
from rfbench.io.writer import LogBuilder, synthetic_log
from tests.conftest import CONFORMANCE
from tests.test_intel5300 import assert_counts_match, assert_matches_naive


def _bases() -> list[bytes]:
    bases = [
        synthetic_log(12, nrx=3, ntx=1, seed=1, non_csi_every=3, non_csi_bytes=20),
        synthetic_log(6, nrx=2, ntx=3, seed=2),
        synthetic_log(8, nrx=1, ntx=2, seed=3),
        LogBuilder().bfee(np.ones((30, 3, 3, 2), np.int8)).record(0xC1, bytes(10))
        .bfee(np.full((30, 1, 1, 2), -1, np.int8)).to_bytes(),
    ]
    real = CONFORMANCE / "intel5300"
    for name, limit in (("example.dat", None), ("log.all_csi.6.7.6", None), ("sample_0x5_64_3000.dat", 6000)):
        path = Path(real, name)
        if path.exists():
            bases.append(path.read_bytes()[:limit])
    return bases


BASES = _bases()


@st.composite
def damaged_logs(draw):
    data = bytearray(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "set", "insert", "delete", "duplicate", "truncate"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "flip" and data:
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "set" and data:
            data[pos] = draw(st.sampled_from([0x00, 0xFF, 0xBB, 0x07, 0x03, 0x80]))
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=40))
        elif op == "delete":
            del data[pos: pos + draw(st.integers(1, 40))]
        elif op == "duplicate":
            width = draw(st.integers(1, 300))
            data[pos:pos] = data[pos: pos + width]
        elif op == "truncate":
            del data[pos:]
    return bytes(data)


@pytest.mark.long
@settings(max_examples=2500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged_logs())
def test_damaged_logs_never_crash_and_match_the_naive_twin(data):
    log = read(data)
    assert_matches_naive(log, data)
    assert_counts_match(count_records(data), log)
    # every record is accounted for: nothing is read from past the end
    assert log.csi.shape[0] == log.n_records
    assert np.abs(log.csi.real).max(initial=0) <= 128 and np.abs(log.csi.imag).max(initial=0) <= 128


@pytest.mark.long
@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=600))
def test_arbitrary_bytes_never_crash(data):
    log = read(data)
    assert_matches_naive(log, data)
    assert_counts_match(count_records(data), log)
