"""``rfbench generate widar|mmfi|bfee``: the command renders what the library made, every setting is declared once
(the option, the docs page and the library agree), and nothing is ever half-written or deleted that rfbench did
not make."""

from __future__ import annotations

import contextlib
import doctest
import errno
import json
import os
from dataclasses import fields
from pathlib import Path

import pytest

import readme_runner as rr
from rfbench.cli import app
from rfbench.datasets import synthetic
from rfbench.datasets.synthetic import MARKER, make_mmfi_tree, make_widar_tree
from rfbench.datasets.synthetic_settings import MmfiTreeSettings, WidarTreeSettings
from rfbench.errors import OutputExistsError, ValidationError
from rfbench.io import writer
from rfbench.io.intel5300 import GENERATED_RECORD, GENERATED_RECORD_CODE, read
from rfbench.io.writer import BfeeLogSettings, make_bfee_log, sample_0x5_like, synthetic_log
from rfbench.settings import SettingError, flag_of, options_of

PAGE = rr.ROOT / "docs" / "generate.md"
KINDS = {"widar": WidarTreeSettings, "mmfi": MmfiTreeSettings, "bfee": BfeeLogSettings}
SMALL = {"widar": ["--records", "2,3"], "mmfi": ["--subjects", "S01,S40", "--actions", "A01,A02", "--frames", "2"],
         "bfee": ["--records", "30"]}


def tree_bytes(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def listing(folder: Path) -> list[str]:
    """Everything in ``folder``, hidden names included (a leftover temporary folder would show)."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def one_error_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


# -- the command renders what the library made -------------------------------------------------------------

def test_widar_tree_is_the_library_s_tree_with_its_marker(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["generate", "widar", "cli", "--seed", "4", "--records", "2,3", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    made = make_widar_tree(tmp_path / "lib", seed=4, records=(2, 3))
    assert tree_bytes(tmp_path / "cli") == tree_bytes(tmp_path / "lib")
    assert doc == dict(made.to_dict(), root="cli")
    # The marker (ingest and split read it): the generator, its parameters, and every file it wrote
    marker = json.loads((tmp_path / "cli" / MARKER).read_text())
    files = sorted(p.relative_to(tmp_path / "cli").as_posix() for p in (tmp_path / "cli").rglob("*")
                   if p.is_file() and p.name != MARKER)
    assert marker.pop("files") == files
    assert sorted(marker.pop("contents")) == files  # each file's size and sha256 (tests/test_generate_force.py)
    assert json.dumps(marker, indent=2, sort_keys=True) + "\n" == (
        '{\n  "generator": "rfbench.datasets.synthetic.make_widar_tree",\n  "params": {\n    "damage": true,\n'
        '    "records": [\n      2,\n      3\n    ],\n    "repetitions": 1,\n    "seed": 4\n  },\n'
        '  "synthetic": true\n}\n')
    # 4 dates x users x 2 gestures x 3 (location, orientation) = 42 recordings, + location 6 in room 1, + the
    # planted gesture 7: 44; six receiver files each, one planted missing: 263
    assert (doc["recordings"], doc["files"], len(doc["damage"])) == (44, 263, 12)
    assert doc["total_files"] == len([p for p in (tmp_path / "cli").rglob("*") if p.is_file()])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cli", "lib"]  # no temporary folder left beside


def test_mmfi_tree_line_and_marker(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["generate", "mmfi", "m", "--subjects", "S01,S40", "--actions", "A01,A02",
                                 "--frames", "2", "--clean"])
    assert result.exit_code == 0, result.output
    # 2 subjects x 2 actions = 4 recordings of 2 frames each
    assert result.stdout.strip() == ("wrote a synthetic MM-Fi-like tree to m: 4 recordings, 8 WiFi frames, 0 "
                                     "planted problem(s); marked SYNTHETIC")
    marker = json.loads((tmp_path / "m" / MARKER).read_text())
    assert len(marker.pop("files")) == 4 * (1 + 2)  # a ground truth and 2 frames a recording
    assert len(marker.pop("contents")) == 4 * (1 + 2)  # each one's size and sha256
    assert marker == {"generator": "rfbench.datasets.synthetic.make_mmfi_tree", "synthetic": True,
                      "params": {"seed": 0, "subjects": ["S01", "S40"], "actions": ["A01", "A02"], "frames": 2,
                                 "damage": False}}
    made = make_mmfi_tree(tmp_path / "lib", subjects=["S01", "S40"], actions=["A01", "A02"], frames=2, damage=False)
    assert tree_bytes(tmp_path / "m") == tree_bytes(tmp_path / "lib")
    assert (made.recordings, made.files) == (4, 8)


def test_bfee_default_is_the_capture_like_log(runner, tmp_path):
    out = tmp_path / "capture.dat"
    result = runner.invoke(app, ["generate", "bfee", str(out), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert out.read_bytes() == GENERATED_RECORD + sample_0x5_like(0)  # first, the record that says who wrote it
    # 2998 records of 3 + 215 bytes (3x1 bfee) and 2998 0xC1 frames of 3 + 128 bytes: 2998 x 346 = 1,037,308;
    # the generator's record: 2 + 1 + 32 bytes
    assert doc["bytes"] == 1_037_308 + 35 == out.stat().st_size
    assert (doc["csi_records"], doc["non_csi_records"], doc["layout"]) == (2998, 2999, "sample_0x5-like")


def test_bfee_random_shape_parses_back(runner, tmp_path):
    out = tmp_path / "sub" / "r.dat"
    result = runner.invoke(app, ["generate", "bfee", str(out), "--random", "--nrx", "3", "--ntx", "2", "--records",
                                 "40", "--non-csi-every", "3", "--non-csi-bytes", "16", "--seed", "9"])
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == GENERATED_RECORD + synthetic_log(40, nrx=3, ntx=2, seed=9, non_csi_every=3,
                                                                non_csi_bytes=16)
    log = read(out)
    assert log.csi.shape == (40, 30, 3, 2) and log.n_skipped == 0
    # a non-CSI record after the 3rd, 6th, ... 39th CSI record: 13; and the generator's own record first
    assert dict(log.non_csi) == {0xC1: 13, GENERATED_RECORD_CODE: 1}
    assert f"wrote {out} (" in result.stdout and "40 CSI records of 3x2, 14 non-CSI records)" in result.stdout


# -- settings declared once: option, argv, docs page and library agree -------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_every_setting_is_an_option_documented_and_round_trips(runner, tmp_path, kind):
    cls = KINDS[kind]
    help_text = " ".join(runner.invoke(app, ["generate", kind, "--help"]).output.split())
    page = PAGE.read_text(encoding="utf-8")
    for f, _ in options_of(cls):
        assert flag_of(f) in help_text, (kind, f.name)
        assert f"`{flag_of(f)}`" in page, f"docs/generate.md does not document {flag_of(f)} of generate {kind}"
    # Non-default values of every field, through the canonical argv and back through the command line.
    changed = {"widar": WidarTreeSettings(seed=7, repetitions=2, records=(2, 2), clean=True, kind="bvp",
                                          frames=(2, 3)),
               "mmfi": MmfiTreeSettings(seed=7, subjects=("S02",), actions=("A05",), frames=1, clean=True),
               "bfee": BfeeLogSettings(seed=7, records=12, random=True, nrx=2, ntx=3, non_csi_every=5,
                                       non_csi_bytes=9)}[kind]
    assert {f.name for f in fields(cls) if getattr(changed, f.name) == f.default} == set()
    target = tmp_path / "out"
    result = runner.invoke(app, ["generate", kind, str(target), *changed.argv(), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    if kind == "bfee":
        assert cls(**doc["settings"]) == changed
    else:
        recorded = dict(doc["params"])
        recorded["clean"] = not recorded.pop("damage")
        if recorded.get("kind") == "bvp":  # a BVP tree has no receiver logs: --records does not apply to it
            recorded["records"] = changed.records
        assert cls(**recorded) == changed


def test_mmfi_names_match_the_dataset_module():
    from rfbench.datasets import mmfi
    from rfbench.datasets.synthetic_settings import MMFI_ACTIONS, MMFI_SUBJECTS

    assert MMFI_SUBJECTS == tuple(mmfi.ALL_SUBJECTS) and MMFI_ACTIONS == tuple(mmfi.ALL_ACTIONS)
    environments = {mmfi.environment_of(s) for s in MmfiTreeSettings().subjects}
    assert environments == {"E01", "E02", "E03", "E04"}  # the defaults cover every environment


@pytest.mark.parametrize("call, match", [
    (lambda d: make_widar_tree(d, repetitions=0), "repetitions"),
    (lambda d: make_widar_tree(d, records=(0, 3)), "records"),
    (lambda d: make_widar_tree(d, records=(4, 3)), "LOW <= HIGH"),
    (lambda d: make_widar_tree(d, seed=-1), "seed"),
    (lambda d: make_mmfi_tree(d, subjects=["S01", "S01"]), "twice"),
    (lambda d: make_mmfi_tree(d, actions=["A28"]), "A28"),
    (lambda d: make_mmfi_tree(d, frames=0), "frames"),
    (lambda d: make_bfee_log(d / "x.dat", BfeeLogSettings(records=0)), "records"),
])
def test_library_checks_the_declared_bounds_before_writing(tmp_path, call, match):
    with pytest.raises(SettingError, match=match):
        call(tmp_path / "out")
    assert listing(tmp_path) == []


def test_library_summaries_read_as_before(tmp_path):
    made = make_widar_tree(tmp_path / "w", records=(2, 2), damage=False)
    assert (made["recordings"], made["files"], made["damage"], made["root"]) == (43, 258, {}, str(tmp_path / "w"))
    with pytest.raises(KeyError):
        made["no such key"]


def test_progress_callbacks_count_to_the_total(tmp_path):
    totals, steps = [], []
    make_mmfi_tree(tmp_path / "m", subjects=["S01", "S02", "S11"], actions=["A01", "A02"], frames=1,
                   on_total=totals.append, progress=steps.append)
    assert totals == [6] and steps == [1] * 6
    totals, steps = [], []
    made = make_widar_tree(tmp_path / "w", records=(2, 2), damage=False, on_total=totals.append,
                           progress=steps.append)
    assert totals == [made.recordings] and sum(steps) == made.recordings


@pytest.mark.parametrize("json_flag, enabled", [([], True), (["--json"], False)])
def test_the_command_asks_for_a_progress_bar_with_the_total(runner, tmp_path, monkeypatch, json_flag, enabled):
    from rfbench.commands import generate as command

    seen = []

    @contextlib.contextmanager
    def bar(total, description, enabled=True):  # rfbench.commands._progress.progress, recorded
        steps = []
        seen.append((total, enabled))
        yield lambda n=1: steps.append(n)
        seen.append(sum(steps))

    monkeypatch.setattr(command, "progress", bar)
    result = runner.invoke(app, ["generate", "mmfi", str(tmp_path / "m"), "--subjects", "S01,S02,S11",
                                 "--actions", "A01", "--frames", "1", *json_flag])
    assert result.exit_code == 0, result.output
    # shown (on a terminal) unless --json; 3 subjects x 1 action = 3 recordings, each advancing it once
    assert seen == [(3, enabled), 3]


@pytest.mark.long
@pytest.mark.parametrize("function", [synthetic.make_widar_tree, synthetic.make_mmfi_tree, writer.make_bfee_log])
def test_docstring_examples_run(function):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in doctest.DocTestFinder().find(function):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
    assert runner.summarize(verbose=False).attempted > 0


# -- refusals: one line, exit 2, nothing written, nothing deleted ------------------------------------------

@pytest.mark.parametrize("kind", ["widar", "mmfi"])
def test_non_empty_folder_is_refused_and_kept(runner, tmp_path, kind):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    result = runner.invoke(app, ["generate", kind, str(mine), *SMALL[kind]])
    assert result.exit_code == 2, result.output
    assert "is not empty" in one_error_line(result)
    result = runner.invoke(app, ["generate", kind, str(mine), *SMALL[kind], "--force"])
    assert result.exit_code == 2, result.output
    assert f"holds no {MARKER}" in one_error_line(result)
    assert listing(tmp_path) == ["mine", "mine/notes.txt"] and (mine / "notes.txt").read_text() == "keep me"


def test_a_file_is_not_a_folder(runner, tmp_path):
    (tmp_path / "f").write_text("x")
    result = runner.invoke(app, ["generate", "widar", str(tmp_path / "f"), "--force"])
    assert result.exit_code == 2 and "not a folder" in one_error_line(result)
    assert (tmp_path / "f").read_text() == "x"


def test_an_empty_folder_becomes_the_tree(runner, tmp_path):
    (tmp_path / "empty").mkdir()
    result = runner.invoke(app, ["generate", "mmfi", str(tmp_path / "empty"), *SMALL["mmfi"]])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "empty" / MARKER).is_file() and [p.name for p in tmp_path.iterdir()] == ["empty"]


def test_force_replaces_a_generated_tree_as_a_whole(runner, tmp_path):
    root = tmp_path / "w"
    assert runner.invoke(app, ["generate", "widar", str(root), "--records", "2,2", "--repetitions", "2"]).exit_code == 0
    # a file added to a generated tree is the user's: --force removed it with the tree; now it is refused
    (root / "CSI" / "added-by-hand.txt").write_text("inside a generated tree")
    result = runner.invoke(app, ["generate", "widar", str(root), "--records", "2,2", "--clean", "--force"])
    assert result.exit_code == 2 and "holds CSI/added-by-hand.txt, which rfbench generate did not write" in \
        one_error_line(result)
    assert (root / "CSI" / "added-by-hand.txt").read_text() == "inside a generated tree"
    (root / "CSI" / "added-by-hand.txt").unlink()
    os.remove(next(root.rglob("*.dat")))  # a generated file the user removed: the rest is still the generator's
    result = runner.invoke(app, ["generate", "widar", str(root), "--records", "2,2", "--clean", "--force"])
    assert result.exit_code == 0, result.output
    assert "(replacing the tree generated there before)" in result.stdout
    # exactly a fresh clean tree: the second repetition's files and the planted problems are gone
    make_widar_tree(tmp_path / "fresh", records=(2, 2), damage=False)
    assert tree_bytes(root) == tree_bytes(tmp_path / "fresh")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh", "w"]


def test_bfee_refuses_an_existing_file_and_force_replaces_it(runner, tmp_path):
    out = tmp_path / "x.dat"
    out.write_bytes(b"mine")
    result = runner.invoke(app, ["generate", "bfee", str(out), "--records", "5"])
    assert result.exit_code == 2 and "already exists" in one_error_line(result)
    assert out.read_bytes() == b"mine"
    result = runner.invoke(app, ["generate", "bfee", str(out), "--records", "5", "--force"])
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == GENERATED_RECORD + sample_0x5_like(0, 5)


@pytest.mark.parametrize("args, message", [
    (["--nrx", "2"], "--nrx: applies to random logs only"),
    (["--non-csi-every", "0"], "--non-csi-every: applies to random logs only"),
])
def test_bfee_shape_options_need_random(runner, tmp_path, args, message):
    result = runner.invoke(app, ["generate", "bfee", str(tmp_path / "x.dat"), *args])
    assert result.exit_code == 2 and message in one_error_line(result)
    assert listing(tmp_path) == []


@pytest.mark.parametrize("kind", ["csi", "bvp"])
def test_no_repetition_past_what_ingest_reads(runner, tmp_path, kind):
    # a repetition past 99 is a name `ingest widar` leaves out: the generator never writes one
    result = runner.invoke(app, ["generate", "widar", str(tmp_path / "out"), "--kind", kind, "--repetitions", "100"])
    assert result.exit_code == 2 and "invalid value for --repetitions: must be <= 99, got '100'" in result.output
    assert listing(tmp_path) == []


@pytest.mark.parametrize("kind, args, message", [
    ("widar", ["--records", "5,2"], "--records: must be LOW,HIGH with LOW <= HIGH"),
    ("widar", ["--records", "2,3,4"], "--records: must be LOW,HIGH"),
    ("widar", ["--records", "2,x"], "--records: 'x' is not an integer"),
    ("widar", ["--records", "1,20001"], "--records: 20001 is not allowed"),
    ("mmfi", ["--subjects", "S01,S41"], "--subjects: unknown MM-Fi subjects S41"),
    ("mmfi", ["--actions", ","], "--actions: must list at least one value"),
])
def test_bad_values_are_one_line(runner, tmp_path, kind, args, message):
    result = runner.invoke(app, ["generate", kind, str(tmp_path / "out"), *args])
    assert result.exit_code == 2 and message in one_error_line(result)
    assert listing(tmp_path) == []


def _fail_after(monkeypatch, calls: int, error: BaseException):
    real = writer.synthetic_log
    count = [0]

    def failing(*args, **kwargs):
        count[0] += 1
        if count[0] > calls:
            raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(writer, "synthetic_log", failing)


@pytest.mark.parametrize("error, code, message", [
    (OSError(errno.ENOSPC, "No space left on device", "x.dat"), 2,
     "error: x.dat: No space left on device; the destination was left as it was"),
    (KeyboardInterrupt(), 130, "error: interrupted"),
])
def test_a_failure_midway_leaves_nothing(runner, tmp_path, monkeypatch, error, code, message):
    _fail_after(monkeypatch, 40, error)
    target = tmp_path / "new" / "deeper" / "w"
    result = runner.invoke(app, ["generate", "widar", str(target), "--records", "2,2"])
    assert result.exit_code == code, result.output
    assert one_error_line(result) == message
    assert listing(tmp_path) == []  # no tree, no temporary folder, no parent folder made for it


def test_a_failure_while_replacing_keeps_the_old_tree(runner, tmp_path, monkeypatch):
    root = tmp_path / "w"
    make_widar_tree(root, records=(2, 2))
    before = tree_bytes(root)
    _fail_after(monkeypatch, 10, OSError(errno.EIO, "Input/output error"))
    result = runner.invoke(app, ["generate", "widar", str(root), "--records", "3,3", "--force"])
    assert result.exit_code == 2 and "Input/output error" in one_error_line(result)
    assert tree_bytes(root) == before and [p.name for p in tmp_path.iterdir()] == ["w"]


def test_library_refusals_raise_rfbench_errors(tmp_path):
    (tmp_path / "x").write_text("keep me")
    with pytest.raises(OutputExistsError, match="not empty"):
        make_widar_tree(tmp_path, records=(2, 2))
    with pytest.raises(OutputExistsError, match="holds no"):
        make_mmfi_tree(tmp_path, force=True)
    with pytest.raises(OutputExistsError, match="already exists"):
        make_bfee_log(tmp_path / "x")
    with pytest.raises(ValidationError, match="BfeeLogSettings"):
        make_bfee_log(tmp_path / "y.dat", {"records": 3})
    assert listing(tmp_path) == ["x"]


def test_library_modules_have_no_command_line_of_their_own():
    # `python -m rfbench.io.writer` and `python -m rfbench.datasets.synthetic` gave way to `rfbench generate`
    assert not hasattr(writer, "main") and not hasattr(synthetic, "main")
    for module in (writer, synthetic):
        source = Path(module.__file__).read_text(encoding="utf-8")
        assert "print(" not in source and "argparse" not in source and "except Exception" not in source


# -- the reference page ------------------------------------------------------------------------------------

def test_every_block_of_the_page_is_run_or_marked():
    unmarked = [f"line {b.line_no}: ```{b.lang}" for b in rr.blocks(PAGE.read_text(encoding="utf-8"))
                if b.marker is None and b.lang not in rr.RUN_LANGS]
    assert not unmarked, unmarked


@pytest.mark.long
def test_generate_page_runs_as_written(tmp_path):
    ran, failures = rr.run_document(PAGE, tmp_path)
    assert ran >= 20
    assert not failures, "\n\n".join(failures)
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_sigterm_while_a_tree_is_written_leaves_no_staging_folder(tmp_path):
    """SIGTERM (not only Ctrl-C) while the tree is written: the hidden staging folder beside DIR, a partial tree,
    was left behind."""
    import signal
    import subprocess
    import sys
    import time

    proc = subprocess.Popen([sys.executable, "-I", "-m", "rfbench", "generate", "widar", "--repetitions", "2",
                             str(tmp_path / "out")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not any(p.name.endswith(".tmp") for p in tmp_path.iterdir()) and proc.poll() is None:
        assert time.monotonic() < deadline, "no staging folder appeared"
        time.sleep(0.005)
    if proc.poll() is not None:
        pytest.skip("the tree was written before the signal could be sent")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM and "Traceback" not in err, err
    # no staging folder; the tree itself only when the interrupt landed where Python ignores exceptions (a
    # weakref callback during an import) and the job went on to write it whole — it then exited 0
    left = [p.name for p in tmp_path.iterdir()]
    assert left in ([], ["out"]), (proc.returncode, err, left)


@pytest.mark.parametrize("fmt", ["intel5300", "esp32", "nexmon", "atheros", "picoscenes"])
def test_a_corpus_of_generated_logs_is_synthetic(runner, tmp_path, fmt):
    """Logs written by ``generate bfee`` and ``generate hardware`` carried no mark ingest reads: a corpus of them
    ingested as ``synthetic: false`` and scored MEASURED (found by an adversarial probe). Each now says who wrote
    it — an Intel 5300 log in a first record its tools skip, another hardware's in its frames' source address
    (an Atheros log, which keeps none, in its first record's payload) — and the same logs without the mark are
    not synthetic."""
    import numpy as np

    from rfbench.io import hwlog

    suffix = {"intel5300": "dat", "esp32": "csv", "nexmon": "pcap", "atheros": "dat", "picoscenes": "csi"}[fmt]
    marked, plain = tmp_path / "marked", tmp_path / "plain"
    for seed, user in enumerate(("ann", "bob")):
        out = marked / f"{user}_push.{suffix}"
        args = (["generate", "bfee", str(out), "--seed", str(seed)] if fmt == "intel5300" else
                ["generate", "hardware", str(out), "--format", fmt, "--seed", str(seed), "--records", "8"])
        assert runner.invoke(app, args).exit_code == 0
        plain.mkdir(exist_ok=True)
        data = (sample_0x5_like(seed, 20) if fmt == "intel5300" else
                hwlog.reader(fmt).synthesize(np.random.default_rng(seed), 8))
        (plain / out.name).write_bytes(data)
    if fmt == "intel5300":
        assert (marked / "ann_push.dat").read_bytes().startswith(GENERATED_RECORD)
    for tree, synthetic_ in ((marked, True), (plain, False)):
        manifest = tmp_path / f"{tree.name}.json"
        r = runner.invoke(app, ["ingest", "files", str(tree), "-t", "{user}_{gesture}." + suffix, "--label",
                                "gesture", "--subject", "user", "-o", str(manifest)])
        assert r.exit_code == 0, r.output
        doc = json.loads(manifest.read_text())
        assert doc["synthetic"] is synthetic_, (tree.name, doc.get("synthetic_marker"))
        if synthetic_:
            assert doc["synthetic_marker"]["path"] == f"ann_push.{suffix}"
