"""``rfbench verify``: re-run a report's reproducer and compare every number exactly (DESIGN.md §7, §7a).

Steps:

1. Read and check the report (unreadable or malformed → exit 2).
2. Resolve every input under **one verify root** — the report's folder, or the ``root`` the caller gives —
   never anywhere else: a recorded path is taken relative to the report's folder, symlinks are resolved and
   the result must lie under the root, and it must be a regular file (checked with ``stat`` before anything
   is opened, so a FIFO or a device is never read). Anything else → exit 2, nothing hashed or printed.
3. Check each input's size against the report before hashing it, then its sha256 (changed → exit 1, nothing
   re-run).
4. Re-run the reproducer in a child ``python -I -m rfbench`` — the installed rfbench only: ``-I`` keeps the
   current folder and ``PYTHON*`` variables off ``sys.path`` — started in an empty temporary folder, in its
   own process group, under CPU-time and address-space limits (:class:`Limits`), with ``--json`` in place of
   ``-o``/``--force``/``--plots`` and each input option pointing at the file resolved in step 2. A reproducer
   that names a file option not recorded as an input is refused. The child is killed on timeout, when verify
   raises, and (through :func:`interrupt_reruns`) when verify is signalled; the child also asks the kernel to
   kill it if verify dies. Neither the report's ``reproducer.cwd`` nor any other recorded path is ever used
   as a working folder or an import location.
5. Compare the two documents key by key (exit 1 on any difference, listed readably). Not compared: the
   ``reproducer`` (the re-run's own command differs by construction), the inputs' ``path`` (recorded relative
   to the report) and ``pictures`` (drawn only with ``--plots``); the inputs' roles, sizes and hashes are
   compared.
6. Render ``report.md`` again from the report and compare the bytes with the file beside it (exit 1 when they
   differ; with a different rfbench version the difference is a note, not a mismatch of numbers).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator

from rfbench.errors import FormatError, RfbenchError, VerificationError
from rfbench.io.files import NotRegularFile, open_regular, read_json, read_regular
from rfbench.report.build import validate_report
from rfbench.settings import Settings, setting

__all__ = ["verify_report", "VerifyResult", "Limits", "diff_reports", "rerun_argv", "resolve_input",
           "interrupt_reruns", "rerun_guard", "RERUNNABLE", "LIMITS_ENV", "Interrupted"]

#: Commands whose reports can be re-run.
RERUNNABLE = ("score",)
#: Flags that write files or change the output's form: the re-run prints one JSON report and writes nothing.
_DROP_FLAGS = ("--force", "--json", "--plots")
_DROP_WITH_VALUE = ("-o", "--out")
def _file_options() -> tuple[str, ...]:
    """Options of the re-runnable commands whose value is a file (each must be a recorded input): every input
    field of :class:`~rfbench.report.settings.ScoreInputs`, and ``--skeleton`` when it names a layout file."""
    from rfbench.report.settings import ScoreInputs
    from rfbench.settings import flag_of, options_of

    return tuple(flag_of(f) for f, o in options_of(ScoreInputs) if o.kind == "path") + ("--skeleton",)
#: Environment variable through which verify hands its limits to the child (read by ``python -m rfbench``).
from rfbench._rerun import ENV as LIMITS_ENV  # noqa: E402  (the child reads it before anything else)

#: Largest report (and report.md) verify reads.
MAX_REPORT_BYTES = 256 << 20


@dataclass(frozen=True)
class Limits(Settings):
    """Bounds on one re-run. Defaults fit every report rfbench's own commands make on this kind of machine
    with room to spare; raise them for very large inputs.

    Attributes
    ----------
    timeout : float
        Wall-clock seconds before the re-run is killed.
    cpu_seconds : int
        CPU time of the child (``RLIMIT_CPU``).
    memory_mb : int
        Address space of the child in MiB (``RLIMIT_AS``; Numba and NumPy reserve more than they use).

    Examples
    --------
    >>> import rfbench
    >>> rfbench.VerifyLimits(timeout=60.0, memory_mb=4096)
    Limits(timeout=60.0, cpu_seconds=1800, memory_mb=4096)
    """

    timeout: float = setting(900.0, "Wall-clock seconds before the re-run is killed.", min=1.0, max=86_400.0)
    cpu_seconds: int = setting(1800, "CPU-time limit of the re-run, seconds.", min=1, max=172_800)
    memory_mb: int = setting(16384, "Address-space limit of the re-run, MiB.", min=64, max=1 << 20)


@dataclass
class VerifyResult:
    """Outcome of :func:`verify_report`: ``status`` is ``match``; mismatches raise VerificationError."""

    report: str
    status: str
    compared: int
    notes: list[str] = field(default_factory=list)
    argv: list[str] = field(default_factory=list)
    root: str = ""
    limits: dict = field(default_factory=dict)
    markdown: str = "identical"

    def to_dict(self) -> dict[str, Any]:
        return {"report": self.report, "status": self.status, "compared": self.compared, "notes": self.notes,
                "differences": [], "rerun_argv": self.argv, "root": self.root, "limits": self.limits,
                "markdown": self.markdown}


class Interrupted(RfbenchError):
    """Verify was signalled: its re-runs were killed (exit 128 + the signal number)."""

    def __init__(self, signum: int):
        super().__init__(f"interrupted by {signal.Signals(signum).name}; the re-run was stopped")
        self.exit_code = 128 + signum


# -- paths under the verify root ------------------------------------------------------------------------


def resolve_input(recorded: str, base: Path, root: Path, what: str, outside: str | None = None) -> Path:
    """The real path of a recorded input: ``base / recorded`` with symlinks resolved, which must lie under
    ``root`` and be a regular file. Checked with ``stat`` only: nothing is opened. ``outside`` says what was
    refused when the path resolves outside the root (default: verify's own words).

    Raises
    ------
    FormatError
        Missing, outside the root, or not a regular file (a folder, a FIFO, a device).
    """
    if not isinstance(recorded, str) or not recorded or "\x00" in recorded:
        raise FormatError(f"{what}: the report records no usable path")
    path = Path(recorded)
    candidate = path if path.is_absolute() else base / path
    try:
        real = candidate.resolve(strict=True)
    except FileNotFoundError:
        raise FormatError(f"{what} is missing: {candidate} (recorded as {recorded}); restore it to verify the "
                          f"report") from None
    except (RuntimeError, OSError) as exc:  # a symlink loop, a path component that is a file...
        raise FormatError(f"{what} {recorded}: cannot be resolved ({getattr(exc, 'strerror', None) or exc})") from None
    if not real.is_relative_to(root):
        raise FormatError(f"{what} {recorded}: resolves outside "
                          + (outside or f"the verify root {root}; verify reads only files under its root (pass "
                                        "`root` to widen it)"))
    try:
        mode = os.stat(real).st_mode
    except OSError as exc:
        raise FormatError(f"{what} {recorded}: cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(mode):
        raise FormatError(f"{what} {recorded}: not a regular file; verify reads regular files only")
    return real


def _open_regular(path: Path) -> int:
    """A read-only descriptor of ``path``, refusing anything that is not a regular file (without blocking)."""
    try:
        return open_regular(path)
    except NotRegularFile:
        raise FormatError(f"{path}: not a regular file; verify reads regular files only") from None


def _hash_if_size(path: Path, size: int) -> tuple[str | None, int]:
    """``(sha256, size)`` of a regular file; the hash is ``None`` (nothing read) when its size is not ``size``."""
    import hashlib

    fd = _open_regular(path)
    try:
        actual = os.fstat(fd).st_size
        if actual != size:
            return None, actual
        h = hashlib.sha256()
        left = size
        while left > 0:
            block = os.read(fd, min(1 << 20, left))
            if not block:
                break
            h.update(block)
            left -= len(block)
        return h.hexdigest(), size - left
    finally:
        os.close(fd)


def _read_regular(path: Path, cap: int, what: str) -> bytes:
    try:
        return read_regular(path, cap, what)
    except NotRegularFile:
        raise FormatError(f"{path}: not a regular file; verify reads regular files only") from None


_SHA256 = re.compile(r"[0-9a-f]{64}")


def _check_input_records(report: dict, report_path: Path) -> None:
    """Every input record is ``{role, path, bytes, sha256[, option]}`` with values of the right types and roles
    distinct, before any of them is used (a report is untrusted: it may hold anything)."""
    inputs = report.get("inputs")
    if not isinstance(inputs, list):
        raise FormatError(f"{report_path}: inputs is not a list of input records")
    roles = set()
    for n, item in enumerate(inputs):
        where = f"{report_path}: inputs[{n}]"
        if not isinstance(item, dict):
            raise FormatError(f"{where} is not an input record")
        role, path, size, digest = item.get("role"), item.get("path"), item.get("bytes"), item.get("sha256")
        if not isinstance(role, str) or not role:
            raise FormatError(f"{where} has no role")
        if role in roles:
            raise FormatError(f"{where}: the role {role!r} is recorded twice")
        roles.add(role)
        if not isinstance(path, str) or not path:
            raise FormatError(f"{where} ({role}) records no usable path")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise FormatError(f"{where} ({role}) records no size")
        if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
            raise FormatError(f"{where} ({role}) records no sha256")
        option = item.get("option")
        if option is not None and (not isinstance(option, str) or not option.startswith("--")):
            raise FormatError(f"{where} ({role}) records an option that is not a command-line option")


def _resolve_inputs(report: dict, report_path: Path, root: Path) -> dict[str, Path]:
    """Role → real path of each input (see :func:`resolve_input`); the records are checked first."""
    _check_input_records(report, report_path)
    base = report_path.parent
    return {item["role"]: resolve_input(item["path"], base, root, f"input {item['role']}")
            for item in report["inputs"]}


def _changed_inputs(report: dict, paths: dict[str, Path], shown_from: Path) -> list[dict[str, Any]]:
    """Inputs whose size or sha256 differ from the report's (``file``: the path as the user sees it, from the
    report's folder as given)."""
    diffs = []
    for item in report["inputs"]:
        size = item.get("bytes")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise FormatError(f"input {item['role']}: the report records no size")
        digest, actual = _hash_if_size(paths[item["role"]], size)
        if digest is None or digest != item.get("sha256"):
            now = f"{actual} bytes" + (f" sha256 {digest}" if digest is not None else " (not hashed: the size differs)")
            diffs.append({"path": f"inputs[{item['role']}]", "report": f"{size} bytes sha256 {item.get('sha256')}",
                          "rerun": now, "file": os.path.normpath(shown_from / item["path"])})
    return diffs


def _with_option(args: list[str], option: str, value: str) -> list[str]:
    out = list(args)
    out[out.index(option) + 1] = value
    return out


def _replay_chain(report: dict, paths: dict[str, Path], python: str, limits: Limits, where: Path,
                  notes: list[str]) -> dict:
    """Replay the windows and predict steps of a report whose predictions ``rfbench predict`` made: build the
    test side's windows again from the dataset, run the model again on them, and compare each step's output with
    the recorded one (the windows index field by field; the predictions bit for bit, or within the recorded
    tolerance when the onnxruntime version or the CPU's instruction-set level differs). Returns what the
    score step needs: ``{rule, pred}``.

    Raises
    ------
    VerificationError
        A step failed or gave other outputs than those recorded.
    """
    import numpy as np

    from rfbench.datasets.windows import WindowSettings
    from rfbench.nn.prediction_comparison import compare_predictions
    from rfbench.nn.prediction_record import load_prediction_record

    index = read_json(paths["rows"], "windows")
    record = load_prediction_record(paths["pred-record"])
    out = Path(tempfile.mkdtemp(prefix="rfbench-verify-chain-"))
    try:
        w = out / "windows"
        settings = WindowSettings.from_dict(index["settings"])
        steps = [("windows", ["windows", str(paths["split"]), "--side", "test", "-o", str(w), *settings.to_argv(),
                              "--json"]),
                 ("predict", ["predict", str(paths["model"]), "--windows", str(w), "-o", str(out / "pred.npy"),
                              *record.settings.argv(), "--json"])]
        for step, args in steps:
            proc = _run_child(args, python, limits, where)
            if proc.returncode != 0:
                lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()] or ["no message"]
                raise VerificationError(f"{where}: the chain's {step} step failed on re-run: {lines[-1].strip()}",
                                        differences=[{"path": f"chain.{step}", "report": "exit 0",
                                                      "rerun": f"exit {proc.returncode}"}])
            if step == "windows":
                again = read_json(w / "index.json", "windows")
                diffs = [{"path": f"chain.windows.{key}", "report": _short(index.get(key)),
                          "rerun": _short(again.get(key))}
                         for key in ("side", "task", "settings", "labels", "rows", "excluded", "dropped", "files")
                         if index.get(key) != again.get(key)]
                diffs += [{"path": f"chain.windows.{k}.sha256", "report": index[k].get("sha256"),
                           "rerun": again[k].get("sha256")}
                          for k in ("x", "y") if index[k].get("sha256") != again[k].get("sha256")]
                if diffs:
                    raise VerificationError(f"{where}: the windows built again from the dataset differ from those the "
                                            f"predictions were made over (first: {diffs[0]['path']})",
                                            differences=diffs)
        rerun = read_json(out / "pred.json", "prediction")
        outcome = compare_predictions(record, record.load_pred(), rerun, np.load(out / "pred.npy", allow_pickle=False))
        if not outcome.equal:
            raise VerificationError(f"{where}: the model run again gives other predictions: {outcome.detail}",
                                    differences=[{"path": "chain.predict", "report": "recorded predictions",
                                                  "rerun": outcome.detail}])
        notes.append(f"chain replayed: windows rebuilt from the dataset and the model run again ({outcome.detail})")
        kept = Path(tempfile.mkdtemp(prefix="rfbench-verify-pred-"))
        shutil.copyfile(out / "pred.npy", kept / "pred.npy")  # without its record: scored as plain predictions
        return {"rule": outcome.rule, "pred": str(kept / "pred.npy")}
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _check_chain(report: dict, paths: dict[str, Path], where: Path) -> None:
    """The report's ``chain`` (the windows, predict and score command lines, shown to readers) must be what the
    hashed windows index and prediction record give: the same steps, each with the settings those files record,
    and the report's own reproducer last. Its
    paths are shown as they were typed and are not compared; what is replayed comes from the hashed files, never
    from the chain. A report that carries a chain but not the files to replay it is refused."""
    from rfbench.datasets.windows import WindowSettings
    from rfbench.nn.prediction_record import load_prediction_record

    chain = report.get("chain")
    replayable = {"rows", "model", "pred-record"} <= set(paths)
    if chain is None and not replayable:
        return
    if not replayable:
        raise FormatError(f"{where}: the report carries a chain but not the windows index, model and prediction "
                          "record to replay it")
    index = read_json(paths["rows"], "windows")
    settings = WindowSettings.from_dict(index.get("settings"), f"{paths['rows']}: settings")
    record = load_prediction_record(paths["pred-record"])
    # (step, the words the command must hold at fixed places, the settings its tail must be)
    expected = [("windows", {1: "windows", 3: "--side", 4: "test", 5: "-o"}, settings.to_argv()),
                ("predict", {1: "predict", 3: "--windows", 5: "-o"}, record.settings.argv())]
    shown = chain if isinstance(chain, list) else None
    problem = None
    score = {"step": "score", "argv": (report.get("reproducer") or {}).get("argv")}
    if shown is None or len(shown) != len(expected) + 1:
        problem = "its steps are not windows, predict and score"
    elif shown[-1] != score:
        problem = "its score step is not the report's reproducer"
    else:
        for item, (step, fixed, tail) in zip(shown, expected):
            argv = item.get("argv") if isinstance(item, dict) else None
            if not isinstance(item, dict) or item.get("step") != step or not isinstance(argv, list) \
                    or not all(isinstance(a, str) for a in argv) or len(argv) < 7 or argv[0] != "rfbench" \
                    or any(argv[k] != word for k, word in fixed.items()):
                problem = f"its {step} step is not the command rfbench records"
                break
            if argv[7:] != list(tail):
                problem = f"its {step} step shows settings {argv[7:]} but the recorded files say {list(tail)}"
                break
    if problem is not None:
        raise VerificationError(f"{where}: the report's chain does not match the files it names: {problem}",
                                differences=[{"path": "chain", "report": _short(chain), "rerun": "as recorded in "
                                              "the windows index and the prediction record"}])


def _short(value: Any) -> Any:
    text = json.dumps(value, sort_keys=True, default=str)
    return value if len(text) <= 200 else text[:200] + "…"


def _changed_dataset_files(report: dict, paths: dict[str, Path], root: Path) -> list[dict[str, Any]]:
    """The dataset files a report's ground truth was read from (``provenance.ground_truth_files``, relative to
    the manifest's dataset root), re-checked like inputs: the root must lie under the verify root, each file
    must be a regular file there, and its size and sha256 must be the recorded ones."""
    files = (report.get("provenance") or {}).get("ground_truth_files")
    if not files:
        return []
    if "manifest" not in paths:
        raise FormatError("the report's ground truth was read from dataset files but it records no manifest")
    from rfbench.datasets.manifest import read_manifest

    manifest = read_manifest(paths["manifest"])
    dataset_root = manifest.root_dir(paths["manifest"])
    try:
        real_root = dataset_root.resolve(strict=True)
    except (FileNotFoundError, RuntimeError, OSError):
        raise FormatError(f"the manifest's dataset root {dataset_root} is missing; restore it to verify the "
                          f"report") from None
    if not real_root.is_relative_to(root):
        raise FormatError(f"the manifest's dataset root {dataset_root} is outside the verify root {root} (pass "
                          f"`root` to widen it)")
    diffs = []
    for n, item in enumerate(files):
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            raise FormatError(f"provenance.ground_truth_files[{n}] is not a file record")
        real = resolve_input(item["path"], real_root, root, "dataset file")
        size = item.get("bytes")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise FormatError(f"dataset file {item['path']}: the report records no size")
        digest, actual = _hash_if_size(real, size)
        if digest is None or digest != item.get("sha256"):
            diffs.append({"path": f"provenance.ground_truth_files[{item['path']}]",
                          "report": f"{size} bytes sha256 {item.get('sha256')}",
                          "rerun": f"{actual} bytes" + (f" sha256 {digest}" if digest else " (not hashed)"),
                          "file": item["path"]})
    return diffs


# -- the re-run command -----------------------------------------------------------------------------------


def rerun_argv(report: dict, paths: dict[str, Path]) -> list[str]:
    """The reproducer's arguments (after ``rfbench``) with outputs dropped, ``--json`` added and every input
    option pointing at the resolved input file.

    Options are recognised in every form the command line accepts: ``--opt value``, ``--opt=value`` and, for
    ``-o``, ``-o value`` and ``-oVALUE``. Dropped: ``-o``/``--out`` with its value, ``--force``, ``--json`` and
    ``--plots`` (the re-run writes nothing and prints one JSON report). A file option (``--pred``, ``--split``,
    a ``--skeleton`` layout file...) whose value is not a recorded input is refused: the re-run reads no file
    verify did not check.
    """
    from rfbench.metrics.skeletons import BUILTIN

    rep = report.get("reproducer")
    if not rep:
        raise FormatError("the report has no reproducer (evidence CLAIMED): there is nothing to re-run")
    argv = rep.get("argv") if isinstance(rep, dict) else None
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise FormatError("the report's reproducer argv is not a list of strings")
    if len(argv) < 2 or argv[0] != "rfbench" or argv[1] not in RERUNNABLE:
        raise FormatError(f"the reproducer {argv[:2]} is not an rfbench command verify can re-run "
                          f"({', '.join(RERUNNABLE)})")
    by_option = {i["option"]: i["role"] for i in report["inputs"] if isinstance(i, dict) and i.get("option")}
    file_options = _file_options()
    out = [argv[1]]
    i = 2
    while i < len(argv):
        a = argv[i]
        if a == "--":
            raise FormatError("the reproducer passes positional arguments after '--'; verify does not re-run them")
        name, eq, value = a.partition("=") if a.startswith("--") else (a, "", "")
        if a.startswith("-o") and len(a) > 2 and not a.startswith("--"):
            name, eq = "-o", "="  # -oFILE: the short option with its value attached
        if name in _DROP_FLAGS and not eq:
            i += 1
            continue
        if name in _DROP_WITH_VALUE:
            i += 1 if eq else 2
            continue
        if name in file_options:
            if not eq:
                value = argv[i + 1] if i + 1 < len(argv) else ""
            if name == "--skeleton" and value in BUILTIN:
                out += [a] if eq else [a, value]
                i += 1 if eq else 2
                continue
            if name not in by_option:
                raise FormatError(f"the reproducer passes {name} {value!r}, which the report does not record as an "
                                  f"input; verify re-runs only with files it has checked")
            out += [name, str(paths[by_option[name]])]
            i += 1 if eq else 2
            continue
        out.append(a)
        i += 1
    return out + ["--json"]


_LIVE: set = set()
_LIVE_LOCK = threading.Lock()


def interrupt_reruns() -> None:
    """Kill every re-run this process has started and not yet reaped (their whole process groups)."""
    with _LIVE_LOCK:
        procs = list(_LIVE)
    for proc in procs:
        _kill_group(proc)


def _kill_group(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


@contextlib.contextmanager
def rerun_guard() -> Iterator[None]:
    """While active (in the main thread), SIGTERM, SIGHUP and SIGINT kill every live re-run and raise
    :class:`Interrupted` — so a verify (or a demo) that is stopped never leaves a re-run behind."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        interrupt_reruns()
        raise Interrupted(signum)

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _run_child(args: list[str], python: str, limits: Limits, where: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env[LIMITS_ENV] = json.dumps({"cpu_seconds": int(limits.cpu_seconds), "memory_mb": int(limits.memory_mb),
                                  "parent": os.getpid()})
    env.pop("PYTHONPATH", None)
    scratch = tempfile.mkdtemp(prefix="rfbench-verify-")
    cmd = [python, "-I", "-m", "rfbench", *args]
    proc = subprocess.Popen(cmd, cwd=scratch, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    with _LIVE_LOCK:
        _LIVE.add(proc)
    try:
        out, err = proc.communicate(timeout=limits.timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.communicate()
        raise VerificationError(f"{where}: the re-run did not finish within {limits.timeout:g} s (raise it with "
                                f"`timeout`)", differences=[{"path": "rerun", "report": "finished",
                                                             "rerun": f"killed after {limits.timeout:g} s"}]) from None
    finally:
        _kill_group(proc)
        with _LIVE_LOCK:
            _LIVE.discard(proc)
        shutil.rmtree(scratch, ignore_errors=True)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


# -- comparing ----------------------------------------------------------------------------------------------


def _walk(a: Any, b: Any, path: str, out: list) -> int:
    """Append differences between a and b to out; return the number of leaf values compared."""
    if isinstance(a, dict) and isinstance(b, dict):
        n = 0
        for k in sorted(set(a) | set(b)):
            sub = f"{path}.{k}" if path else k
            if k not in a or k not in b:
                out.append({"path": sub, "report": a.get(k, "<absent>"), "rerun": b.get(k, "<absent>")})
                continue
            n += _walk(a[k], b[k], sub, out)
        return n
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append({"path": f"{path} (length)", "report": len(a), "rerun": len(b)})
        n = 0
        for i, (x, y) in enumerate(zip(a, b)):
            n += _walk(x, y, f"{path}[{i}]", out)
        return n
    if type(a) is not type(b) or a != b:
        out.append({"path": path, "report": a, "rerun": b})
    return 1


def _comparable(report: dict) -> dict:
    doc = {k: v for k, v in report.items() if k not in ("reproducer", "pictures", "chain")}
    doc["inputs"] = sorted(({k: v for k, v in i.items() if k != "path"} for i in report.get("inputs", [])),
                           key=lambda i: str(i.get("role")))
    return doc


def diff_reports(report: dict, rerun: dict) -> tuple[list[dict[str, Any]], int]:
    """Differences between two reports (excluding the reproducer, pictures and input paths), and how many
    values were compared. Results are matched by position and their labels compared too."""
    out: list = []
    n = _walk(_comparable(report), _comparable(rerun), "", out)
    return out, n


def _label(report: dict, path: str) -> str:
    """Add the result's label to a results[i] path, for a readable diff."""
    if path.startswith("results["):
        try:
            idx = int(path[len("results["):path.index("]")])
            return f"{path} ({report['results'][idx]['label']})"
        except (ValueError, IndexError, KeyError, TypeError):
            return path
    return path


def _markdown_difference(report: dict, md_path: Path, root: Path) -> tuple[str, str | None]:
    """``(status, first differing line)`` of the report.md beside the report against a fresh rendering."""
    from rfbench.report.render import render_markdown

    if not md_path.exists() and not md_path.is_symlink():
        return "absent", None
    real = resolve_input(md_path.name, md_path.parent, root, "report.md")
    have = _read_regular(real, MAX_REPORT_BYTES, "report.md").decode("utf-8", errors="replace")
    # as write_text stores it: a lone surrogate (a file name that is not UTF-8) as its \udcXX escape
    want = render_markdown(report).encode("utf-8", "backslashreplace").decode("utf-8")
    if have == want:
        return "identical", None
    a, b = have.splitlines(), want.splitlines()
    for n, (x, y) in enumerate(zip(a, b), start=1):
        if x != y:
            return "differs", f"line {n}: {x!r} in the file, {y!r} rendered from the report"
    return "differs", f"{len(a)} lines in the file, {len(b)} rendered from the report"


def verify_report(path: str | os.PathLike, *, root: str | os.PathLike | None = None, python: str | None = None,
                  limits: Limits | None = None) -> VerifyResult:
    """Re-run a report and compare (see the module docstring for every step).

    Parameters
    ----------
    path : path-like
        The report (``report.json``); ``report.md`` beside it is checked too when present.
    root : path-like, optional
        The verify root: inputs are read only from under it. Default: the report's folder.
    python : str, optional
        The interpreter of the re-run (default: this one).
    limits : Limits, optional
        Wall time, CPU time and address space of the re-run.

    Returns
    -------
    VerifyResult
        When every compared value is identical.

    Raises
    ------
    FormatError
        Unreadable or malformed report, no reproducer, a missing input, an input outside the root or not a
        regular file, a reproducer passing a file that is not a recorded input (exit 2).
    VerificationError
        An input's size or hash changed, the re-run failed, a value differs, or report.md does not render
        from the report (exit 1); ``differences`` lists them.

    Examples
    --------
    A report scored from files is MEASURED, and verify re-runs it:

    >>> import tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> import rfbench
    >>> d = Path(tempfile.mkdtemp())
    >>> gt = np.random.default_rng(0).normal(size=(8, 17, 2))
    >>> np.save(d / "gt.npy", gt); np.save(d / "pred.npy", gt + 0.001)
    >>> spec = rfbench.PoseSettings(skeleton="coco17", units="m", norm=("bbox",), k=(0.2,), metrics=("pck",))
    >>> run = rfbench.score_pose(d / "pred.npy", d / "gt.npy", settings=spec, out=d / "report.json")
    >>> run.report["evidence"]
    'MEASURED'
    >>> result = rfbench.verify_report(d / "report.json")
    >>> result.status, result.markdown
    ('match', 'identical')
    """
    limits = limits or Limits()
    path = Path(path)
    root = Path(root if root is not None else path.parent).resolve()
    if not root.is_dir():
        raise FormatError(f"verify root {root}: not a folder")
    report_real = resolve_input(path.name, path.parent.resolve(), path.parent.resolve(), "report")
    text = _read_regular(report_real, MAX_REPORT_BYTES, "report")
    try:
        doc = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        doc = read_json(report_real, "report")  # gives the precise one-line error
    report = validate_report(doc, str(path))
    paths = _resolve_inputs(report, report_real, root)
    changed = _changed_inputs(report, paths, path.parent)
    if changed:
        raise VerificationError(
            f"{path}: {len(changed)} input(s) changed since the report was made ("
            + ", ".join(f"{d['path']} {d['file']}" for d in changed) + "); numbers not re-computed",
            differences=changed,
        )
    changed = _changed_dataset_files(report, paths, root)
    if changed:
        raise VerificationError(
            f"{path}: {len(changed)} dataset file(s) the ground truth was read from changed since the report was "
            f"made (" + ", ".join(d["file"] for d in changed[:5]) + "); numbers not re-computed", differences=changed)
    args = rerun_argv(report, paths)
    _check_chain(report, paths, path)
    notes: list[str] = []
    replayed = None
    if {"rows", "model", "pred-record"} <= set(paths):
        replayed = _replay_chain(report, paths, python or sys.executable, limits, path, notes)
    if replayed is not None and replayed["rule"] != "identical bits":
        # the model run gave predictions within the recorded tolerance, not identical bits: the numbers must
        # still be identical when scored from the re-run's own predictions
        args = _with_option(args, "--pred", replayed["pred"])
    proc = _run_child(args, python or sys.executable, limits, path)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.lstrip().startswith("error:")]
        last = (errors or lines or ["no message"])[-1].strip()
        raise VerificationError(f"{path}: the re-run failed with exit code {proc.returncode}: {last}",
                                differences=[{"path": "rerun", "report": "exit 0", "rerun": f"exit {proc.returncode}"}])
    try:
        rerun = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise VerificationError(f"{path}: the re-run did not print a report") from None
    if replayed is not None and replayed["rule"] != "identical bits":
        diffs, compared = diff_reports({"results": report["results"]}, {"results": rerun["results"]})
        notes.append("predictions re-run under another environment agree within the recorded tolerance; every "
                     "number was re-scored from the re-run's predictions")
        rerun = dict(report, results=rerun["results"])
    diffs, compared = diff_reports(report, rerun)
    other_version = any(d["path"] == "rfbench_version" for d in diffs)
    if other_version:
        notes.append(f"made with rfbench {report['rfbench_version']}, re-run with {rerun.get('rfbench_version')}")
        diffs = [d for d in diffs if d["path"] != "rfbench_version"]
    for d in diffs:
        d["path"] = _label(report, d["path"])
    if diffs:
        raise VerificationError(f"{path}: {len(diffs)} value(s) differ on re-run (first: {diffs[0]['path']}: "
                                f"{diffs[0]['report']!r} in the report, {diffs[0]['rerun']!r} now)", differences=diffs)
    md_status, where = _markdown_difference(report, report_real.with_suffix(".md"), root)
    if md_status == "differs":
        if other_version:
            notes.append(f"report.md differs from this rfbench's rendering ({where}); it was rendered by another "
                         f"version")
        else:
            raise VerificationError(f"{path}: report.md does not render from report.json ({where}); it was edited",
                                    differences=[{"path": "report.md", "report": "rendered from report.json",
                                                  "rerun": where}])
    elif md_status == "absent":
        notes.append("no report.md beside the report: only the JSON was checked")
    return VerifyResult(str(path), "match", compared, notes, args, str(root), asdict(limits), md_status)
