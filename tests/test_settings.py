"""Settings are declared once (rfbench.settings): a walk over every field of every settings class checks that it
has help and a flag, appears in its command's --help, is bounded as declared, round-trips through the argv a
report records, and is recorded in what the command writes."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import typer.main

from posedata import coco_poses, write_split
from rfbench.cli import app
from rfbench.datasets.synthetic_settings import MmfiTreeSettings, WidarTreeSettings
from rfbench.io.writer_settings import BfeeLogSettings, HardwareLogSettings
from rfbench.nn.predict_settings import PredictSettings
from rfbench.report.robustness_settings import RobustnessSettings
from rfbench.report.settings import BootstrapSettings, GestureSettings, PoseSettings, ReportOptions, ScoreInputs
from rfbench.report.verify import Limits
from rfbench.settings import SettingError, Settings, _kind, flag_of, options_of

#: Settings class → the command that takes it.
COMMANDS = {ScoreInputs: "score", PoseSettings: "score", GestureSettings: "score", BootstrapSettings: "score",
            ReportOptions: "score", PredictSettings: "predict", WidarTreeSettings: "generate widar",
            MmfiTreeSettings: "generate mmfi", BfeeLogSettings: "generate bfee", Limits: "verify",
            RobustnessSettings: "robustness", HardwareLogSettings: "generate hardware"}


def all_settings_classes():
    out, stack = [], list(Settings.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if dataclasses.is_dataclass(cls):
            out.append(cls)
    return out


def test_every_settings_class_belongs_to_a_command():
    assert set(all_settings_classes()) >= set(COMMANDS)
    test_only = {c for c in all_settings_classes() if c.__module__.startswith("tests")}
    assert set(all_settings_classes()) <= set(COMMANDS) | test_only


def _click_command(name):
    command = typer.main.get_command(app)
    for part in name.split():  # "generate widar": a command of a group
        command = command.commands[part]
    return command


@pytest.mark.parametrize("cls", list(COMMANDS), ids=lambda c: c.__name__)
def test_every_field_has_help_a_flag_and_shows_in_its_commands_help(cls, runner):
    flags = [flag_of(f) for f, _ in options_of(cls)]
    assert len(set(flags)) == len(flags), f"{cls.__name__} declares a flag twice"
    result = runner.invoke(app, [*COMMANDS[cls].split(), "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    params = {p.name: p for p in _click_command(COMMANDS[cls]).params}
    for f, o in options_of(cls):
        assert o.help.strip(), f"{cls.__name__}.{f.name} has no help"
        assert flag_of(f) in text, f"{flag_of(f)} missing from rfbench {COMMANDS[cls]} --help"
        assert " ".join(o.help.split()[:5]) in text
        assert flag_of(f) in params[f.name].opts


@pytest.mark.parametrize("cls", list(COMMANDS), ids=lambda c: c.__name__)
def test_declared_bounds_hold_in_the_library(cls):
    base = {"skeleton": "coco17"} if cls is PoseSettings else {}
    for f, o in options_of(cls):
        if _kind(f) not in ("int", "float") or (o.min is None and o.max is None):
            continue
        for bad in ([o.min - 1] if o.min is not None else []) + ([o.max + 1] if o.max is not None else []):
            with pytest.raises(SettingError) as info:
                cls(**base, **{f.name: type(f.default)(bad) if f.default is not None else bad})
            assert info.value.for_cli().startswith(flag_of(f) + ":")
        if _kind(f) == "float":
            with pytest.raises(SettingError, match="NaN"):
                cls(**base, **{f.name: float("nan")})


def _changed(cls):
    """An instance with every field away from its default, where a valid other value exists."""
    values = {
        PoseSettings: dict(skeleton="coco17", units="mm", norm=("bbox", "torso"), k=(0.1, 0.3), comparison="<",
                           averaging=("micro",), auc_n=7, auc_max=0.5, oks_area="2.5", metrics=("pck", "pck-auc"),
                           sigmas=tuple([0.05] * 17), trust_layout=True),
        GestureSettings: dict(metrics=("accuracy", "top-k"), top_k=(2,), domains="room"),
        BootstrapSettings: dict(cluster_by="subject", replicates=17, confidence=0.9, seed=5),
        ReportOptions: dict(synthetic=True, allow_partial=True, absolute_paths=True, allow_shared_files=True),
        ScoreInputs: dict(pred=Path("p.npy"), gt=Path("g.npy"), vis=Path("v.npy"), split=Path("s.json"),
                          manifest=Path("m.json"), groups=Path("gr.npy"), train_gt=Path("t.npy"),
                          train_groups=Path("tg.npy"), train_vis=Path("tv.npy")),
        PredictSettings: dict(batch_size=8, intra_op_threads=2, sessions=2, input_name="x", output_name="y",
                              flatten=True, tolerance=0.25, allow_random=True, memory_mb=1024, cpu_seconds=60,
                              timeout=12.5),
        WidarTreeSettings: dict(seed=3, repetitions=2, records=(5, 9), clean=True, kind="bvp", frames=(2, 3)),
        MmfiTreeSettings: dict(seed=3, subjects=("S02", "S13"), actions=("A05",), frames=4, clean=True),
        BfeeLogSettings: dict(seed=3, records=40, random=True, nrx=2, ntx=3, non_csi_every=4, non_csi_bytes=16),
        HardwareLogSettings: dict(format="atheros", seed=3, records=40),
        Limits: dict(timeout=30.5, cpu_seconds=60, memory_mb=2048, max_gb=2.5),
        RobustnessSettings: dict(corruptions=("noise", "truncation"), severities="2,4", seeds=3,
                                 reference=Path("ref.json")),
    }[cls]
    return cls(**values), values


@pytest.mark.parametrize("cls", list(COMMANDS), ids=lambda c: c.__name__)
def test_settings_round_trip_through_the_argv_they_record(cls):
    obj, values = _changed(cls)
    names = {f.name for f, _ in options_of(cls)}
    not_changed = {n for n in names if n not in values and cls is not ScoreInputs}
    if cls is PoseSettings:
        not_changed -= {"convention", "batch_size"}  # a convention replaces norm/comparison/averaging: below
    assert not not_changed, f"{cls.__name__}: the test changes no value of {sorted(not_changed)}"
    argv = obj.argv()
    command = _click_command(COMMANDS[cls])
    extra = {"score": ["--pred", "p.npy", "--gt", "g.npy"], "predict": ["m.onnx", "--windows", "w", "-o", "p.npy"],
             "generate widar": ["tree"], "generate mmfi": ["tree"], "generate bfee": ["log.dat"],
             "generate hardware": ["log.dat"], "verify": ["report.json"],
             "robustness": ["m.onnx", "--split", "s.json", "--score-like", "r.json", "-o", "d"]}
    ctx = command.make_context(COMMANDS[cls].split()[-1], extra[COMMANDS[cls]] + argv, resilient_parsing=True)
    parsed = cls.from_cli(**{k: v for k, v in ctx.params.items() if k in names})
    assert parsed == obj
    if cls is PoseSettings:  # with a convention, the fields it sets are not recorded (they are its)
        conv = PoseSettings(skeleton="h36m17", convention="graphpose-fi", batch_size=32)
        argv = conv.argv()
        assert "--norm" not in argv and "--comparison" not in argv and "--averaging" not in argv
        assert argv[argv.index("--convention") + 1] == "graphpose-fi" and argv[argv.index("--batch-size") + 1] == "32"


def test_every_score_setting_is_recorded_in_the_report(tmp_path, monkeypatch, runner):
    """A report records its settings twice: the reproducer argv (every field, canonical) and the spec of every
    number; a re-parse of the argv gives the same settings back."""
    monkeypatch.chdir(tmp_path)
    gt = coco_poses(12, seed=3)
    np.save("gt.npy", gt)
    np.save("pred.npy", gt + 0.01)
    np.save("groups.npy", np.repeat(["r5", "r6", "r7"], 4))
    np.save("train_gt.npy", coco_poses(8, seed=4))
    np.save("train_groups.npy", np.repeat(["r1", "r2"], 4))
    write_split(tmp_path / "split.json", ["r1", "r2"], ["r5", "r6", "r7"])
    pose, _ = _changed(PoseSettings)
    boot = BootstrapSettings(replicates=17, confidence=0.9, seed=5)
    opts = ReportOptions(allow_partial=True)
    argv = ["score", "--pred", "pred.npy", "--gt", "gt.npy", "--split", "split.json", "--groups", "groups.npy",
            "--train-gt", "train_gt.npy", "--train-groups", "train_groups.npy", *pose.argv(), *boot.argv(),
            *opts.argv(), "-o", "report.json"]
    result = runner.invoke(app, argv)
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report.json").read_text())
    recorded = report["reproducer"]["argv"]
    for obj in (pose, boot, opts):
        for f, _ in options_of(type(obj)):
            if getattr(obj, f.name) not in (None, False):
                assert flag_of(f) in recorded, f"{flag_of(f)} is not recorded in the report's argv"
    command = _click_command("score")
    ctx = command.make_context("score", recorded[2:], resilient_parsing=True)
    names = {f.name for f, _ in options_of(PoseSettings)}
    assert PoseSettings.from_cli(**{k: v for k, v in ctx.params.items() if k in names}) == pose
    spec = next(r["spec"] for r in report["results"] if r["metric"] == "pck")
    assert spec["comparison"] == "<" and spec["units"] == "mm"
    assert report["bootstrap"]["replicates"] == 17 and report["bootstrap"]["seed"] == 5


@pytest.mark.parametrize("cls, values, flag", [
    (PoseSettings, {"skeleton": "coco17", "metrics": "pck,pck"}, "--metrics"),
    (PoseSettings, {"skeleton": "coco17", "k": "0.2,0.1,0.2"}, "--k"),
    (PoseSettings, {"skeleton": "coco17", "norm": "torso,torso"}, "--norm"),
    (PoseSettings, {"skeleton": "coco17", "averaging": "micro,micro"}, "--averaging"),
    (GestureSettings, {"metrics": "accuracy,accuracy"}, "--metrics"),
    (GestureSettings, {"top_k": "3,3"}, "--top-k"),
])
def test_a_list_setting_naming_a_value_twice_is_refused(cls, values, flag):
    """`--metrics pck,pck` was accepted (each value computed and listed twice); a list of metrics, thresholds,
    normalizations or averagings names each once."""
    with pytest.raises(SettingError, match="twice; give each value once") as caught:
        cls(**values)
    assert caught.value.for_cli().startswith(flag), caught.value.for_cli()


def test_a_list_whose_values_may_repeat_still_takes_them():
    assert PoseSettings(skeleton="coco17", sigmas="0.1,0.1").sigmas == (0.1, 0.1)  # one per joint: may repeat


@pytest.mark.parametrize("area", ["-1", "nan", "0", "inf", "box", ""])
def test_an_oks_area_that_is_not_one_is_refused_whether_or_not_oks_is_computed(area):
    """`--oks-area -1` (or nan) was accepted and recorded when OKS was not among the metrics (a 3-D score)."""
    with pytest.raises(SettingError, match="must be 'bbox' or a positive number"):
        PoseSettings(skeleton="coco17", oks_area=area, metrics="pck")
    assert PoseSettings(skeleton="coco17", oks_area=" 2.5 ", metrics="pck").oks_area == "2.5"


def test_a_threshold_of_minus_zero_is_zero():
    """`--k -0` was kept as -0.0 (a label PCK@-0.00)."""
    k = PoseSettings(skeleton="coco17", k="-0,0.5").k
    assert k == (0.0, 0.5) and str(k[0]) == "0.0"
