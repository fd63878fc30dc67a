"""Fuzzing every command's file inputs: a damaged input is a clean error or a success, never a crash.

Each target starts from a valid input set (a bfee log, Widar-like and MM-Fi-like trees, a manifest, a split,
pose and gesture arrays, a report, a CSI archive, a config file), damages one input with hypothesis —
truncated, bit-flipped, spliced, replaced by junk, a forged .npy header declaring a huge shape, another dtype
or shape, NaN/1e308 values, an object (pickle) array, deeply nested or retyped JSON, odd TOML values, odd or
non-UTF-8 file names — and runs the command in-process (``typer.testing.CliRunner``) under a memory guard: the
address-space limit (``RLIMIT_AS``) is lowered to what the process uses plus 1 GiB for each example, so an
allocation sized by a forged header fails as a MemoryError, which this test reports as a crash.

The outcome must be: no exception escaping the command (a traceback, exit 1 from a crash); exit 0, 1 (a check
that failed, with ``error:`` lines), 2 (bad input: ``error:`` lines only on stderr, exactly one for a single
input) or 3 (proof SKIP); and no temporary file left behind.

Size: ``RFBENCH_FUZZ_EXAMPLES`` examples per target (default 5, a few seconds in the normal suite,
derandomised so it is the same run every time; verify, whose intact reports re-run a subprocess, gets 40 %).
The larger run documented in docs/robustness.md:
``RFBENCH_FUZZ_EXAMPLES=1000 .venv/bin/python -m pytest -q -s tests/test_fuzz.py`` (random, not derandomised;
it prints the cases run per target).

Crashes the fuzz found are pinned by :func:`test_crashes_the_fuzz_found_stay_fixed`, each reproduced exactly.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import traceback
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rfbench.cli import app

sys.path.insert(0, str(Path(__file__).resolve().parent))
import forge  # noqa: E402

EXAMPLES = int(os.environ.get("RFBENCH_FUZZ_EXAMPLES", "5"))
LARGE = "RFBENCH_FUZZ_EXAMPLES" in os.environ
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=not LARGE, database=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
#: Cases run, per target, filled while the module runs (the large run prints them).
COUNTS: dict[str, int] = {}


# ------------------------------------------------------------------------------------------------ the guard


def _address_space_in_use() -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


@contextlib.contextmanager
def memory_guard(margin: int = 1 << 30):
    """Lower this process's soft RLIMIT_AS to its current size + ``margin`` for the duration (Linux)."""
    try:
        import resource
    except ImportError:  # pragma: no cover
        yield
        return
    used = _address_space_in_use()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if used is None:  # pragma: no cover - no /proc: run unguarded
        yield
        return
    limit = used + margin
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def run_clean(argv: list[str], cwd: Path, single_input: bool = True):
    """Run rfbench in ``cwd`` under the memory guard and check that the outcome is clean."""
    from typer.testing import CliRunner

    old = os.getcwd()
    os.chdir(cwd)
    try:
        with memory_guard():
            result = CliRunner().invoke(app, argv, env={"COLUMNS": "200"})
    finally:
        os.chdir(old)
    where = f"rfbench {' '.join(map(repr, argv))}"
    exc = result.exception
    if exc is not None and not isinstance(exc, SystemExit):
        trace = "".join(traceback.format_exception(*result.exc_info)) if result.exc_info else repr(exc)
        raise AssertionError(f"{where} crashed:\n{trace}")
    code = result.exit_code
    assert code in (0, 1, 2, 3), f"{where}: exit {code}\n{result.output}"
    assert "Traceback" not in result.output, f"{where}:\n{result.output}"
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    if code == 2 and len(lines) == 2 and lines[1].startswith("Try 'rfbench "):  # a usage error
        assert lines[0].startswith("error: "), f"{where}: {lines}"
    elif code == 2:
        assert lines and all(x.startswith("error: ") for x in lines), f"{where}: exit 2 with stderr {lines}"
        if single_input:
            assert len(lines) == 1, f"{where}: exit 2 with {len(lines)} error lines: {lines}"
    if code == 1:
        assert any(x.startswith("error: ") for x in lines), f"{where}: exit 1 without an error line: {lines}"
    leftovers = [p for p in cwd.rglob("*.tmp")]
    assert not leftovers, f"{where} left temporary files: {leftovers}"
    return result


@contextlib.contextmanager
def workdir(corpus: Path, *names: str):
    """A fresh folder holding copies of the corpus entries ``names``."""
    tmp = Path(tempfile.mkdtemp(prefix="fuzz-", dir=corpus.parent))
    try:
        for name in names:
            src = corpus / name
            if src.is_dir():
                shutil.copytree(src, tmp / name)
            else:
                shutil.copy2(src, tmp / name)
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ------------------------------------------------------------------------------------------------ the corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """Valid inputs for every command, built once."""
    from typer.testing import CliRunner

    from rfbench.datasets.synthetic import make_mmfi_tree
    from rfbench.io.files import save_npz
    from rfbench.io.writer import synthetic_log

    root = tmp_path_factory.mktemp("fuzz") / "corpus"
    root.mkdir()
    (root / "log.dat").write_bytes(synthetic_log(6, seed=1))
    csi = root / "widar" / "CSI"
    seed = 10
    for date, users in (("20181109", ("user1", "user2")), ("20181211", ("user3",))):
        for user in users:
            for rec in (1, 2):
                for receiver in (1, 2):
                    path = csi / date / user / f"{user}-{rec}-1-1-1-r{receiver}.dat"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    seed += 1
                    path.write_bytes(synthetic_log(4, seed=seed))
    make_mmfi_tree(root / "mmfi", subjects=("S01", "S02", "S05", "S10"), actions=("A02",), frames=2, damage=False)
    runner = CliRunner()
    old = os.getcwd()
    os.chdir(root)
    try:
        for argv in (["ingest", "widar", "widar", "-o", "widar-manifest.json", "--workers", "1"],
                     ["ingest", "mmfi", "mmfi", "-o", "manifest.json"],
                     ["split", "manifest.json", "-p", "mmfi-s2", "--actions", "p3", "-o", "split.json"],
                     ["split", "widar-manifest.json", "-p", "cross-room", "--test", "3", "-o", "widar-split.json"]):
            r = runner.invoke(app, argv)
            assert r.exit_code == 0, (argv, r.output)
    finally:
        os.chdir(old)
    split = json.loads((root / "split.json").read_text())
    rng = np.random.default_rng(0)

    def poses(ids):
        out, groups = [], []
        for rid in ids:
            gt = np.load(root / "mmfi" / rid / "ground_truth.npy")
            out.append(gt)
            groups += [rid] * len(gt)
        return np.concatenate(out), np.array(groups)

    gt, groups = poses(split["test"])
    train_gt, train_groups = poses(split["train"])
    np.save(root / "gt.npy", gt)
    np.save(root / "pred.npy", gt + rng.normal(0, 0.02, gt.shape))
    np.save(root / "vis.npy", np.ones(gt.shape[:2], bool))
    np.save(root / "groups.npy", groups)
    np.save(root / "train_gt.npy", train_gt)
    np.save(root / "train_groups.npy", train_groups)
    np.save(root / "train_vis.npy", np.ones(train_gt.shape[:2], bool))
    wman = json.loads((root / "widar-manifest.json").read_text())
    wsplit = json.loads((root / "widar-split.json").read_text())
    names = {r["id"]: r["gesture"] for r in wman["recordings"]}
    label_set = sorted(set(names.values()))
    (root / "names.txt").write_text("\n".join(label_set) + "\n")
    np.save(root / "g_gt.npy", np.array([names[i] for i in wsplit["test"]]))
    np.save(root / "g_groups.npy", np.array(wsplit["test"]))
    np.save(root / "g_scores.npy", rng.dirichlet(np.ones(len(label_set)), len(wsplit["test"])))
    np.save(root / "g_train_gt.npy", np.array([names[i] for i in wsplit["train"]]))
    np.save(root / "g_train_groups.npy", np.array(wsplit["train"]))
    save_npz(root / "archive.npz", {"csi": (rng.normal(size=(40, 30, 3, 1)) + 1j).astype(np.complex64),
                                    "timestamp_low": np.arange(40)})
    np.save(root / "features.npy", rng.normal(size=(20, 6)))
    (root / "rfbench.toml").write_text("[adapt]\nrank = 2\nsteps = 1\nlearning_rate = 8.0\nmax_frames = 32\n"
                                       "\n[window]\nlength = 64\nstride = 32\n")
    os.chdir(root)
    try:
        r = runner.invoke(app, POSE_ARGV + ["-o", "report.json"])
        assert r.exit_code == 0, r.output
    finally:
        os.chdir(old)
    return root


POSE_FILES = {"--pred": "pred.npy", "--gt": "gt.npy", "--vis": "vis.npy", "--groups": "groups.npy",
              "--train-gt": "train_gt.npy", "--train-groups": "train_groups.npy", "--train-vis": "train_vis.npy"}
POSE_ARGV = ["score", "--task", "pose", "--skeleton", "h36m17", "--units", "m", "--norm", "hip-width,bbox",
             "--split", "split.json", "--bootstrap", "20"] + [x for kv in POSE_FILES.items() for x in kv]
GESTURE_FILES = {"--pred": "g_scores.npy", "--gt": "g_gt.npy", "--groups": "g_groups.npy",
                 "--train-gt": "g_train_gt.npy", "--train-groups": "g_train_groups.npy"}
GESTURE_ARGV = ["score", "--task", "gesture", "--label-set", "names.txt", "--split", "widar-split.json",
                "--bootstrap", "20"] + [x for kv in GESTURE_FILES.items() for x in kv]


# ------------------------------------------------------------------------------------------------ damage


def damage_bytes(data, raw: bytes) -> bytes:
    """Truncate, flip bits, splice in or overwrite with bytes, or keep ``raw``."""
    kind = data.draw(st.sampled_from(["keep", "truncate", "bitflip", "splice", "junk", "empty"]), label="bytes")
    if kind == "keep" or not raw:
        return raw
    if kind == "truncate":
        return raw[:data.draw(st.integers(0, len(raw) - 1), label="cut")]
    if kind == "bitflip":
        out = bytearray(raw)
        for pos in data.draw(st.lists(st.integers(0, len(raw) * 8 - 1), min_size=1, max_size=16), label="bits"):
            out[pos // 8] ^= 1 << (pos % 8)
        return bytes(out)
    if kind == "splice":
        at = data.draw(st.integers(0, len(raw)), label="at")
        return raw[:at] + data.draw(st.binary(min_size=1, max_size=64), label="insert") + raw[at:]
    if kind == "junk":
        return data.draw(st.binary(max_size=256), label="junk")
    return b""


HUGE_DIMS = st.sampled_from([0, 1, 2, 3, 17, 30, 10**6, 10**9, 10**12, 2**62])
DTYPES = ["<f8", "<f4", "<f2", "|b1", "<i8", "|i1", "<u2", "<c16", "<U8", "|S4", "<M8[s]", "|V8", ">f8"]


def damage_npy(data, raw: bytes) -> bytes:
    """A damaged .npy: byte damage, a forged header, another dtype or shape, odd values, a pickle, an .npz."""
    import io

    kind = data.draw(st.sampled_from(["bytes", "header", "dtype", "shape", "values", "pickle", "npz"]), label="npy")
    if kind == "bytes":
        return damage_bytes(data, raw)
    if kind == "header":
        shape = tuple(data.draw(st.lists(HUGE_DIMS, max_size=4), label="shape"))
        dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
        return forge.npy_header(shape, dtype) + bytes(data.draw(st.integers(0, 600), label="tail"))
    arr = np.load(io.BytesIO(raw), allow_pickle=False)
    if kind == "dtype":
        dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
        try:
            with warnings.catch_warnings():  # complex to real, float to int: the damage is the point
                warnings.simplefilter("ignore")
                arr = arr.astype(dtype)
        except (TypeError, ValueError, OverflowError):
            arr = np.zeros(arr.shape, dtype)
    elif kind == "shape":
        choice = data.draw(st.sampled_from(["flat", "extra", "drop", "first", "empty", "scalar", "transpose"]))
        arr = {"flat": lambda a: a.reshape(-1), "extra": lambda a: a[..., None], "drop": lambda a: a[:-1],
               "first": lambda a: a[:1], "empty": lambda a: a[:0], "scalar": lambda a: np.asarray(a.flat[0]),
               "transpose": lambda a: a.T}[choice](arr)
    elif kind == "values" and arr.dtype.kind == "f" and arr.size:
        arr = arr.copy()
        value = data.draw(st.sampled_from([np.nan, np.inf, -np.inf, 1e308, -1e308, 0.0, 5e-324]), label="value")
        idx = data.draw(st.integers(0, arr.size - 1), label="where")
        arr.flat[idx] = value
        if data.draw(st.booleans(), label="all"):
            arr[...] = value
    elif kind == "pickle":
        buf = io.BytesIO()
        np.save(buf, np.array([1, "x", None], dtype=object), allow_pickle=True)
        return buf.getvalue()
    elif kind == "npz":
        buf = io.BytesIO()
        np.savez(buf, a=arr)
        return buf.getvalue()
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=8),
                           lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=5), kids,
                                                                                      max_size=3), max_leaves=8)


def _paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:4]):
            yield from _paths(v, prefix + (i,))


def damage_json(data, raw: bytes) -> bytes:
    """A damaged JSON file: byte damage, deep nesting, a value replaced or removed, not UTF-8."""
    kind = data.draw(st.sampled_from(["bytes", "nest", "replace", "delete", "latin1"]), label="json")
    if kind == "bytes":
        return damage_bytes(data, raw)
    if kind == "latin1":
        return raw.replace(b'"', b'"\xe9', 1)
    doc = json.loads(raw)
    paths = list(_paths(doc))
    path = data.draw(st.sampled_from(paths), label="path")
    if kind == "nest":
        depth = data.draw(st.sampled_from([63, 64, 65, 1000, 100_000]), label="depth")
        text = json.dumps(doc)
        if not path:
            return ("[" * depth + text + "]" * depth).encode()
        new = "[" * depth + "]" * depth
        return _set(doc, path, "__NEST__", json.dumps(doc)).replace('"__NEST__"', new).encode()
    if kind == "replace":
        value = data.draw(JSON_VALUES, label="value")
        if not path:
            return json.dumps(value).encode()
        return _set(doc, path, value).encode()
    if not path:
        return b"{}"
    return _set(doc, path, _DELETE).encode()


_DELETE = object()


def _set(doc, path, value, _unused=None) -> str:
    import copy

    doc = copy.deepcopy(doc)
    node = doc
    for p in path[:-1]:
        node = node[p]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return json.dumps(doc)


TOML_VALUES = ['"x"', "-1", "0", "1e999", "inf", "nan", "-inf", "[1, 2]", "{a = 1}", "9" * 40, "true", "2.5",
               "[" * 1000 + "]" * 1000, "1979-05-27", '"\\u0000"']


def damage_toml(data, raw: bytes) -> bytes:
    kind = data.draw(st.sampled_from(["bytes", "value", "key", "table"]), label="toml")
    if kind == "bytes":
        return damage_bytes(data, raw)
    lines = raw.decode().splitlines()
    if kind == "value":
        i = data.draw(st.sampled_from([k for k, x in enumerate(lines) if "=" in x]), label="line")
        lines[i] = lines[i].split("=")[0] + "= " + data.draw(st.sampled_from(TOML_VALUES), label="value")
    elif kind == "key":
        lines.insert(1, data.draw(st.sampled_from(["unknown = 1", "rank.x = 1", '"" = 1', "a.b.c.d.e.f = 1"])))
    else:
        lines.append(data.draw(st.sampled_from(["[adapt]", "[[adapt]]", "[tool]\nrfbench = 1", "[window.x]"])))
    return "\n".join(lines).encode()


ODD_NAMES = [" space .npy", "é.npy", "-dash.npy", "new\nline.npy", os.fsdecode(b"\xff\xfe.npy"), "a" * 200 + ".npy",
             "..npy", "名前.npy", "[x].npy", "$HOME.npy"]


def odd_name(data, suffix: str) -> str:
    name = data.draw(st.sampled_from(ODD_NAMES), label="name")
    return name[: -len(".npy")] + suffix


# ------------------------------------------------------------------------------------------------ targets


def _put(work: Path, rel: str, raw: bytes) -> None:
    (work / rel).write_bytes(raw)


def fuzz_parse(data, corpus):
    with workdir(corpus, "log.dat") as work:
        raw = damage_bytes(data, (work / "log.dat").read_bytes())
        name = "log.dat"
        if data.draw(st.booleans(), label="rename"):
            name = odd_name(data, ".dat")
            (work / "log.dat").rename(work / name)
        _put(work, name, raw)
        run_clean(["parse", f"./{name}", "-o", "out"], work)


def fuzz_ingest_widar(data, corpus):
    with workdir(corpus, "widar") as work:
        files = sorted(p.relative_to(work).as_posix() for p in (work / "widar").rglob("*.dat"))
        target = data.draw(st.sampled_from(files), label="file")
        _put(work, target, damage_bytes(data, (work / target).read_bytes()))
        if data.draw(st.booleans(), label="rename"):
            new = odd_name(data, ".dat")
            (work / target).rename((work / target).parent / new)
        run_clean(["ingest", "widar", "widar", "-o", "m.json", "--workers", "1"], work)


def fuzz_ingest_mmfi(data, corpus):
    with workdir(corpus, "mmfi") as work:
        files = sorted(p.relative_to(work).as_posix() for p in (work / "mmfi").rglob("*") if p.is_file()
                       and p.name != "RFBENCH_SYNTHETIC.json")
        target = data.draw(st.sampled_from(files), label="file")
        raw = (work / target).read_bytes()
        raw = damage_npy(data, raw) if target.endswith(".npy") else damage_bytes(data, raw)
        _put(work, target, raw)
        if data.draw(st.booleans(), label="rename"):
            (work / target).rename((work / target).parent / odd_name(data, Path(target).suffix))
        verify = data.draw(st.booleans(), label="verify-frames")
        run_clean(["ingest", "mmfi", "mmfi", "-o", "m.json", *(["--verify-frames"] if verify else [])], work)


SPLIT_PROTOCOLS = [["-p", "mmfi-s2", "--actions", "p3"], ["-p", "cross-subject", "--test", "S05"],
                   ["-p", "random", "--allow-leaky"], ["-p", "leave-one-domain-out", "--domain", "subject"],
                   ["-p", "mmfi-s1", "--actions", "p1", "--allow-leaky"], ["-p", "cross-room"]]


def fuzz_split(data, corpus):
    with workdir(corpus, "manifest.json") as work:
        _put(work, "manifest.json", damage_json(data, (work / "manifest.json").read_bytes()))
        protocol = data.draw(st.sampled_from(SPLIT_PROTOCOLS), label="protocol")
        run_clean(["split", "manifest.json", *protocol, "-o", "out"], work)


def fuzz_audit(data, corpus):
    with workdir(corpus, "manifest.json", "split.json", "mmfi") as work:
        target = data.draw(st.sampled_from(["split.json", "manifest.json"]), label="file")
        _put(work, target, damage_json(data, (work / target).read_bytes()))
        claim = data.draw(st.sampled_from([[], ["--claim", "room"], ["--claim", "action"]]), label="claim")
        run_clean(["audit", "split.json", *claim], work)


def fuzz_score_pose(data, corpus):
    names = list(POSE_FILES.values()) + ["split.json", "manifest.json"]
    with workdir(corpus, *names) as work:
        option = data.draw(st.sampled_from(list(POSE_FILES) + ["--split"]), label="option")
        argv = list(POSE_ARGV)
        rel = argv[argv.index(option) + 1]
        if option == "--split":
            _put(work, rel, damage_json(data, (work / rel).read_bytes()))
        else:
            _put(work, rel, damage_npy(data, (work / rel).read_bytes()))
        if data.draw(st.booleans(), label="rename"):
            new = odd_name(data, Path(rel).suffix)
            (work / rel).rename(work / new)
            argv[argv.index(option) + 1] = new
        run_clean(argv, work)


def fuzz_score_gesture(data, corpus):
    names = list(GESTURE_FILES.values()) + ["names.txt", "widar-split.json", "widar-manifest.json"]
    with workdir(corpus, *names) as work:
        option = data.draw(st.sampled_from(list(GESTURE_FILES) + ["--label-set"]), label="option")
        argv = list(GESTURE_ARGV)
        rel = argv[argv.index(option) + 1]
        raw = (work / rel).read_bytes()
        _put(work, rel, damage_bytes(data, raw) if option == "--label-set" else damage_npy(data, raw))
        run_clean(argv, work)


def fuzz_verify(data, corpus):
    names = list(POSE_FILES.values()) + ["split.json", "manifest.json", "report.json"]
    with workdir(corpus, *names) as work:
        raw = damage_json(data, (work / "report.json").read_bytes())
        if raw == (work / "report.json").read_bytes():
            raw = raw.replace(b'"schema"', b'"schema_"', 1)  # an unchanged report would only re-run (slow)
        _put(work, "report.json", raw)
        run_clean(["verify", "report.json"], work)


def fuzz_adapt(data, corpus):
    import io
    import zipfile

    with workdir(corpus, "archive.npz", "features.npy") as work:
        kind = data.draw(st.sampled_from(["archive", "member", "features"]), label="adapt")
        name = "features.npy" if kind == "features" else "archive.npz"
        raw = (work / name).read_bytes()
        if kind == "archive":
            raw = damage_bytes(data, raw)
        elif kind == "features":
            raw = damage_npy(data, raw)
        else:
            with np.load(io.BytesIO(raw)) as z:
                members = {k: z[k] for k in z.files}
            member = data.draw(st.sampled_from(["csi", "csi_int8", "timestamp_low"]), label="member")
            buf = io.BytesIO()
            np.save(buf, members.get(member, members["csi"].real.astype(np.int8)[..., None].repeat(2, -1)))
            damaged = damage_npy(data, buf.getvalue())
            out = io.BytesIO()
            with zipfile.ZipFile(out, "w", data.draw(st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]))) \
                    as z:
                for k, v in members.items():
                    if k != member and not (member == "csi_int8" and k == "csi"):
                        b = io.BytesIO()
                        np.save(b, v)
                        z.writestr(f"{k}.npy", b.getvalue())
                z.writestr(f"{member}.npy", damaged)
            raw = out.getvalue()
        _put(work, name, raw)
        run_clean(["adapt", name, "--steps", "1", "--max-frames", "16", "--json"], work)


def fuzz_config(data, corpus):
    with workdir(corpus, "rfbench.toml") as work:
        _put(work, "rfbench.toml", damage_toml(data, (work / "rfbench.toml").read_bytes()))
        command = data.draw(st.sampled_from([["config", "check", "rfbench.toml"], ["config", "show", "--json"],
                                             ["adapt", "--synthetic", "--steps", "0", "--json"]]), label="command")
        run_clean(command, work)


TARGETS = {"parse": fuzz_parse, "ingest-widar": fuzz_ingest_widar, "ingest-mmfi": fuzz_ingest_mmfi,
           "split": fuzz_split, "audit": fuzz_audit, "score-pose": fuzz_score_pose,
           "score-gesture": fuzz_score_gesture, "verify": fuzz_verify, "adapt": fuzz_adapt, "config": fuzz_config}


#: Share of the examples a target gets (a verify example that keeps the report valid re-runs it: seconds).
WEIGHT = {"verify": 0.4}


@pytest.mark.long
@pytest.mark.parametrize("target", list(TARGETS))
def test_damaged_inputs_never_crash(corpus, target):
    fuzz = TARGETS[target]

    @settings(FUZZ, max_examples=max(1, round(EXAMPLES * WEIGHT.get(target, 1.0))))
    @given(data=st.data())
    def run(data):
        COUNTS[target] = COUNTS.get(target, 0) + 1
        fuzz(data, corpus)

    run()


def test_the_guard_turns_a_forged_allocation_into_a_crash(corpus):
    # The guard is what makes "never a MemoryError" testable: under it, allocating what a forged header
    # declares fails at once (it does not swap or succeed by overcommit).
    with memory_guard():
        with pytest.raises(MemoryError):
            np.ones(2 * 1024**3 // 8)  # 2 GiB, beyond the 1 GiB margin
    np.ones(2 * 1024**3 // 8 // 64)  # and after it, memory is back


# ---------------------------------------------------------------------------------------- crashes it found

FOUND_CRASHES = [
    "ingest-mmfi-damaged-npy-header",          # tokenize.TokenError in datasets.mmfi's header reader
    "verify-input-path-not-text",              # TypeError/KeyError: input records used unchecked by verify
    "ingest-mmfi-huge-ground-truth-empty-wifi-csi",  # MemoryError: a forged shape loaded through np.load
    "ingest-mmfi-verify-frames-zlib-bomb",     # a zlib-bombed .mat inflated towards 2.2 GB, unbounded
]


@pytest.mark.parametrize("case", FOUND_CRASHES)
def test_crashes_the_fuzz_found_stay_fixed(corpus, case):
    if case == "verify-input-path-not-text":
        with workdir(corpus, *POSE_FILES.values(), "split.json", "manifest.json", "report.json") as work:
            report = json.loads((work / "report.json").read_text())
            assert report["evidence"] == "SYNTHETIC"
            report["inputs"][1]["path"] = None
            (work / "report.json").write_text(json.dumps(report))
            run_clean(["verify", "report.json"], work)
            no_role = {k: v for k, v in report["inputs"][0].items() if k != "role"}
            for damage in (None, {**report["inputs"][0], "option": [None]}, no_role):
                report["inputs"][1] = damage
                (work / "report.json").write_text(json.dumps(report))
                run_clean(["verify", "report.json"], work)
    elif case == "ingest-mmfi-damaged-npy-header":
        with workdir(corpus, "mmfi") as work:
            gt = sorted((work / "mmfi").rglob("ground_truth.npy"))[0]
            raw = gt.read_bytes()
            gt.write_bytes(raw[:10] + b"'" + raw[10:])
            run_clean(["ingest", "mmfi", "mmfi", "-o", "m.json"], work)
    elif case == "ingest-mmfi-huge-ground-truth-empty-wifi-csi":
        with workdir(corpus, "mmfi") as work:
            gt = sorted((work / "mmfi").rglob("ground_truth.npy"))[0]
            gt.write_bytes(forge.npy_header((10**10, 17, 3)))
            for frame in (gt.parent / "wifi-csi").iterdir():
                frame.unlink()
            run_clean(["ingest", "mmfi", "mmfi", "-o", "m.json"], work)
    elif case == "ingest-mmfi-verify-frames-zlib-bomb":
        pytest.importorskip("scipy")
        with workdir(corpus, "mmfi") as work:
            frame = sorted((work / "mmfi").rglob("frame001.mat"))[0]
            assert forge.mat_bomb(frame) > 2e9 and frame.stat().st_size < 14e6
            result = run_clean(["ingest", "mmfi", "mmfi", "-o", "m.json", "--verify-frames", "--json"], work)
            # the read is bounded: no MemoryError, not even as the frame's problem
            assert "MemoryError" not in result.stdout, result.stdout


def test_cases_run_are_counted(capsys):
    """Runs last: the number of cases each target ran (shown with ``-s`` in the large run)."""
    if LARGE:
        with capsys.disabled():
            print(f"\nfuzz cases run: {sum(COUNTS.values())} {json.dumps(COUNTS, sort_keys=True)}")
    assert set(COUNTS) <= set(TARGETS)
