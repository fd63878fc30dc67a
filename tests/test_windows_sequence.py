"""WindowSequence: the map-style dataset protocol (len, indexing with negatives, IndexError past the end),
iteration, pickling (by value, or by index path for memory-mapped files) and a loader's use of it, without torch."""

from __future__ import annotations

import multiprocessing
import pickle

import numpy as np
import pytest

from rfbench.datasets.windows import WindowSequence, WindowSettings, build_windows, write_windows
from rfbench.errors import ValidationError
from tests.windowsdata import mmfi_case


@pytest.fixture(scope="module")
def side(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("seq")
    _, _, split = mmfi_case(tmp)
    write_windows(split, "test", tmp / "out", WindowSettings(length=2))
    return build_windows(split, "test", WindowSettings(length=2)), tmp / "out" / "index.json"


def test_indexing_like_a_sequence(side):
    w, _ = side
    seq = w.sequence()
    assert len(seq) == len(w) == 8
    x, y = seq[0]
    assert isinstance(x, np.ndarray) and isinstance(y, np.ndarray)
    assert np.array_equal(x, w.x[0]) and np.array_equal(y, w.y[0])
    assert np.array_equal(seq[-1][0], w.x[7]) and np.array_equal(seq[-8][1], w.y[0])
    assert np.array_equal(seq[np.int64(3)][0], w.x[3])
    for bad in (8, -9, 10**9):
        with pytest.raises(IndexError):
            seq[bad]
    with pytest.raises(TypeError):
        seq[1.0]
    x[:] = 0  # samples are copies
    assert not np.array_equal(seq[0][0], x)


def test_iteration_yields_every_sample_in_row_order(side):
    w, _ = side
    samples = list(w.sequence())
    assert len(samples) == 8
    assert np.array_equal(np.stack([s[0] for s in samples]), w.x)
    assert np.array_equal(np.stack([s[1] for s in samples]), w.y)


def test_opened_from_an_index_it_maps_x_and_pickles_by_path(side):
    w, index = side
    seq = WindowSequence.open(index)
    assert isinstance(seq.x, np.memmap) and len(seq) == 8
    data = pickle.dumps(seq)
    assert len(data) < 1000  # the path, not the arrays
    again = pickle.loads(data)
    assert np.array_equal(again[5][0], w.x[5]) and np.array_equal(again[-1][1], w.y[-1])


def test_in_memory_sequences_pickle_by_value(side):
    w, _ = side
    again = pickle.loads(pickle.dumps(w.sequence()))
    assert np.array_equal(again[2][0], w.x[2])


def _batch_in_another_process(args):
    seq, rows = args
    return np.stack([seq[i][0] for i in rows]), np.stack([seq[i][1] for i in rows])


def test_a_loader_worker_process_reads_batches(side):
    # What torch.utils.data.DataLoader does with num_workers > 0: pickle the dataset to a worker process, index
    # it with a batch of row numbers and collate the samples.
    w, index = side
    seq = WindowSequence.open(index)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        x, y = pool.map(_batch_in_another_process, [(seq, [6, 1, -1])])[0]
    assert np.array_equal(x, w.x[[6, 1, 7]]) and np.array_equal(y, w.y[[6, 1, 7]])


def test_torch_dataloader_accepts_it_when_torch_is_installed(side):
    torch = pytest.importorskip("torch")
    w, index = side
    loader = torch.utils.data.DataLoader(WindowSequence.open(index), batch_size=3, shuffle=False)
    batches = list(loader)
    assert [tuple(b[0].shape) for b in batches] == [(3, *w.x.shape[1:])] * 2 + [(2, *w.x.shape[1:])]
    assert np.array_equal(torch.cat([b[1] for b in batches]).numpy(), w.y)


def test_mismatched_arrays_are_refused():
    with pytest.raises(ValidationError, match="one row per sample"):
        WindowSequence(np.zeros((3, 2)), np.zeros(4))
