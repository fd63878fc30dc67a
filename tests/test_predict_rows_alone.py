"""rfbench.nn.predict: each row's output must be the model's answer to that row alone, and how far it may move
between batches is set per value, never by the size of the model's other outputs; class scores must keep their
argmax."""

from __future__ import annotations

import numpy as np
import pytest

import predict_models as pm
from predict_models import model_bytes, numpy_helper, tensor
from rfbench._rerun import ENV
from rfbench.errors import ValidationError
from rfbench.nn import predict as P


def position_table(y: np.ndarray, classes: int, signal: float, shift: float) -> bytes:
    """A model that never reads its input: row ``i`` of its batch gets ``signal`` added to the score of class
    ``y[i]``, and every score ``shift`` added (the argmax is the table's). Run over the rows of ``y`` in one batch,
    it scores 1.0."""
    table = np.zeros((len(y), classes), np.float32)
    table[np.arange(len(y)), y] = signal
    inits = [numpy_helper.from_array(table, "table"), numpy_helper.from_array(np.array(0, np.int64), "zero_i"),
             numpy_helper.from_array(np.array(1, np.int64), "one_i"),
             numpy_helper.from_array(np.array(shift, np.float32), "shift")]
    nodes = [pm.helper.make_node("Shape", ["x"], ["s"]),
             pm.helper.make_node("Gather", ["s", "zero_i"], ["n"], axis=0),
             pm.helper.make_node("Range", ["zero_i", "n", "one_i"], ["pos"]),
             pm.helper.make_node("Gather", ["table", "pos"], ["t"], axis=0),
             pm.helper.make_node("Add", ["t", "shift"], ["scores"])]
    return model_bytes(nodes, [tensor("x", ["N", *pm.ROW])], [tensor("scores", ["N", classes])], inits)


@pytest.mark.parametrize("every_row", [False, True])
@pytest.mark.parametrize("signal, shift", [(10.0, 1e6), (1e-5, 0.0)])
def test_a_label_table_hidden_under_a_shift_or_below_the_tolerance_is_refused(tmp_path, monkeypatch, every_row,
                                                                              signal, shift):
    """A table of the labels read off each row's place in the batch, +10 on the true class and +1e6 on every
    score: the allowed movement was 1e-4 x the largest output of the rows compared (100), so the table's +10
    passed predict's probe and verify's re-run (every row, in other batches) and scored 1.0. Without the shift,
    +1e-5 on the true class passed the same way (under the floor of 1e-4). Both are refused now; an honest model
    passes the same checks."""
    folder, _ = pm.gesture_windows(tmp_path / "win", n=64, classes=4)
    y = np.load(folder / "y.npy")
    model = pm.save(tmp_path / "table.onnx", position_table(y, 4, signal, shift))
    if every_row:
        monkeypatch.setenv(ENV, "{}")
    with pytest.raises(ValidationError, match="depends on the other rows of its batch") as info:
        P.predict(model, folder)
    assert ("63 row(s)" if every_row else "8 row(s)") in str(info.value)
    w, b = pm.linear_weights(outputs=4)
    honest = P.predict(pm.save(tmp_path / "lin.onnx", pm.linear(w, b)), folder)
    shifted = P.predict(pm.save(tmp_path / "lin_shift.onnx", pm.linear(w, b + np.float32(1e6))), folder)
    assert honest.pred.shape == shifted.pred.shape == (64, 4)


def test_a_large_output_does_not_widen_the_tolerance_of_the_others():
    """Each value may move by 1e-4 x max(1, |that value|): a row holding 1e6 lets that value move by 100, not
    its neighbours (they moved by 0.1 and passed before)."""
    want = np.array([[1e6, 0.5], [3.0, -2.0]], np.float32)
    assert P._same_rows(want + np.float32(50.0) * np.array([[1, 0], [0, 0]], np.float32), want)
    moved = want.copy()
    moved[0, 1] += 0.1
    assert not P._same_rows(moved, want)
    moved = want.copy()
    moved[1, 0] += 0.1
    assert not P._same_rows(moved, want)
    assert P._first_differing(moved, want) == 1


def test_float_noise_between_batch_sizes_passes_and_class_scores_keep_their_argmax():
    """A few units in the last place (onnxruntime's kernels sum in another order for another batch size) pass,
    scores or not, at any size; scores whose largest class changes do not, however close the two classes."""
    rng = np.random.default_rng(0)
    for scale in (1e-3, 1.0, 30.0, 1e6):
        want = (rng.standard_normal((16, 5)) * scale).astype(np.float32)
        noisy = want.copy()
        for _ in range(4):
            noisy = np.nextafter(noisy, np.where(rng.random(noisy.shape) < 0.5, np.inf, -np.inf)).astype(np.float32)
        assert P._same_rows(noisy, want) and P._same_rows(noisy, want, scores=True)
    want = np.array([[1e6 + 10, 1e6, 1e6], [0.0, 1e-5, 0.0]], np.float32)
    swapped = np.array([[1e6, 1e6 + 10, 1e6], [1e-5, 0.0, 0.0]], np.float32)
    assert P._same_rows(swapped, want)  # as values, within 1e-4 x max(1, |value|): 10 of 1e6, 1e-5 of 0
    assert not P._same_rows(swapped[1:], want[1:], scores=True)
    assert not P._same_rows(swapped[:1], want[:1], scores=True)
    assert P._first_differing(swapped, want, scores=True) == 0
