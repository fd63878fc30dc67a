"""WindowSettings: every field declares its help, bounds and per-dataset defaults, and resolution follows them."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from rfbench.datasets.windows import WindowSettings, setting_fields
from rfbench.datasets.windows.settings import DATASET_KINDS, option_name
from rfbench.errors import ValidationError


def test_every_field_carries_help_bounds_and_defaults_in_its_metadata():
    names = set()
    for f in setting_fields():
        meta = f.metadata
        assert meta["help"].strip(), f.name
        assert meta["type"] in (int, str), f.name
        assert set(meta["datasets"]) <= set(DATASET_KINDS) and meta["datasets"], f.name
        assert f.default is None, f"{f.name}: defaults live in metadata['default'], per dataset"
        for kind, value in meta.get("default", {}).items():
            assert kind in meta["datasets"], (f.name, kind)
            assert isinstance(value, meta["type"]), (f.name, value)
            if "choices" in meta:
                assert value in meta["choices"], (f.name, value)
            if "min" in meta:
                assert meta["min"] <= value <= meta["max"], (f.name, value)
        if "min" in meta:
            assert meta["type"] is int and meta["min"] <= meta["max"]
        names.add(option_name(f))
    assert len(names) == len(setting_fields())
    assert "--label-set" in names and "--resample" in names and "--subcarriers" in names


def test_mmfi_defaults_are_one_frame_stride_one_target_last():
    s = WindowSettings().resolved("mmfi")
    assert (s.task, s.length, s.stride, s.target, s.features, s.nonfinite) == ("pose", 1, 1, "last", "amp,phase",
                                                                               "refuse")
    assert s.csi is s.subcarriers is s.antennas is s.resample is None
    assert s.feature_names == ("amp", "phase")


def test_intel_defaults_and_stride_follows_the_length():
    s = WindowSettings().resolved("intel5300")
    assert (s.task, s.length, s.stride, s.features, s.csi, s.subcarriers, s.bandwidth, s.antennas) == \
        ("gesture", 64, 64, "amp", "raw", 30, 20, "3x1")
    assert s.target is None and s.nonfinite is None
    assert WindowSettings(length=10).resolved("intel5300").stride == 10
    assert WindowSettings(length=10, stride=3).resolved("intel5300").stride == 3


def test_a_given_value_wins_over_the_per_dataset_default():
    s = WindowSettings(length=5).resolved("mmfi")
    assert (s.length, s.stride) == (5, 1)  # MM-Fi's own stride stays, the generic length does not leak in
    assert WindowSettings(target="center", length=4).resolved("mmfi").target == "center"


def test_resolution_is_idempotent():
    for kind, s in (("mmfi", WindowSettings(length=3)), ("intel5300", WindowSettings(resample=20)),
                    ("mmfi", WindowSettings(task="gesture")), ("intel5300", WindowSettings(subcarriers=56))):
        once = s.resolved(kind)
        assert once.resolved(kind) == once


def test_resample_replaces_packet_windows():
    s = WindowSettings(resample=100).resolved("intel5300")
    assert s.resample == 100 and s.length is None and s.stride is None
    with pytest.raises(ValidationError, match="with resample each recording is one row"):
        WindowSettings(resample=100, length=8).resolved("intel5300")


@pytest.mark.parametrize("kind, settings, words", [
    ("mmfi", WindowSettings(resample=10), "applies to intel5300"),
    ("mmfi", WindowSettings(subcarriers=56), "applies to intel5300"),
    ("intel5300", WindowSettings(target="last"), "applies to mmfi"),
    ("intel5300", WindowSettings(nonfinite="toolbox-fill"), "applies to mmfi"),
    ("intel5300", WindowSettings(task="pose"), "no pose ground truth"),
    ("mmfi", WindowSettings(task="gesture", target="first"), "does not apply to task gesture"),
    ("mmfi", WindowSettings(label_set="names.txt"), "applies to task gesture"),
])
def test_settings_that_do_not_apply_are_refused(kind, settings, words):
    with pytest.raises(ValidationError, match=words):
        settings.resolved(kind)


@pytest.mark.parametrize("kwargs, words", [
    ({"length": 0}, "at least 1"),
    ({"length": 8193}, "at most 8192"),
    ({"length": True}, "must be an integer"),
    ({"length": 2.0}, "must be an integer"),
    ({"stride": -1}, "at least 1"),
    ({"subcarriers": 64}, "one of 30, 56, 114"),
    ({"target": "middle"}, "one of last, first, center"),
    ({"antennas": "4x1"}, "one of"),
    ({"task": ""}, "non-empty string"),
    ({"resample": 1}, "at least 2"),
])
def test_invalid_values_are_validation_errors(kwargs, words):
    with pytest.raises(ValidationError, match=words):
        WindowSettings(**kwargs)


def test_dict_round_trip_and_unknown_keys():
    s = WindowSettings(length=3, stride=2, target="first").resolved("mmfi")
    assert WindowSettings.from_dict(s.to_dict()) == s
    assert set(s.to_dict()) == {f.name for f in dataclasses.fields(WindowSettings)}
    with pytest.raises(ValidationError, match="unknown window setting"):
        WindowSettings.from_dict({"length": 3, "window": 4})
    with pytest.raises(ValidationError, match="settings: window setting length"):
        WindowSettings.from_dict({"length": -3})


def test_argv_names_every_given_field_and_pickles():
    s = WindowSettings(length=4, target="center", label_set=None)
    assert s.to_argv() == ["--length", "4", "--target", "center"]
    assert WindowSettings(label_set="n.txt").to_argv() == ["--label-set", "n.txt"]
    assert pickle.loads(pickle.dumps(s)) == s


def test_the_command_has_one_option_per_field_with_its_help(runner):
    from rfbench.cli import app

    result = runner.invoke(app, ["windows", "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    for f in setting_fields():
        assert option_name(f) in text, f.name
        assert " ".join(f.metadata["help"].split()[:5]) in text, f.name
