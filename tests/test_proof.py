"""``rfbench proof``: PASS only with a real decrease and a matching committed hash; SKIP and FAIL otherwise."""

from __future__ import annotations

import hashlib
import inspect
import json
import struct
from pathlib import Path

import numpy as np
import pytest

import naive
from rfbench.cli import app
from rfbench.train import proof as P

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "expected_proof.sha256"


@pytest.fixture(scope="module")
def default_run():
    return P.run_proof()


def _invoke(runner, *args):
    return runner.invoke(app, ["proof", *args])


def _committed(label: str) -> str:
    for line in FIXTURE.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1] == label:
            return parts[0]
    raise AssertionError(f"no {label} line in {FIXTURE}")


def test_default_run_matches_the_committed_baseline_and_lowers_the_loss(default_run):
    assert default_run.weights_sha256 == _committed("weights")
    assert default_run.data_sha256 == _committed("data")
    assert default_run.loss_decrease >= P.MIN_LOSS_DECREASE
    assert len(default_run.losses) == P.DEFAULTS["steps"] + 1


def test_cli_passes_with_the_committed_baseline(runner, default_run):
    result = _invoke(runner, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["verdict"] == "PASS"
    assert report["weights_sha256"] == default_run.weights_sha256 == _committed("weights")
    assert report["min_loss_decrease"] == 1e-4
    assert "accuracy" in report["does_not_prove"]
    assert any("BLAS" in d for d in report["determinism_depends_on"])
    text = _invoke(runner)
    assert text.exit_code == 0, text.output
    assert "PASS" in text.output and "Does not prove: accuracy" in text.output
    assert "Determinism depends on" in text.output


def test_two_runs_give_identical_bits(default_run):
    again = P.run_proof()
    assert again.weights_sha256 == default_run.weights_sha256
    assert again.losses == default_run.losses
    for name in default_run.params:
        assert again.params[name].tobytes() == default_run.params[name].tobytes()


@pytest.mark.parametrize("content", [None, "", "\n\n", "# only a comment\n"])
def test_no_baseline_is_skip_exit_3_never_a_pass(runner, tmp_path, content):
    path = tmp_path / "expected.sha256"
    if content is not None:
        path.write_text(content)
    small = ["--steps", "3", "--samples", "4"]  # any run with a real decrease; no baseline to compare with
    result = _invoke(runner, "--hash-file", str(path), *small)
    assert result.exit_code == 3, result.output
    verdict_line = result.output.splitlines()[0]
    assert verdict_line == "rfbench proof: SKIP (not a pass: nothing was compared)"
    report = json.loads(_invoke(runner, "--hash-file", str(path), "--json", *small).stdout)
    assert report["verdict"] == "SKIP" and report["exit_code"] == 3


@pytest.mark.parametrize("weaken", [["--steps", "0"], ["--lr", "1e-9"]])
def test_sub_margin_decrease_fails_even_without_a_baseline(runner, tmp_path, weaken):
    result = _invoke(runner, "--hash-file", str(tmp_path / "missing.sha256"), *weaken, "--json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["verdict"] == "FAIL"
    assert report["loss_decrease"] < 1e-4
    assert "less than MIN_LOSS_DECREASE" in report["reasons"][0]


def test_sub_margin_decrease_fails_against_the_committed_baseline_too(runner):
    result = _invoke(runner, "--lr", "1e-9")
    assert result.exit_code == 1, result.output
    assert "FAIL" in result.output


def _run_with_losses(default_run, losses):
    return P.ProofRun(default_run.settings, losses, default_run.weights_sha256, default_run.data_sha256,
                      default_run.params)


def test_margin_boundary(default_run, tmp_path):
    baseline = P.Baseline(tmp_path, default_run.weights_sha256, default_run.data_sha256)
    # 2**-13 = 1.22e-4 >= 1e-4 passes; 2**-14 = 6.1e-5 < 1e-4 fails, even with matching hashes
    assert P.judge(_run_with_losses(default_run, [0.5, 0.5 - 2**-13]), baseline).verdict == "PASS"
    assert P.judge(_run_with_losses(default_run, [0.5, 0.5 - 2**-14]), baseline).verdict == "FAIL"
    assert P.judge(_run_with_losses(default_run, [0.5, 0.5 - 2**-14]), None).verdict == "FAIL"
    assert P.judge(_run_with_losses(default_run, [0.5, float("nan")]), baseline).verdict == "FAIL"
    assert P.judge(_run_with_losses(default_run, [0.5, 0.4]), None).verdict == "SKIP"


def _flip_first_hex(text: str) -> str:
    first = text.index("\n", text.rindex("#")) + 1
    return text[:first] + ("0" if text[first] != "0" else "1") + text[first + 1:]


def test_corrupted_hash_fails(runner, tmp_path):
    path = tmp_path / "expected.sha256"
    path.write_text(_flip_first_hex(FIXTURE.read_text()))
    result = _invoke(runner, "--hash-file", str(path))
    assert result.exit_code == 1, result.output
    assert "differs from the baseline" in result.output


@pytest.mark.parametrize("content", ["not a hash\n", "deadbeef  weights\n",
                                     "0" * 64 + "  weights\n" + "1" * 64 + "  weights\n", "0" * 64 + "  data\n"])
def test_unreadable_or_partial_baseline_fails(runner, tmp_path, content):
    path = tmp_path / "expected.sha256"
    path.write_text(content)
    result = _invoke(runner, "--hash-file", str(path), "--json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["verdict"] == "FAIL"
    assert any("unreadable" in r or "differs" in r for r in report["reasons"])


def test_a_baseline_without_its_data_digest_is_never_a_pass(runner, tmp_path, default_run):
    """A baseline holding only the weights digest (bare or labelled) passed, the data sha256 'not compared': a
    change to the data generator went unseen, though a PASS is documented as both hashes equal."""
    path = tmp_path / "expected.sha256"
    for text in (default_run.weights_sha256 + "\n", default_run.weights_sha256 + "  weights\n"):
        path.write_text(text)
        result = _invoke(runner, "--hash-file", str(path), "--json")
        assert result.exit_code == 1, result.output
        assert any("no data digest" in r for r in json.loads(result.stdout)["reasons"])
    path.write_text(default_run.weights_sha256 + "\n" + default_run.data_sha256 + "  data\n")  # bare = weights
    assert _invoke(runner, "--hash-file", str(path)).exit_code == 0


@pytest.mark.parametrize("content", ["# my notes\n# keep them\n", ""])
def test_generate_hash_never_replaces_an_existing_file_without_force(runner, tmp_path, content):
    """A file of comments only (or empty) read as 'no baseline', so --generate-hash wrote over it unasked."""
    path = tmp_path / "notes.conf"
    path.write_text(content)
    result = _invoke(runner, "--generate-hash", "--hash-file", str(path))
    assert result.exit_code == 2 and "already exists" in result.output, result.output
    assert path.read_text() == content


def test_changed_data_generator_is_named(default_run, tmp_path):
    baseline = P.Baseline(tmp_path, default_run.weights_sha256, "0" * 64)
    verdict = P.judge(default_run, baseline)
    assert verdict.verdict == "FAIL"
    assert "data generator changed" in verdict.reasons[0]


def test_one_perturbed_weight_changes_the_hash(default_run):
    params = {k: v.copy() for k, v in default_run.params.items()}
    w = params["attn.wk"]
    w[1, 2] = np.nextafter(w[1, 2], np.inf)  # one ulp in one weight
    assert P.weights_sha256(params) != default_run.weights_sha256
    assert P.weights_sha256(default_run.params) == default_run.weights_sha256


def test_canonical_layout_written_out_by_hand():
    expected = hashlib.sha256(
        b"rfbench.proof.weights/1\n"
        + b"w\n" + struct.pack("<qq", 1, 2) + struct.pack("<2d", 1.0, -0.5)
        + b"m\n" + struct.pack("<qqq", 2, 1, 1) + struct.pack("<d", 3.0)
    ).hexdigest()
    assert P.hash_arrays("weights", {"w": np.array([1.0, -0.5]), "m": np.array([[3.0]], dtype=np.float32)}) == expected
    # -0.0 and 0.0 are different bits, hence different hashes
    assert P.hash_arrays("weights", {"w": np.array([0.0])}) != P.hash_arrays("weights", {"w": np.array([-0.0])})


def test_synthetic_data_kernel_matches_its_twin_and_is_seeded():
    rng = np.random.default_rng(9)
    z, pat, noise = rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (4, 10)), rng.uniform(-1, 1, (3, 10))
    base, basis = rng.uniform(-1, 1, 6), rng.uniform(-1, 1, (4, 6))
    x, y = np.empty((3, 10)), np.empty((3, 6))
    P._synthetic(z, pat, noise, base, basis, 0.1, x, y)
    rx, ry = naive.synthetic_mix(z, pat, noise, base, basis, 0.1)
    np.testing.assert_array_equal(x, rx)
    np.testing.assert_array_equal(y, ry)
    a = P.synthetic_pose_data(4, P.PROOF_SPEC, 3)
    b = P.synthetic_pose_data(4, P.PROOF_SPEC, 3)
    c = P.synthetic_pose_data(4, P.PROOF_SPEC, 4)
    assert P.data_sha256(*a) == P.data_sha256(*b) != P.data_sha256(*c)
    assert a[0].shape == (4, 3, 30, 16) and a[1].shape == (4, 17, 3)


def test_sgd_step_twin():
    w, g = np.array([1.0, -2.0, 0.5]), np.array([0.25, 1.0, -4.0])
    P._sgd_step(w, g, 0.5)  # 1 - 0.125, -2 - 0.5, 0.5 + 2
    np.testing.assert_array_equal(w, [0.875, -2.5, 2.5])


def test_generate_hash_writes_only_when_asked_and_only_for_a_real_decrease(runner, tmp_path, default_run):
    path = tmp_path / "sub" / "expected.sha256"
    refused = _invoke(runner, "--hash-file", str(path), "--generate-hash", "--steps", "0")
    assert refused.exit_code == 1, refused.output
    assert not path.exists()
    made = _invoke(runner, "--hash-file", str(path), "--generate-hash")
    assert made.exit_code == 0, made.output
    assert P.read_baseline(path).weights == default_run.weights_sha256
    again = _invoke(runner, "--hash-file", str(path), "--generate-hash")
    assert again.exit_code == 2 and "--force" in again.output
    assert _invoke(runner, "--hash-file", str(path), "--generate-hash", "--force").exit_code == 0
    assert _invoke(runner, "--hash-file", str(path)).exit_code == 0
    # a baseline made with other settings says so when it mismatches
    other = _invoke(runner, "--hash-file", str(path), "--steps", "5")
    assert other.exit_code == 1 and "steps=40" in other.output


def test_bad_usage_is_exit_2(runner, tmp_path):
    assert _invoke(runner, "--hash-file", str(tmp_path)).exit_code == 2
    assert _invoke(runner, "--steps", "-1").exit_code == 2
    assert _invoke(runner, "--lr", "nan").exit_code == 2


def test_cli_defaults_are_the_baseline_settings():
    from rfbench.commands.proof import proof

    sig = inspect.signature(proof)
    defaults = {name: sig.parameters[name].default for name in ("seed", "steps", "lr", "samples")}
    assert defaults == P.DEFAULTS
    assert "# settings: seed=0 steps=40 lr=0.1 samples=64" in FIXTURE.read_text()


def test_a_mismatch_names_differing_library_versions(default_run, tmp_path):
    baseline = P.Baseline(tmp_path, "0" * 64, None, ("versions: numpy=1.0 numba=0.1 llvmlite=0.1",))
    verdict = P.judge(default_run, baseline)
    assert verdict.verdict == "FAIL"
    assert "the baseline was made with numpy=1.0 numba=0.1 llvmlite=0.1; this run used numpy=" in verdict.reasons[0]


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_hash_file_that_is_no_regular_file_is_refused_unread(runner, tmp_path, kind):
    """--hash-file was read with Path.read_text: a FIFO blocked both modes forever, /dev/zero filled memory."""
    import os

    path = tmp_path / "base.sha256"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path = Path("/dev/zero")
    for extra in ([], ["--generate-hash"]):
        result = _invoke(runner, "--steps", "2", "--samples", "4", "--hash-file", str(path), *extra)
        assert result.exit_code == 2 and "not a regular file" in result.output, result.output
