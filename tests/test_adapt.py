"""rfbench.train.adapt and ``rfbench adapt``: pure objectives, exact finite differences, monotone descent."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import naive
from rfbench.cli import app
from rfbench.errors import ValidationError
from rfbench.io.files import save_npz
from rfbench.train import adapt as A

SMALL = A.AdaptSettings(rank=1, steps=3, prototypes=3)


def _problem(seed=0, frames=10, dims=4):
    f = A.synthetic_features(frames, dims, seed)
    rng = np.random.default_rng(seed + 100)
    return f, rng.standard_normal((dims, 2)) * 0.3, rng.standard_normal((2, dims)) * 0.3, A.choose_prototypes(f, 3)


def test_objective_hand_computed():
    # Frames u0 = (1,0), u1 = (0,1), u2 = (1,0), identity adapter, tau = 1: s = [[1,0,1],[0,1,0],[1,0,1]].
    # t=0: -s01 + log(e^s01 + e^s02) = -0 + log(1 + e);  t=1: -s12 + log(e^s10 + e^s12) = log 2
    # temporal-contrastive = (log(1+e) + log 2) / 2
    # prototypes (1,0), (0,1): every frame has logits {1, 0}: q = (e, 1)/(1+e), entropy
    # H = log(1+e) - e/(1+e) for every frame; total = tc + 0.5 * H
    f = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    protos = np.eye(2)
    total, tc, ent = A.objective(f, np.zeros((2, 1)), np.zeros((1, 2)), protos, 1.0, 0.5)
    e = math.e
    assert tc == pytest.approx((math.log(1 + e) + math.log(2)) / 2, rel=1e-14)
    assert ent == pytest.approx(math.log(1 + e) - e / (1 + e), rel=1e-14)
    assert total == pytest.approx(tc + 0.5 * ent, rel=1e-15)


def test_pure_evaluators_match_the_numpy_twin_and_do_not_mutate():
    for seed in range(4):
        f, a, b, protos = _problem(seed)
        before = [arr.copy() for arr in (f, a, b, protos)]
        got = A.objective(f, a, b, protos, 0.5, 0.3)
        np.testing.assert_allclose(got, naive.adapt_objective(f, a, b, protos, 0.5, 0.3), rtol=1e-12)
        assert A.objective(f, a, b, protos, 0.5, 0.3) == got  # same inputs, same value
        for arr, copy in zip((f, a, b, protos), before):
            np.testing.assert_array_equal(arr, copy)
        g = A.apply_adapter(f, a, b)
        assert A.temporal_contrastive(g, 0.5) == pytest.approx(got[1], rel=1e-14)
        assert A.entropy(g, protos, 0.5) == pytest.approx(got[2], rel=1e-14)


def test_fd_gradient_is_the_central_difference_of_exactly_the_objective():
    f, a, b, protos = _problem(1)
    h = 1e-5
    ga, gb = A.fd_gradient(f, a, b, protos, 0.5, 0.3, h)
    for arr, grad, is_a in ((a, ga, True), (b, gb, False)):
        for flat in range(arr.size):
            idx = np.unravel_index(flat, arr.shape)
            up, dn = arr.copy(), arr.copy()
            up[idx] += h
            dn[idx] -= h
            f_up = A.objective(f, up, b, protos, 0.5, 0.3)[0] if is_a else A.objective(f, a, up, protos, 0.5, 0.3)[0]
            f_dn = A.objective(f, dn, b, protos, 0.5, 0.3)[0] if is_a else A.objective(f, a, dn, protos, 0.5, 0.3)[0]
            assert grad[idx] == (f_up - f_dn) / (up[idx] - dn[idx])  # bit for bit: the same objective


def test_fd_gradient_agrees_with_the_twin_and_vanishes_for_a_when_b_is_zero():
    f, a, b, protos = _problem(2)
    ga, gb = A.fd_gradient(f, a, b, protos, 0.5, 0.3, 1e-6)
    h = 1e-6
    for i in range(b.size):
        idx = np.unravel_index(i, b.shape)
        up, dn = b.copy(), b.copy()
        up[idx] += h
        dn[idx] -= h
        fd = (naive.adapt_objective(f, a, up, protos, 0.5, 0.3)[0]
              - naive.adapt_objective(f, a, dn, protos, 0.5, 0.3)[0]) / (2 * h)
        assert gb[idx] == pytest.approx(fd, rel=1e-5, abs=1e-8)
    # with B = 0 the adapter output f + (f A) 0 does not depend on A at all: the difference is exactly 0
    ga0, _ = A.fd_gradient(f, a, np.zeros_like(b), protos, 0.5, 0.3, 1e-5)
    np.testing.assert_array_equal(ga0, 0.0)


def test_adapt_never_increases_and_reports_a_recomputed_final_loss():
    f = A.synthetic_features(16, 6, 3)
    result = A.adapt(f, SMALL)
    assert result.loss_final <= result.loss_initial
    assert all(later <= earlier for earlier, later in zip(result.history, result.history[1:]))
    assert result.steps_accepted == len(result.history) - 1 >= 1
    assert result.loss_final < result.loss_initial  # this problem does descend
    recomputed = A.objective(f, result.a, result.b, result.prototypes, SMALL.temperature, SMALL.entropy_weight)
    assert result.loss_final == recomputed[0] == result.history[-1]
    twin = naive.adapt_objective(f, result.a, result.b, result.prototypes, SMALL.temperature, SMALL.entropy_weight)
    assert result.loss_final == pytest.approx(twin[0], rel=1e-12)
    assert "No pose gain is claimed" in result.notes[0]


def test_zero_steps_returns_the_initial_adapter():
    f = A.synthetic_features(12, 5, 4)
    result = A.adapt(f, A.AdaptSettings(rank=2, steps=0, prototypes=3))
    assert result.loss_final == result.loss_initial and result.history == [result.loss_initial]
    np.testing.assert_array_equal(result.b, 0.0)


def test_a_step_that_would_increase_the_loss_is_refused():
    f = A.synthetic_features(12, 5, 4)
    # a huge first step and no halvings: the trial overshoots, is refused, and adaptation stops
    result = A.adapt(f, A.AdaptSettings(rank=1, steps=4, prototypes=3, learning_rate=1e6, max_halvings=0))
    assert result.stopped_early and result.steps_accepted == 0
    assert result.loss_final == result.loss_initial


def test_features_and_prototypes():
    csi = (np.arange(24).reshape(4, 3, 2) + 1j).astype(np.complex64)
    amp = A.csi_amplitude(csi)
    np.testing.assert_allclose(amp[0], np.abs(csi[0]).ravel(), rtol=1e-6)
    z, mean, scale = A.standardize(np.array([[1.0, 5.0], [3.0, 5.0]]))
    # column 0: mean 2, std 1 -> (-1, 1); column 1 is constant: centred only
    np.testing.assert_array_equal(z, [[-1.0, 0.0], [1.0, 0.0]])
    np.testing.assert_array_equal(scale, [1.0, 1.0])
    f = np.array([[3.0, 4.0], [1.0, 0.0], [0.0, 2.0], [0.0, -5.0], [6.0, 8.0]])
    # 3 prototypes over 5 frames: frames round(0), round(2), round(4) = 0, 2, 4, normalised
    np.testing.assert_allclose(A.choose_prototypes(f, 3), [[0.6, 0.8], [0.0, 1.0], [0.6, 0.8]], rtol=1e-15)


def test_bad_inputs_are_refused():
    with pytest.raises(ValidationError, match="rank 5 exceeds"):
        A.adapt(np.random.default_rng(0).standard_normal((6, 4)), A.AdaptSettings(rank=5))
    with pytest.raises(ValidationError, match="NaN or inf"):
        A.adapt(np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(ValidationError, match="frames >= 2"):
        A.adapt(np.ones((1, 3)))
    with pytest.raises(ValidationError, match="adapt rank"):
        A.AdaptSettings(rank=0)
    with pytest.raises(ValidationError, match="adapter shapes"):
        A.objective(np.ones((3, 2)), np.ones((3, 1)), np.ones((1, 2)), np.eye(2), 1.0, 0.1)


# --------------------------------------------------------------------------------------------------- CLI


def test_cli_synthetic_json(runner, tmp_path):
    result = runner.invoke(app, ["adapt", "--synthetic", "--steps", "2", "--max-frames", "12", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["loss_final"] <= report["loss_initial"]
    assert report["pose_gain_claimed"] is False
    assert report["frames"] == 12 and report["dims"] == 30 and report["parameters"] == 2 * 30 * 2


def test_cli_on_a_parse_archive_writes_the_adapter(runner, tmp_path):
    rng = np.random.default_rng(8)
    csi = (rng.standard_normal((20, 30, 2, 1)) + 1j * rng.standard_normal((20, 30, 2, 1))).astype(np.complex64)
    archive = save_npz(tmp_path / "log.npz", {"csi": csi, "nrx": np.full(20, 2, np.uint8)})
    out = tmp_path / "adapter.npz"
    args = ["adapt", str(archive), "--steps", "1", "--rank", "1", "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "No pose gain is claimed" in result.output
    with np.load(out) as saved:
        assert saved["a"].shape == (60, 1) and saved["b"].shape == (1, 60)
        summary = json.loads(str(saved["summary_json"]))
        features = A.standardize(A.csi_amplitude(csi))[0]
        again = A.objective(features, saved["a"], saved["b"], saved["prototypes"], 0.5, 0.1)[0]
        assert summary["loss_final"] == again  # the saved weights give the reported loss
        expected_mean = np.abs(csi).reshape(20, -1).astype(np.float64).mean(axis=0)
        np.testing.assert_allclose(saved["feature_mean"], expected_mean, rtol=1e-12)
    refused = runner.invoke(app, args)
    assert refused.exit_code == 2 and "--force" in refused.output


def test_cli_features_npy_and_config_defaults(runner, tmp_path, monkeypatch):
    np.save(tmp_path / "features.npy", A.synthetic_features(10, 4, 0))
    (tmp_path / "rfbench.toml").write_text("[adapt]\nrank = 3\nsteps = 1\nprototypes = 2\n")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["adapt", "features.npy", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["settings"]["rank"] == 3 and report["parameters"] == 2 * 4 * 3
    assert report["config"].endswith("rfbench.toml")


@pytest.mark.parametrize(
    "args, message",
    [
        (["adapt"], "or --synthetic"),
        (["adapt", "--synthetic", "--rank", "0"], "adapt.rank = 0 is outside the allowed range 1..64"),
        (["adapt", "--synthetic", "--fd-step", "1"], "adapt.fd_step = 1.0 is outside"),
        (["adapt", "missing.npz"], "no such file"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(runner, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_cli_archive_without_csi_is_refused(runner, tmp_path):
    path = save_npz(tmp_path / "x.npz", {"other": np.zeros(3)})
    result = runner.invoke(app, ["adapt", str(path)])
    assert result.exit_code == 2 and "no 'csi' or 'csi_int8' array" in result.output
    (tmp_path / "junk.npz").write_bytes(b"not numpy")
    result = runner.invoke(app, ["adapt", str(tmp_path / "junk.npz")])
    assert result.exit_code == 2 and "not a NumPy" in result.output


def test_awkward_features_zero_frames_and_two_frames():
    # a zero frame stays zero after normalisation; the twin does the same
    f = np.array([[1.0, 2.0], [0.0, 0.0], [2.0, -1.0], [0.5, 0.5]])
    protos = A.choose_prototypes(f, 2)
    a, b = np.full((2, 1), 0.1), np.full((1, 2), -0.2)
    np.testing.assert_allclose(A.objective(f, a, b, protos, 0.7, 0.2),
                               naive.adapt_objective(f, a, b, protos, 0.7, 0.2), rtol=1e-12)
    # two frames: one pair; t=0 has only j=1 in its denominator, so the contrastive term is exactly 0
    two = np.array([[1.0, 0.0], [0.0, 1.0]])
    total, tc, ent = A.objective(two, np.zeros((2, 1)), np.zeros((1, 2)), np.eye(2), 1.0, 0.0)
    assert tc == 0.0 and total == 0.0


def test_cli_a_fifo_source_is_refused_unread(runner, tmp_path):
    """The source was sniffed with a plain open before any check: a FIFO blocked the command forever."""
    import os

    fifo = tmp_path / "src.npy"
    os.mkfifo(fifo)
    result = runner.invoke(app, ["adapt", str(fifo)])
    assert result.exit_code == 2 and "not a regular file" in result.output, result.output


def test_a_wide_input_is_refused_before_any_work(runner, tmp_path, monkeypatch):
    """64 frames of 3,000 dims: the finite differences evaluate the whole objective 12,000 times a step (about
    1.4e12 operations for the default 5 steps, an hour here), with no progress; now one line, exit 2, at once."""
    np.save(tmp_path / "wide.npy", A.synthetic_features(64, 3000, 0))
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["adapt", "wide.npy", "--json"])
    assert result.exit_code == 2, result.output
    assert "64 frames of 3000 dims" in result.output and "--max-frames" in result.output, result.output
    assert A.adapt_work(64, 3000, A.AdaptSettings()) > A.MAX_ADAPT_WORK
    # the default on real CSI (64 frames of 90 amplitudes) is well inside, so is one step of the wide input
    assert A.adapt_work(64, 90, A.AdaptSettings()) < A.MAX_ADAPT_WORK / 100
    ok = runner.invoke(app, ["adapt", "wide.npy", "--steps", "0", "--json"])
    assert ok.exit_code == 0, ok.output
