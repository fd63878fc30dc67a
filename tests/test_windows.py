"""Fixed-length windows with a stride: hand-computed cases, the naive twin, awkward inputs."""

from __future__ import annotations

import numpy as np
import pytest

import naive
from rfbench.csi.windows import count_windows, make_windows, window_ranges
from rfbench.datasets.manifest import RecordingTable
from rfbench.errors import ValidationError


def _triples(w):
    return list(zip(w.recording.tolist(), w.start.tolist(), w.stop.tolist()))


def test_hand_computed_windows():
    # frames 10, length 4, stride 3: starts 0, 3, 6 (6 + 4 = 10 fits; 9 + 4 = 13 does not) → 3 windows.
    # frames 3 < length 4 → none. frames 4 → exactly one, [0, 4).
    w = make_windows([10, 3, 4], 4, 3, ids=["a", "b", "c"])
    assert _triples(w) == [(0, 0, 4), (0, 3, 7), (0, 6, 10), (2, 0, 4)]
    assert w.recording_ids().tolist() == ["a", "a", "a", "c"]
    assert w.to_records()[3] == {"id": "c", "start": 0, "stop": 4}
    assert count_windows([10, 3, 4], 4, 3).tolist() == [3, 0, 1]
    assert window_ranges(10, 4, 3) == [(0, 4), (3, 7), (6, 10)]


def test_default_stride_is_length_so_windows_tile_without_overlap():
    # 7 frames of length 2 → [0,2) [2,4) [4,6); frame 6 is a dropped tail.
    assert window_ranges(7, 2) == [(0, 2), (2, 4), (4, 6)]


def test_stride_larger_than_length_skips_frames():
    # frames 10, length 2, stride 5 → [0,2) and [5,7); 10 + 2 > 10 stops there.
    assert window_ranges(10, 2, 5) == [(0, 2), (5, 7)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_naive_on_random_inputs(seed):
    rng = np.random.default_rng(seed)
    frames = rng.integers(0, 60, size=25)
    length = int(rng.integers(1, 12))
    stride = int(rng.integers(1, 12))
    w = make_windows(frames, length, stride)
    assert _triples(w) == naive.naive_windows(frames.tolist(), length, stride)
    assert len(w) == int(count_windows(frames, length, stride).sum())


def test_awkward_inputs():
    empty = make_windows([], 5)
    assert len(empty) == 0 and empty.recording.dtype == np.int64
    assert len(make_windows([0, 0, 0], 1)) == 0
    one = make_windows([1], 1)
    assert _triples(one) == [(0, 0, 1)]
    # whole-number floats are accepted (counts read from JSON or arrays)
    assert _triples(make_windows(np.array([3.0]), 3)) == [(0, 0, 3)]


@pytest.mark.parametrize("bad", [
    dict(frames=[5], length=0),
    dict(frames=[5], length=2, stride=0),
    dict(frames=[5], length=2.5),
    dict(frames=[-1], length=2),
    dict(frames=[1.5], length=2),
    dict(frames=[[1, 2]], length=2),
    dict(frames=[np.nan], length=2),
])
def test_invalid_parameters_are_validation_errors(bad):
    with pytest.raises(ValidationError):
        make_windows(**bad)


def test_windows_from_a_recording_table_carry_its_ids():
    table = RecordingTable.from_recordings([{"id": "x", "frames": 5, "files": []},
                                            {"id": "y", "frames": 2, "files": []}])
    w = make_windows(table, 2, 1)
    # x: [0,2) [1,3) [2,4) [3,5); y: [0,2)
    assert w.ids == ("x", "y")
    assert _triples(w) == [(0, 0, 2), (0, 1, 3), (0, 2, 4), (0, 3, 5), (1, 0, 2)]
