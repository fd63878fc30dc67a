"""Notes on pose predictions that score but are likely wrong: another scale by a power of ten (units), whole
numbers where the ground truth is not, rows with no finite value. Notes, never errors: the numbers are scored."""

from __future__ import annotations

import numpy as np
import pytest

from rfbench.report.pose import plausibility, pose_report

RNG = np.random.default_rng(0)
GT = RNG.normal(size=(20, 17, 3)) + np.array([0.0, 0.0, 3.0])  # a person 3 m away


def _report(pred):
    return pose_report(pred, GT, skeleton="coco17", units="m", metrics=["mpjpe"], n_boot=0)


def test_good_predictions_get_no_note():
    r = _report(GT + RNG.normal(scale=0.02, size=GT.shape))
    assert r["plausibility"]["decades"] is None and not r["plausibility"]["integer_predictions"]
    assert r["plausibility"]["non_finite_rows"] == 0 and abs(r["plausibility"]["size_ratio"] - 1) < 0.05
    assert not [n for n in r["notes"] if "size of the ground truth" in n or "whole number" in n]


@pytest.mark.parametrize("factor, decades", [(1000.0, 3), (0.001, -3), (100.0, 2), (1.2 * 10, 1)])
def test_a_scale_off_by_a_power_of_ten_is_noted(factor, decades):
    # the size is the spread of a pose's joints about their centroid: a translation does not change it
    r = _report(GT * factor + 5.0)
    assert r["plausibility"]["decades"] == decades
    (note,) = [n for n in r["notes"] if "size of the ground truth" in n]
    assert note.startswith(f"the predicted poses are about 10^{decades} times the size of the ground truth's")
    assert r["results"][0]["model"]["value"] > 0  # scored all the same


def test_a_factor_far_from_a_power_of_ten_is_not():
    for factor in (3.0, 1.3, 0.5, 30.0):  # log10(30) = 1.48: half-way between two powers, no note
        notes = []
        assert plausibility(GT * factor, GT, "m", notes)["decades"] is None and notes == []


def test_whole_number_predictions_are_noted_unless_the_truth_is_whole_too():
    r = _report(np.round(GT))
    assert r["plausibility"]["integer_predictions"]
    assert any(n.startswith("every finite prediction is a whole number") for n in r["notes"])
    whole = np.round(GT * 100)  # pixel-like ground truth: whole numbers are expected
    assert not plausibility(np.round(whole + 1), whole, "px", [])["integer_predictions"]


def test_rows_with_no_finite_value_are_counted():
    pred = GT + 0.01
    pred[[2, 7]] = np.nan
    pred[9, 0, 0] = np.inf  # one bad value is not a bad row
    r = _report(pred)
    assert r["plausibility"]["non_finite_rows"] == 2
    assert "2 of 20 rows of predictions hold no finite value" in " ".join(r["notes"])
    assert r["results"][0]["model"]["value"] == "inf"  # the report's JSON spelling
