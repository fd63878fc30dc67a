"""``rfbench verify``: re-run a report's chain in a closed world and compare everything (DESIGN.md §7, §7a).

Steps:

1. **Read the report**, bounded: a regular file of at most :data:`MAX_REPORT_BYTES`, parsed within the bounds of
   :mod:`rfbench.io.documents` (nesting, number of values, number length, no NaN, no repeated key), then its
   structure checked (unreadable or malformed → exit 2).
2. **Close the world** (:func:`rfbench.report.closed_world.close_world`): every file the chain will read is
   resolved by the one resolver under the verify root, relative to the file that names it — the report's
   inputs, the manifest a split names, the dataset root and files a manifest lists, the split, manifest and
   label set a windows index names, the model and predictions a prediction record names (which must be the
   report's own inputs) — each a regular file whose size is checked before it is read; each distinct file is
   hashed once, within a wall-clock deadline (``timeout`` covers the whole command) and a cap on the bytes
   hashed (``max_gb``). A changed input → exit 1, nothing re-run. Each manifest's dataset tree is the folder its
   ``root`` names: the scored party's word, so the verdict names it, and ``datasets`` (``--dataset DIR``) holds
   it to the verifier's own copy — a chain whose tree is any other folder is a MISMATCH (exit 1).
3. **Rebuild the command**: the reproducer is parsed against ``rfbench score``'s own option table; an unknown,
   repeated or non-canonical option, ``--``, ``--help``, ``--json`` or ``--force`` is a MISMATCH (exit 1) and
   never run. The re-run's argv is rfbench's: built from the parsed settings, each input option pointing at the
   file verify resolved, the output in the re-run's private folder.
4. **Replay the chain** (when ``rfbench predict`` made the predictions): ``windows`` rebuilds the test side from
   the dataset and its index is compared with the recorded one field by field; ``predict`` runs the model again
   and its predictions are compared with **the file that was scored** (bit for bit; within the recorded
   tolerance, capped at :data:`MAX_TOLERANCE`, only when the onnxruntime version or CPU differs) and its record
   with the recorded one field by field.
5. **Re-score** in a child and compare the whole re-run report with the whole stored one: every field except the
   short allowlist :data:`ENVIRONMENT` (each entry says why it is not compared, and how it is checked instead).
   With predictions compared within tolerance, the whole report must also come out identical when scored from
   the re-run's own predictions. Pictures are re-drawn and compared by sha256 (and the stored PNGs hashed),
   whatever plotting version the report names.
6. **Render report.md** from the report and compare its bytes with the file beside it: an edited report.md is a
   MISMATCH whatever version the report names; a report from another rfbench version says so in the verdict.

Every child is ``python -I -m rfbench`` — the installed rfbench only — started in an empty folder of verify's
private temporary folder, in its own process group, under CPU-time and address-space limits, with the list of
files it may read (:mod:`rfbench.io.world`): it opens nothing verify did not check. Children are killed on
timeout, when verify raises, and when verify is signalled (:func:`rerun_guard`); the temporary folder is
removed on every exit path.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from rfbench._process import ENDING_SIGNALS
from rfbench._rerun import ENV as LIMITS_ENV
from rfbench.errors import (
    FILE_TOO_LARGE,
    FormatError,
    RfbenchError,
    ValidationError,
    VerificationError,
    malformed_as_format_error,
)
from rfbench.io.paths import resolve
from rfbench.report.build import validate_report
from rfbench.report.closed_world import Budget, ClosedWorld, close_world
from rfbench.settings import Settings, setting

__all__ = ["verify_report", "VerifyResult", "Limits", "diff_reports", "diff_documents", "rerun_plan", "RerunPlan",
           "resolve_input", "interrupt_reruns", "rerun_guard", "RERUNNABLE", "LIMITS_ENV", "Interrupted",
           "FOREIGN_ENV", "foreign_environment_removed", "check_not_a_rerun", "prepare_process", "LOADER_ENV",
           "check_loader_environment",
           "ENVIRONMENT", "INDEX_ENVIRONMENT", "RECORD_ENVIRONMENT", "MAX_REPORT_BYTES", "MAX_TOLERANCE",
           "Convention", "convention_text"]

#: Commands whose reports can be re-run.
RERUNNABLE = ("score",)
#: Largest report verify reads (the demo's are about 100 kB; 43,658 ground-truth files add about 6 MB).
MAX_REPORT_BYTES = 64 << 20
#: Largest relative tolerance verify applies to predictions re-run under another onnxruntime version or CPU,
#: whatever a prediction record declares.
MAX_TOLERANCE = 1e-4

#: What verify does not compare between the stored and the re-run report, and why. Everything else is compared.
ENVIRONMENT = {
    "reproducer": "the re-run's own command differs by construction; the recorded one is checked to be exactly "
                  "the command rfbench writes for the recorded settings",
    "inputs[].path": "where the files were, relative to the report; each input is compared by role, option, size "
                     "and sha256",
    "chain[].argv": "the commands as they were typed; checked against the settings the hashed windows index and "
                    "prediction record give",
    "rfbench_version": "the version that made the report; another version is named in the verdict",
}
#: What verify does not compare between the stored and the re-run windows index.
INDEX_ENVIRONMENT = {
    "split.path": "relative to the index's folder; the split is compared by sha256",
    "manifest.path": "relative to the index's folder; the manifest is compared by sha256",
    "settings.label_set": "relative to the index's folder; the label set is compared by its names and sha256",
    "labels.path": "relative to the index's folder; the label set is compared by its names and sha256",
    "rfbench_version": "the version that made the index",
}
#: What verify does not compare between the stored and the re-run prediction record.
RECORD_ENVIRONMENT = {
    "argv": "the command as typed; its settings are compared",
    "model.path": "relative to the record; the model is compared by sha256",
    "windows.path": "relative to the record; the windows are compared through the index",
    "windows.index": "the re-run's index sits elsewhere (its paths differ); the index is compared field by field",
    "windows.split.path": "relative to the record; the split is compared by sha256",
    "windows.manifest.path": "relative to the record; the manifest is compared by sha256",
    "runtime": "the onnxruntime that ran the model; another version makes the predictions compared within "
               "tolerance",
    "cpu": "the CPU that ran the model; another instruction-set level makes the predictions compared within "
           "tolerance",
    "rfbench_version": "the version that made the record",
}


@dataclass(frozen=True)
class Limits(Settings):
    """Bounds on one verify. Defaults fit every report rfbench's own commands make on this kind of machine with
    room to spare; raise them for very large inputs.

    Attributes
    ----------
    timeout : float
        Wall-clock seconds the whole verify may take: hashing, every re-run and the comparison.
    cpu_seconds : int
        CPU time of each re-run child (``RLIMIT_CPU``).
    memory_mb : int
        Address space of each re-run child in MiB (``RLIMIT_AS``; Numba and NumPy reserve more than they use),
        and the most address space verify's own process may add while it reads and parses the report and the
        files of its chain (:func:`_own_memory_bounded`).
    max_gb : float
        Most data verify hashes itself before re-running (each distinct file counted once), in GiB.

    Examples
    --------
    >>> import rfbench
    >>> rfbench.VerifyLimits(timeout=60.0, memory_mb=4096)
    Limits(timeout=60.0, cpu_seconds=1800, memory_mb=4096, max_gb=64.0)
    """

    timeout: float = setting(900.0, "Wall-clock seconds the whole verify may take (hashing and every re-run).",
                             min=1.0, max=86_400.0)
    cpu_seconds: int = setting(1800, "CPU-time limit of each re-run, seconds.", min=1, max=172_800)
    memory_mb: int = setting(16384, "Address-space limit of each re-run (and of what verify's own reading of the "
                                    "chain's files adds), MiB.", min=64, max=1 << 20)
    max_gb: float = setting(64.0, "Most GiB verify hashes itself (each distinct file once) before re-running.",
                            min=0.0, min_open=True, max=1 << 20)


@dataclass
class VerifyResult:
    """Outcome of :func:`verify_report`: ``status`` is ``match``; mismatches raise VerificationError.

    ``uncompared`` lists what verify did not compare and why (:data:`ENVIRONMENT`, and whatever this run could
    not compare: pictures when no plotting library is installed, predictions compared within tolerance);
    ``made_with`` is the rfbench version the report names when it is not this one; ``datasets`` the dataset
    trees the chain was ingested again from."""

    report: str
    status: str
    compared: int
    notes: list[str] = field(default_factory=list)
    argv: list[str] = field(default_factory=list)
    root: str = ""
    limits: dict = field(default_factory=dict)
    markdown: str = "identical"
    uncompared: list[dict] = field(default_factory=list)
    made_with: str | None = None
    #: each dataset tree the chain was ingested again from: ``{tree, manifest, files, left_out, pinned,
    #: convention, convention_pinned}`` (``pinned``: it is one of the folders given as ``datasets``;
    #: ``convention``: a template corpus's, ``convention_pinned``: the one given as ``convention``)
    datasets: list[dict] = field(default_factory=list)
    #: the name of the Markdown file checked (the report's, ``.md`` for ``.json``: where score writes it)
    markdown_file: str = "report.md"
    #: the re-run's own predictions (``.npy`` bytes) when they were compared with the scored ones within
    #: tolerance, else None: what a sweep's drops are recomputed from too (not part of :meth:`to_dict`)
    rerun_pred: bytes | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"report": self.report, "status": self.status, "compared": self.compared, "notes": self.notes,
                "differences": [], "rerun_argv": self.argv, "root": self.root, "limits": self.limits,
                "markdown": self.markdown, "markdown_file": self.markdown_file, "uncompared": self.uncompared,
                "made_with": self.made_with, "datasets": self.datasets}


class Interrupted(RfbenchError):
    """Verify was signalled: its re-runs were killed (exit 128 + the signal number)."""

    def __init__(self, signum: int):
        super().__init__(f"interrupted by {signal.Signals(signum).name}; the re-run was stopped")
        self.exit_code = 128 + signum


#: What a re-run's error output says when it met the address-space limit (Python, the C and C++ runtimes, the
#: dynamic loader mapping a library, OpenBLAS): the verdict then names the limit, as it names a timeout.
_OUT_OF_MEMORY = re.compile(r"MemoryError|Cannot allocate memory|failed to map segment|Memory allocation still "
                            r"failed|std::bad_alloc|out of memory|Unable to allocate section memory",
                            re.IGNORECASE)
#: What a re-run's error output says when it could not start a thread or load a library: under an address-space
#: limit of a few hundred MiB, the limit (a thread's stack, llvmlite's library mapped), though not certainly.
_START_UP_UNDER_LIMIT = re.compile(r"can't start new thread|could not find/load shared object file", re.IGNORECASE)
#: What a re-run's error says when an output could not be written for want of room (``rfbench.io.files.
#: output_reason``'s words): the disk verify's temporary folder is on, a quota, the file size limit (``ulimit -f``).
_OUT_OF_ROOM = re.compile("|".join(re.escape(words) for words in ("no space left on the device", "disk quota exceeded",
                                                                   FILE_TOO_LARGE)))


def _mismatch(where: Any, message: str, path: str, report: Any, rerun: Any) -> VerificationError:
    return VerificationError(f"{where}: {message}", differences=[{"path": path, "report": report, "rerun": rerun}])


def resolve_input(recorded: str, base: Path, root: Path, what: str, outside: str | None = None) -> Path:
    """The real path of an input recorded relative to ``base`` (a report's folder), under ``root``, a regular
    file (:func:`rfbench.io.paths.resolve`; nothing is opened)."""
    return resolve(recorded, base, what=what, root=root, outside=outside).path


# -- verify's own memory --------------------------------------------------------------------------------------


def _address_space() -> int | None:
    """This process's address space in bytes (what ``RLIMIT_AS`` counts), or None where the system does not say."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


@contextlib.contextmanager
def _own_memory_bounded(limits: Limits) -> Iterator[None]:
    """While active, verify's own process may add at most ``limits.memory_mb`` MiB to its address space
    (``RLIMIT_AS``, lowered for the duration and restored after): the report and every file of its chain are
    parsed in this process, and a manifest of 16 million short keys, within the bounds of
    :mod:`rfbench.io.documents`, took 3.9 GB. An allocation past it is a :class:`FormatError`, as the other
    limits are; where the system does not tell the address space, nothing is lowered."""
    import resource

    used = _address_space()
    if used is None:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    bound = used + (int(limits.memory_mb) << 20)
    if soft != resource.RLIM_INFINITY:
        bound = min(bound, soft)
    if hard != resource.RLIM_INFINITY:
        bound = min(bound, hard)
    resource.setrlimit(resource.RLIMIT_AS, (bound, hard))
    try:
        yield
    except MemoryError:
        raise FormatError(f"reading the report and the files of its chain needed more than {int(limits.memory_mb)} "
                          "MiB of memory in verify's own process (raise it with `memory_mb`)") from None
    except (OSError, ImportError) as exc:  # a library that could not be mapped within the bound (llvmlite's, NumPy's)
        text = str(exc)
        if not (_START_UP_UNDER_LIMIT.search(text) or _OUT_OF_MEMORY.search(text)):
            raise
        raise FormatError(f"verify's own process could not load a library within {int(limits.memory_mb)} MiB of "
                          f"memory, most likely because of that limit (raise it with `memory_mb`): "
                          f"{' '.join(text.split())[:160]}") from None
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


# -- the report itself ----------------------------------------------------------------------------------------


def _report_file(path: Path) -> Path:
    """The report's real path: it must exist and be a regular file (said before anything about the root)."""
    if not os.path.lexists(path):
        raise FormatError(f"{path}: no such report")
    return resolve(path.name, path.parent, what="report").path


def _read_report(real: Path, shown: Path, sha256: str | None = None, reader: str = "the summary's checks") -> dict:
    """The report, read once and parsed from those bytes; with ``sha256`` (a robustness summary's cell), those
    bytes must be the ones the summary's checks read, else it changed in between: a :class:`VerificationError`
    before anything is re-run (what is re-run is what the summary was checked against, never a second read)."""
    import hashlib

    from rfbench.io.documents import parse_json_bytes
    from rfbench.io.files import read_input_bytes
    from rfbench.report.common import is_version

    data = read_input_bytes(real, cap=MAX_REPORT_BYTES, expected="a JSON file")
    if sha256 is not None:
        digest = hashlib.sha256(data).hexdigest()
        if digest != sha256:
            raise VerificationError(f"{shown}: not the report {reader} read (its sha256 is now "
                                    f"{digest[:16]}…, {reader} read {sha256[:16]}…): it changed while verify "
                                    "ran; not re-run", differences=[{"path": "sha256", "report": sha256,
                                                                     "rerun": digest}])
    doc = parse_json_bytes(data, str(real))
    if not isinstance(doc, dict):
        raise FormatError(f"{real}: expected a JSON object, found {type(doc).__name__}")
    report = validate_report(doc, str(shown))
    _check_shapes(report, shown)
    if not is_version(report.get("rfbench_version")):  # shown in report.md and the verdict: it must be a version
        raise FormatError(f"{shown}: rfbench_version {str(report.get('rfbench_version'))[:60]!r} is not a version "
                          "rfbench writes")
    return report


def _check_shapes(report: Mapping, where: Path) -> None:
    """The report's sections verify reads are of the types rfbench writes (a malformed one is one line, exit 2)."""
    for key in ("provenance", "coverage", "split", "baseline", "bootstrap"):
        if report.get(key) is not None and not isinstance(report[key], Mapping):
            raise FormatError(f"{where}: {key} is not an object")
    if not isinstance(report.get("notes", []), list):
        raise FormatError(f"{where}: notes is not a list")
    chain = report.get("chain")
    if chain is not None and not isinstance(chain, list):
        raise FormatError(f"{where}: chain is not a list of steps")
    pictures = report.get("pictures")
    if pictures is not None:
        if not isinstance(pictures, list):
            raise FormatError(f"{where}: pictures is not a list")
        for n, p in enumerate(pictures):
            if not isinstance(p, Mapping) or not isinstance(p.get("caption"), str) \
                    or not isinstance(p.get("file"), str):
                raise FormatError(f"{where}: pictures[{n}] is not a picture record")
    rep = report.get("reproducer")
    if isinstance(rep, Mapping) and not isinstance(rep.get("cwd"), str):
        raise FormatError(f"{where}: the reproducer records no working folder")


# -- the re-run's command -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RerunPlan:
    """The score command a report's reproducer records, parsed against ``rfbench score``'s own options."""

    task: str
    inputs: Any  # ScoreInputs, paths as recorded
    settings: Any  # PoseSettings | GestureSettings
    bootstrap: Any
    options: Any
    out: str | None
    plots: bool

    def argv(self, world: ClosedWorld, out: Path, plots: bool, pred: Path | None = None) -> list[str]:
        """The re-run's arguments (after ``python -m rfbench``): every input option pointing at the file verify
        resolved (``pred`` replaces the predictions), the report written to ``out``."""
        from rfbench.report.score import reproducer_argv
        from rfbench.settings import options_of

        paths = {}
        for f, o in options_of(type(self.inputs)):
            value = getattr(self.inputs, f.name)
            if value is not None:
                if o.role not in world.inputs:
                    raise FormatError(f"the reproducer passes {o.flag or f.name} {value}, which the report does not "
                                      "record as an input; verify re-runs only with files it has checked")
                paths[f.name] = pred if (pred is not None and o.role == "pred") else world.inputs[o.role].path
        inputs = replace(self.inputs, **paths)
        settings = self.settings
        if self.task == "pose" and self._custom_skeleton():
            settings = replace(settings, skeleton=str(world.inputs["skeleton"].path))
        args = reproducer_argv(self.task, inputs, settings, self.bootstrap, self.options, out, plots,
                               show_path=str)
        return args[1:]

    def _custom_skeleton(self) -> bool:
        from rfbench.metrics.skeletons import BUILTIN

        return str(self.settings.skeleton) not in BUILTIN


def rerun_plan(report: Mapping, where: Any = "report") -> RerunPlan:
    """Parse the reproducer against ``rfbench score``'s own option table and check that it is exactly the
    command rfbench records for those settings.

    Raises
    ------
    FormatError
        No reproducer, or not an ``rfbench score`` command (exit 2: there is nothing to re-run).
    VerificationError
        An option score does not have, one given twice, ``--``, ``--help``, a value settings refuse, or any
        difference from the canonical command (exit 1: never run).
    """
    from rfbench.report.score import reproducer_argv
    from rfbench.report.settings import BootstrapSettings, GestureSettings, PoseSettings, ReportOptions, ScoreInputs
    from rfbench.settings import SettingError, _kind, flag_of, options_of

    rep = report.get("reproducer")
    if not rep:
        raise FormatError("the report has no reproducer (evidence CLAIMED): there is nothing to re-run")
    argv = rep.get("argv") if isinstance(rep, Mapping) else None
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise FormatError("the report's reproducer argv is not a list of strings")
    if len(argv) < 2 or argv[0] != "rfbench" or argv[1] not in RERUNNABLE:
        raise FormatError(f"the reproducer {argv[:2]} is not an rfbench command verify can re-run "
                          f"({', '.join(RERUNNABLE)})")

    def refuse(why: str) -> VerificationError:
        return _mismatch(where, f"the reproducer is not a command verify runs: {why}", "reproducer.argv",
                         " ".join(argv[:40]), "not run")

    extra = sorted(str(k) for k in rep if k not in ("argv", "cwd"))
    if extra:  # (the reproducer is not compared with the re-run's: it must be exactly what rfbench writes)
        raise _mismatch(where, f"the reproducer holds {', '.join(map(repr, extra[:5]))}"
                               f"{' …' if len(extra) > 5 else ''}, which rfbench never writes (a reproducer is its "
                               "argv and cwd)", "reproducer", ", ".join(extra[:5]), "argv and cwd only")

    tokens = argv[2:]
    if len(tokens) < 2 or tokens[0] != "--task" or tokens[1] not in ("pose", "gesture"):
        raise refuse("it does not start with --task pose|gesture, as rfbench records it")
    task = tokens[1]
    classes = (ScoreInputs, PoseSettings if task == "pose" else GestureSettings, BootstrapSettings, ReportOptions)
    table: dict[str, tuple] = {}
    for cls in classes:
        for f, o in options_of(cls):
            if o.tasks is None or task in o.tasks:
                table.setdefault(flag_of(f), (cls, f.name, _kind(f)))
    values: dict = {cls: {} for cls in classes}
    seen, out, plots = set(), None, False
    i = 2
    while i < len(tokens):
        t = tokens[i]
        if t in seen:
            raise refuse(f"it passes {t} twice")
        seen.add(t)
        if t == "-o":
            if i + 1 >= len(tokens):
                raise refuse("-o has no value")
            out, i = tokens[i + 1], i + 2
            continue
        if t == "--plots":
            plots, i = True, i + 1
            continue
        if t not in table:
            raise refuse(f"{t!r} is not an option rfbench score records")
        cls, name, kind = table[t]
        if kind == "bool":
            values[cls][name], i = True, i + 1
            continue
        if i + 1 >= len(tokens):
            raise refuse(f"{t} has no value")
        text = tokens[i + 1]
        try:
            values[cls][name] = int(text) if kind == "int" else float(text) if kind == "float" else text
        except ValueError:
            raise refuse(f"{t} {text!r} is not a {kind}") from None
        i += 2
    try:
        built = [cls(**values[cls]) for cls in classes]
    except (SettingError, RfbenchError, TypeError, ValueError) as exc:
        raise refuse(str(exc)) from None
    inputs, settings, bootstrap, options = built
    canonical = reproducer_argv(task, inputs, settings, bootstrap, options, Path(out) if out is not None else None,
                                plots, show_path=lambda p: str(p))
    if out is not None:  # the output is shown as recorded (it is dropped from the re-run)
        canonical[canonical.index("-o") + 1] = out
    if canonical != argv:
        first = next((k for k, (a, b) in enumerate(zip(argv, canonical)) if a != b), min(len(argv), len(canonical)))
        shown = argv[first] if first < len(argv) else "<end>"
        want = canonical[first] if first < len(canonical) else "<end>"
        raise refuse(f"it differs from the command rfbench records for its own settings at word {first} "
                     f"({shown!r}, where rfbench writes {want!r})")
    return RerunPlan(task, inputs, settings, bootstrap, options, out, plots)


# -- children ------------------------------------------------------------------------------------------------

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


#: The signals verify stops cleanly on: :data:`rfbench._process.ENDING_SIGNALS`, and the CPU-time limit's (a
#: ``ulimit -t`` on verify itself: its re-runs are killed and its temporary folder removed all the same). Not the
#: file size limit's (``ulimit -f``): SIGXFSZ stays ignored, as Python leaves it, so a write past the limit fails
#: with an error naming what could not be written (exit 2), where verify ended as if stopped from outside (exit
#: 153, "interrupted by SIGXFSZ").
_ENDING_SIGNALS = ENDING_SIGNALS + tuple(getattr(signal, name) for name in ("SIGXCPU",) if hasattr(signal, name))


@contextlib.contextmanager
def rerun_guard() -> Iterator[None]:
    """While active (in the main thread), SIGTERM, SIGHUP and SIGINT — and every other signal whose default is to
    end the process that is sent from outside (SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2, SIGABRT, SIGXCPU...:
    :data:`_ENDING_SIGNALS`) — kill every live re-run and raise :class:`Interrupted`, so a verify (or a demo)
    that is stopped never leaves a re-run behind, and its temporary folder is removed on the way out (SIGKILL
    cannot be caught: the children die with it, by the kernel's parent-death signal, but the folder stays)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    received: list[int] = []

    def handler(signum, frame):
        interrupt_reruns()
        received.append(signum)
        raise Interrupted(signum)

    old = {s: signal.signal(s, handler) for s in _ENDING_SIGNALS}
    try:
        yield
    except Interrupted:
        raise
    except BaseException as exc:
        if received:  # the signal's exception turned into another on its way out (Python wraps an exception raised
            # while a class is made in a RuntimeError, "Error calling __set_name__"): still the signal, one line
            raise Interrupted(received[0]) from exc
        raise
    finally:
        for s, h in old.items():
            signal.signal(s, h)


#: Variables that point a library in a re-run (or in verify itself) at files outside verify's world, which the
#: closed world never sees since the library opens them itself: numba's cache of compiled kernels (its index files
#: are pickles, loaded before any check: code of the party's run inside verify), matplotlib's configuration and font
#: cache (which font file draws a picture's digits), the XDG folders both fall back on, and fontconfig's
#: configuration (the font folders ``fc-list`` gives Matplotlib when a re-run, in a HOME of its own, builds its
#: font cache). Removed from every
#: re-run's environment and, by ``rfbench verify``, from its own (:func:`foreign_environment_removed`); each library
#: then reads its default place, the verifier's own.
FOREIGN_ENV = ("PYTHONPATH", "NUMBA_CACHE_DIR", "MPLCONFIGDIR", "MATPLOTLIBRC", "XDG_CACHE_HOME", "XDG_CONFIG_HOME",
               "XDG_DATA_HOME", "FONTCONFIG_FILE", "FONTCONFIG_PATH", "FONTCONFIG_SYSROOT")


def foreign_environment_removed(environ: dict | None = None) -> list[str]:
    """Remove :data:`FOREIGN_ENV` from ``environ`` (default: this process's environment, before numba or
    matplotlib is imported); returns the names removed."""
    environ = os.environ if environ is None else environ
    removed = [k for k in FOREIGN_ENV if k in environ]
    for k in removed:
        del environ[k]
    return removed


#: The dynamic loader's variables: folders it searches for shared libraries before the system's, and libraries it
#: loads into every process. An empty or relative entry is read relative to the current folder, so verify run
#: from inside a report folder loaded a library shipped there (llvmlite opens an optional ``libsvml.so`` when
#: numba is imported): code of the party's inside verify. Checked by :func:`check_loader_environment` and
#: removed from every re-run's environment.
LOADER_ENV = ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT")


def check_loader_environment(root: str | os.PathLike, environ: Mapping[str, str] | None = None,
                             path: Sequence[str] | None = None, folder: str | os.PathLike | None = None) -> None:
    """Refuse a loader variable (:data:`LOADER_ENV`) that can make the loader open a file of the verify root:
    an empty entry of ``LD_LIBRARY_PATH`` (the current folder), an entry that is not an absolute path, or one
    that is the verify ``root`` or lies under it, links resolved. The loader read the variables when this process
    started, so ``rfbench verify`` asks this before it imports numba or onnxruntime; the re-runs never get them.
    Likewise a ``HOME`` in the report's ``folder`` (default: the root; Matplotlib's and Numba's caches live
    under ``HOME`` when no other variable says where), and in the verify root (the report's folder when the root
    is ``/``, which holds every home): a variable with which Python reads code as it starts
    (:data:`_PYTHON_PLACES`; the console script then started again isolated, :mod:`rfbench._entry`, but what the
    first start ran may have undone that), and an entry of Python's import path ``path`` (default ``sys.path``)
    that is not part of the Python installation: the console script has dropped the current folder from it, but
    an absolute ``PYTHONPATH`` entry there would be searched before the installed libraries.

    Raises
    ------
    ValidationError
        One of them is so (exit 2): unset it, or give folders of your own outside the verify root.
    """
    environ = os.environ if environ is None else environ
    real_root = Path(os.path.realpath(root))
    for name in LOADER_ENV:
        value = environ.get(name)
        if not value:
            continue
        # as the loader splits them: a library path on ':' and ';', the preloaded libraries on ':' and blanks
        # (where it skips empty entries), the audit libraries on ':'
        entries = re.split(r"[:;]" if name == "LD_LIBRARY_PATH" else r"[:\s]" if name == "LD_PRELOAD" else ":",
                           value)
        for entry in entries:
            if not entry:
                if name != "LD_LIBRARY_PATH":
                    continue
                why = "an empty entry, which the loader reads as the current folder"
            elif not entry.startswith("/"):
                why = f"the relative entry {entry!r}, which the loader reads from the current folder"
            else:
                real = Path(os.path.realpath(entry))
                if real != real_root and real_root not in real.parents:
                    continue
                why = f"the entry {entry!r}, in the verify root {real_root}"
            raise ValidationError(f"the environment variable {name} holds {why}: a library there would run inside "
                                  f"verify; unset {name}, or give folders of your own outside the verify root, and "
                                  "run verify again")
    real_folder = Path(os.path.realpath(folder)) if folder is not None else real_root
    region = real_root if real_root != Path(real_root.anchor) else real_folder  # (a root of / holds every home)
    for name in _PYTHON_PLACES:
        value = environ.get(name)
        if not value:
            continue
        for entry in value.split(os.pathsep) if name == "PYTHONPATH" else [value]:
            if _within(os.path.abspath(entry or "."), region):  # (relative or empty: from the current folder)
                raise ValidationError(f"the environment variable {name} names {entry!r}, in the verify root "
                                      f"{region}: Python reads code from there as it starts (a sitecustomize.py, a "
                                      "standard library, cached bytecode), before any line of rfbench; unset "
                                      f"{name} and run verify again")
    home = environ.get("HOME")
    if home and _within(home, real_folder):  # where Matplotlib and Numba keep their caches when nothing else is set
        raise ValidationError(f"the environment variable HOME is {home!r}, in the report's folder {real_folder}: "
                              "Matplotlib's font cache and Numba's cache would be read from there; "
                              "run verify with a HOME of your own")
    installed = [Path(os.path.realpath(p)) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix}]
    for entry in sys.path if path is None else path:
        if not entry or not os.path.isabs(entry) or not _within(entry, region):
            continue
        real = Path(os.path.realpath(entry))
        if not any(real == p or p in real.parents for p in installed):  # (an environment in the root is yours)
            raise ValidationError(f"Python's import path holds {entry!r}, in the verify root {region} (from "
                                  "PYTHONPATH, or a .pth file): a module there would be imported inside verify "
                                  "instead of the installed one; unset PYTHONPATH and run verify again from a "
                                  "folder of your own")


#: The variables of :data:`rfbench._entry.CODE_ENV` that name a place Python reads code from as it starts (the
#: import path, a standard library, the user's site folder, the bytecode cache's folder, a start-up file).
_PYTHON_PLACES = ("PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONPYCACHEPREFIX", "PYTHONSTARTUP")


def _within(entry: str, real_root: Path) -> bool:
    """Whether ``entry`` (absolute, links resolved) is ``real_root`` or lies under it."""
    real = Path(os.path.realpath(entry))
    return real == real_root or real_root in real.parents


def prepare_process(report: str | os.PathLike, root: str | os.PathLike | None = None) -> None:
    """Ready the process verify's re-runs start from, before numba, matplotlib or onnxruntime is imported:
    refuse a hand-set re-run marker (:func:`check_not_a_rerun`), drop :data:`FOREIGN_ENV`, and refuse loader,
    ``HOME`` and import-path settings that reach the report's folder or the verify root
    (:func:`check_loader_environment`). ``rfbench verify`` and ``rfbench compare --verify`` call it first."""
    folder = Path(os.path.realpath(report)).parent
    check_not_a_rerun()
    check_loader_environment(root if root is not None else folder, folder=folder)  # (sees PYTHONPATH first)
    foreign_environment_removed()


def check_not_a_rerun() -> None:
    """Refuse to verify inside what :data:`LIMITS_ENV` marks as one of verify's own re-runs (set in a shell by
    hand, it confined verify to a closed world listing nothing, and the report was blamed)."""
    if LIMITS_ENV in os.environ:
        raise ValidationError(f"the environment variable {LIMITS_ENV} is set: it marks a process as one of verify's "
                              "re-runs, which never runs verify; unset it and run verify again")


class _Children:
    """Starts the re-run children of one verify: each in an empty folder of the private scratch folder, with
    the limits and the closed world in its environment, within what is left of the deadline, and a ``HOME`` of
    their own (an empty folder of the scratch folder, shared by the children of one verify): Matplotlib builds its
    font cache there from the installed fonts, never reading one under the verifier's ``HOME`` — which a party's
    instructions can set (a ``HOME`` beside the report, whose cache drew swapped digits under a MATCH)."""

    def __init__(self, python: str, limits: Limits, budget: Budget, scratch: Path, world_file: Path, where: Any):
        self.python, self.limits, self.budget = python, limits, budget
        self.scratch, self.world_file, self.where = scratch, world_file, where
        self.count = 0
        self.home = scratch / "home"
        self.home.mkdir(mode=0o700)

    def run(self, args: list[str], step: str) -> subprocess.CompletedProcess:
        env = dict(os.environ)
        env[LIMITS_ENV] = json.dumps({"cpu_seconds": int(self.limits.cpu_seconds),
                                      "memory_mb": int(self.limits.memory_mb), "parent": os.getpid(),
                                      "world": str(self.world_file)})
        foreign_environment_removed(env)
        for name in LOADER_ENV:
            env.pop(name, None)
        self.count += 1
        cwd = self.scratch / f"cwd-{self.count}"
        cwd.mkdir(mode=0o700)
        # the child's (and its model sandbox's) temporary files go to a private folder of the scratch folder,
        # removed with it: onnxruntime writes $TMPDIR/.ses, following a link planted there
        tmp = self.scratch / f"tmp-{self.count}"
        tmp.mkdir(mode=0o700)
        env.update(TMPDIR=str(tmp), TMP=str(tmp), TEMP=str(tmp), HOME=str(self.home))
        cmd = [self.python, "-I", "-m", "rfbench", *args]
        left = self.budget.left()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        with _LIVE_LOCK:
            _LIVE.add(proc)
        try:
            out, err = proc.communicate(timeout=left)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.communicate()
            raise self.budget.expired() from None
        finally:
            _kill_group(proc)
            with _LIVE_LOCK:
                _LIVE.discard(proc)
        if proc.returncode != 0:
            lines = [ln for ln in err.strip().splitlines() if ln.strip()]
            errors = [ln for ln in lines if ln.lstrip().startswith("error:")]
            last = (errors or lines or ["no message"])[-1].strip()
            if proc.returncode == -getattr(signal, "SIGXCPU", 24):  # RLIMIT_CPU's signal: the limit, not the report
                raise _mismatch(self.where, f"the re-run's {step} step used up its CPU-time limit of "
                                            f"{int(self.limits.cpu_seconds)} s (raise it with `cpu_seconds`)",
                                f"rerun.{step}", "finished", f"out of CPU time at {int(self.limits.cpu_seconds)} s")
            if _OUT_OF_MEMORY.search(err):  # the limit, not the report: say which one, as a timeout does
                raise _mismatch(self.where, f"the re-run's {step} step ran out of memory within the limit of "
                                            f"{int(self.limits.memory_mb)} MiB (raise it with `memory_mb`): {last}",
                                f"rerun.{step}", "finished", f"out of memory at {int(self.limits.memory_mb)} MiB")
            if _OUT_OF_ROOM.search(last):  # the verifier's machine, not the report: nothing is decided
                raise RfbenchError(f"{self.where}: the re-run's {step} step could not write what it needs "
                                   f"({last.removeprefix('error: ')}); nothing was decided: make room (or raise the "
                                   "limit) and verify again")
            if _START_UP_UNDER_LIMIT.search(err):
                raise _mismatch(self.where, f"the re-run's {step} step could not start a thread or load a library "
                                            f"within the memory limit of {int(self.limits.memory_mb)} MiB, most "
                                            f"likely because of that limit (raise it with `memory_mb`): {last}",
                                f"rerun.{step}", "finished", f"start-up failed at {int(self.limits.memory_mb)} MiB")
            raise _mismatch(self.where, f"the re-run's {step} step failed with exit code {proc.returncode}: {last}",
                            f"rerun.{step}", "exit 0", f"exit {proc.returncode}")
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def scratch_base(root: Path, trees: Sequence[Path] = (), report_folder: Path | None = None) -> Path:
    """The folder verify makes its private temporary folder in (``TMPDIR``, else the system's), links resolved:
    never the report's folder, the verify root or a dataset tree, nor inside one — the re-runs' outputs, the
    list of files they may open and their working folders would lie among the files of whoever handed them over
    — and a folder no other user can rename entries of (owned by this user or root; writable by others only with
    the sticky bit, as ``/tmp`` is). A root of ``/`` (the whole file system, as when the chain's files lie in
    folders with nothing but ``/`` in common) holds every temporary folder: then the report's folder and the
    dataset trees are the folders of whoever handed them over.

    Raises
    ------
    ValidationError
        Either is not so (exit 2): set ``TMPDIR`` to a folder of your own.
    """
    import stat

    base = Path(os.path.realpath(tempfile.gettempdir()))
    real_root = Path(os.path.realpath(root))
    places = [("the verify root", real_root)] if real_root != Path(real_root.anchor) else []
    places += [("the report's folder", report_folder)] if report_folder is not None else []
    for what, folder in places + [("the dataset tree", t) for t in trees]:
        folder = Path(os.path.realpath(folder))
        if base == folder or folder in base.parents:
            raise ValidationError(f"the temporary folder {base} (TMPDIR) is inside {what} {folder}: the re-runs' "
                                  "outputs would lie among the files verify checks, where whoever handed them over "
                                  "could change them before verify reads them; set TMPDIR to a folder of your own "
                                  "outside it")
    st = os.stat(base)
    if st.st_uid not in (0, os.geteuid()) or \
            (st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX):
        raise ValidationError(f"the temporary folder {base} (TMPDIR) is another user's or writable by others "
                              "without the sticky bit: they could replace verify's private folder in it; set "
                              "TMPDIR to a folder of your own")
    return base


@contextlib.contextmanager
def _scratch(root: Path, trees: Sequence[Path] = (), report_folder: Path | None = None) -> Iterator[Path]:
    """verify's private temporary folder (made by :func:`tempfile.mkdtemp`, mode 0700, in :func:`scratch_base`),
    removed on every exit path."""
    folder = Path(tempfile.mkdtemp(prefix="rfbench-verify-", dir=scratch_base(root, trees, report_folder)))
    try:
        yield Path(os.path.realpath(folder))
    finally:
        # a re-run killed on a signal may still be writing for a moment (SIGKILL is not instant, and its model
        # sandbox is a process of its own): a file made while the tree is walked leaves a folder rmtree cannot
        # remove, so it is walked again until it is gone (a second at most)
        for _ in range(50):
            shutil.rmtree(folder, ignore_errors=True)
            if not os.path.lexists(folder):
                break
            time.sleep(0.02)


def _child_output(path: Path, what: str, where: Any, cap: int = MAX_REPORT_BYTES) -> bytes:
    """The bytes of a file a re-run child wrote in the scratch folder, read through one descriptor: it must be
    there, a regular file (a final link is not followed), this user's, and linked nowhere else; anything else
    was put there by someone else than the child (a MISMATCH)."""
    import stat

    from rfbench.io.files import read_fd

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise _mismatch(where, f"the re-run's {what} {path.name} cannot be read ({exc.strerror}): it is not the "
                        "file the re-run wrote", f"rerun.{what}", "the re-run's own file", "unreadable") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_nlink != 1:
            raise _mismatch(where, f"the re-run's {what} {path.name} is not a regular file of this user's linked "
                            "only there: it was replaced after the re-run wrote it", f"rerun.{what}",
                            "the re-run's own file", "replaced")
        if st.st_size > cap:
            raise _mismatch(where, f"the re-run's {what} {path.name} holds {st.st_size} bytes, more than the {cap} "
                            "verify reads", f"rerun.{what}", f"at most {cap} bytes", st.st_size)
        return read_fd(fd, st.st_size)
    finally:
        os.close(fd)


def _child_json(path: Path, kind: str, where: Any) -> dict:
    """A JSON document a re-run child wrote (:func:`_child_output`), parsed and its schema checked as
    :func:`rfbench.io.files.read_json` does."""
    from rfbench.io.documents import MAX_JSON_BYTES, parse_json_bytes
    from rfbench.io.files import check_schema

    doc = parse_json_bytes(_child_output(path, kind, where, MAX_JSON_BYTES), str(path))
    if not isinstance(doc, dict):
        raise FormatError(f"{path}: expected a JSON object, found {type(doc).__name__}")
    check_schema(doc, kind, str(path))
    return doc


# -- comparing -----------------------------------------------------------------------------------------------


#: In a field pattern (:func:`_pattern`), any index of a list.
_ANY_INDEX = object()


def _pattern(key: str) -> tuple:
    """``inputs[].path`` → ``("inputs", any index, "path")``: the steps of the paths it names and everything below
    them. Paths are compared step by step, keys as whole strings, never as dotted text: a key that holds a dot
    (``"reproducer.evidence"``) is one key, not the field ``evidence`` of ``reproducer``."""
    steps: list = []
    for part in key.split("."):
        indices = 0
        while part.endswith("[]"):
            part, indices = part[:-2], indices + 1
        steps += [part] + [_ANY_INDEX] * indices
    return tuple(steps)


def _in_field(path: tuple, pattern: tuple) -> bool:
    """Whether ``path`` is the field ``pattern`` names or lies below it."""
    if len(path) < len(pattern):
        return False
    for step, want in zip(path, pattern):
        if want is _ANY_INDEX:
            if not isinstance(step, int):
                return False
        elif not (isinstance(step, str) and step == want):
            return False
    return True


def _path_text(path: tuple) -> str:
    """A path as text: ``inputs[0].path``; a key holding a dot, a bracket, a quote, a space or a control character
    is shown quoted (``["a.b"]``), so no two paths read alike."""
    text = ""
    for step in path:
        if isinstance(step, int):
            text += f"[{step}]"
        elif step and _PLAIN_KEY.fullmatch(step):
            text += f".{step}" if text else step
        else:
            text += "[" + json.dumps(step, ensure_ascii=True) + "]"
    return text


#: A key shown as it is in a path (anything else is shown quoted): no dot, bracket, quote, space or control.
_PLAIN_KEY = re.compile(r'[^.\[\]"\s\x00-\x1f\x7f-\x9f]+')


def _walk(a: Any, b: Any, path: tuple, out: list, skip) -> int:
    """Append differences between a and b to out; return the number of leaf values compared."""
    if path and skip(path):
        return 0
    if isinstance(a, dict) and isinstance(b, dict):
        n = 0
        for k in sorted(set(a) | set(b)):
            sub = (*path, k)
            if skip(sub):
                continue
            if k not in a or k not in b:
                out.append({"path": _path_text(sub), "report": _short(a.get(k, "<absent>")),
                            "rerun": _short(b.get(k, "<absent>"))})
                continue
            n += _walk(a[k], b[k], sub, out, skip)
        return n
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append({"path": f"{_path_text(path)} (length)", "report": len(a), "rerun": len(b)})
        n = 0
        for i, (x, y) in enumerate(zip(a, b)):
            n += _walk(x, y, (*path, i), out, skip)
        return n
    if not same_value(a, b):
        out.append({"path": _path_text(path), "report": _short(a), "rerun": _short(b)})
    return 1


def same_value(a: Any, b: Any) -> bool:
    """Whether two JSON leaves are the same value: equal and of one type, and floats of one sign (``-0.0 == 0.0``
    in Python, but report.md shows ``-0.0000``)."""
    if type(a) is not type(b) or a != b:
        return False
    return type(a) is not float or math.copysign(1.0, a) == math.copysign(1.0, b)


#: Most differences one comparison lists: past them it stops (a document padded with millions of made-up keys
#: differs already, and listing every one would outlast ``timeout``), and the list ends with one entry saying so.
MAX_DIFFERENCES = 1000


class _Enough(Exception):
    pass


def diff_documents(a: Mapping, b: Mapping, environment: Mapping[str, str] = (), budget: Budget | None = None) \
        -> tuple[list[dict], int]:
    """Every difference between two documents except the fields ``environment`` names (``key``,
    ``key.sub``, ``list[].key``), at most :data:`MAX_DIFFERENCES`, and how many values were compared; within
    ``budget``'s deadline when one is given."""
    patterns = [_pattern(k) for k in environment]
    out: list = []
    seen = 0

    def skip(path: tuple) -> bool:  # asked of every value before it is compared
        nonlocal seen
        seen += 1
        if not seen & 4095 and budget is not None:
            budget.left()
        if len(out) >= MAX_DIFFERENCES:
            raise _Enough
        return any(_in_field(path, p) for p in patterns)

    try:
        n = _walk(dict(a), dict(b), (), out, skip)
    except _Enough:
        out.append({"path": "…", "report": f"more than {MAX_DIFFERENCES} differences",
                    "rerun": f"the comparison stopped after the first {MAX_DIFFERENCES}"})
        n = seen
    return out, n


def _by_role(report: Mapping) -> dict:
    doc = dict(report)
    if isinstance(doc.get("inputs"), list):
        doc["inputs"] = sorted(doc["inputs"], key=lambda i: str(i.get("role")) if isinstance(i, Mapping) else "")
    return doc


def diff_reports(report: Mapping, rerun: Mapping, environment: Mapping[str, str] | None = None,
                 budget: Budget | None = None) -> tuple[list[dict[str, Any]], int]:
    """Differences between a stored and a re-run report: every field but :data:`ENVIRONMENT` (inputs matched by
    role), and how many values were compared (see :func:`diff_documents`)."""
    return diff_documents(_by_role(report), _by_role(rerun), ENVIRONMENT if environment is None else environment,
                          budget)


def _label(report: Mapping, path: str) -> str:
    """Add the result's label to a results[i] path, for a readable diff."""
    if path.startswith("results["):
        try:
            idx = int(path[len("results["):path.index("]")])
            return f"{path} ({report['results'][idx]['label']})"
        except (ValueError, IndexError, KeyError, TypeError):
            return path
    return path


def _short(value: Any) -> Any:
    text = json.dumps(value, sort_keys=True, default=str)
    return value if len(text) <= 200 else text[:200] + "…"


# -- the chain -----------------------------------------------------------------------------------------------


_PATH_OPTIONS = ("--label-set",)


def _check_chain(report: Mapping, world: ClosedWorld, where: Any):
    """The report's ``chain`` (the windows, predict and score command lines, shown to readers) must be what the
    hashed windows index and prediction record give: the same steps, each with the settings those files record
    (paths, shown as typed, excepted), and the report's own reproducer last. A report that carries a chain but
    not the files to replay it is refused. Returns ``(index, record)`` when there is a chain to replay."""
    from rfbench.datasets.windows import WindowSettings, load_index
    from rfbench.nn.prediction_record import load_prediction_record

    chain = report.get("chain")
    replayable = {"rows", "model", "pred-record"} <= set(world.inputs)
    if chain is None and not replayable:
        return None
    if not replayable:
        raise FormatError(f"{where}: the report carries a chain but not the windows index, model and prediction "
                          "record to replay it")
    rows, record_file = world.inputs["rows"], world.inputs["pred-record"]
    index = load_index(rows.path, check_arrays=False, doc=world.document(rows, "windows", "the windows index"))
    settings = WindowSettings.from_dict(index.doc["settings"], f"{rows.path}: settings")
    record = load_prediction_record(record_file.path,  # (the bytes verify hashed, never a second read by path)
                                    doc=world.document(record_file, "prediction", "the prediction record"),
                                    pred_bytes=world.read(world.inputs["pred"], "input pred")
                                    if "pred" in world.inputs else None)
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
            if not isinstance(item, dict) or set(item) != {"step", "argv"} or item.get("step") != step \
                    or not isinstance(argv, list) or not all(isinstance(a, str) for a in argv) or len(argv) < 7 \
                    or argv[0] != "rfbench" or any(argv[k] != word for k, word in fixed.items()):
                problem = f"its {step} step is not the command rfbench records"
                break
            if _masked(argv[7:]) != _masked(list(tail)):
                problem = f"its {step} step shows settings {argv[7:]} but the recorded files say {list(tail)}"
                break
    if problem is not None:
        raise _mismatch(where, f"the report's chain does not match the files it names: {problem}", "chain",
                        _short(chain), "as recorded in the windows index and the prediction record")
    return index, record


def _masked(args: list[str]) -> list[str]:
    """Settings argv with the values of path options replaced (paths are shown as typed)."""
    out = list(args)
    for k, a in enumerate(out[:-1]):
        if a in _PATH_OPTIONS:
            out[k + 1] = "<path>"
    return out


def _refuse_differences(diffs: list, prefix: str, where: Any, message: str) -> None:
    """A mismatch listing ``diffs`` (their paths under ``prefix``), when there are any."""
    if diffs:
        for d in diffs:
            d["path"] = prefix + ("" if d["path"].startswith("[") else ".") + d["path"]
        raise VerificationError(f"{where}: {message} (first: {diffs[0]['path']})", differences=diffs)


def _replay_chain(index, record, world: ClosedWorld, children: _Children, scratch: Path, where: Any,
                  notes: list[str], uncompared: list[dict]) -> dict:
    """Rebuild the test side's windows from the dataset and run the model again on them; compare the index and
    the prediction record field by field and the predictions with the scored file. Returns ``{rule, pred}``:
    how the predictions compared, and the re-run's predictions (to score again under tolerance)."""
    from rfbench.datasets.windows import WindowSettings
    from rfbench.io.files import MAX_NPY_HEADER_BYTES, load_npy_bytes, max_array_bytes
    from rfbench.nn.prediction_comparison import compare_predictions

    w = scratch / "windows"
    settings = WindowSettings.from_dict(index.doc["settings"])
    if settings.label_set is not None:
        settings = replace(settings, label_set=str(world.named["label-set"].path))
    split = world.inputs["split"].path if "split" in world.inputs else world.named["index-split"].path
    children.run(["windows", str(split), "--side", "test", "-o", str(w), *settings.to_argv(), "--json"], "windows")
    again = _child_json(w / "index.json", "windows", where)
    _refuse_differences(diff_documents(index.doc, again, INDEX_ENVIRONMENT, world.budget)[0], "chain.windows", where,
                        "the windows built again from the dataset differ from those the predictions were made over")
    from rfbench.nn.prediction_record import record_path_for

    p = scratch / "predict" / record.pred_path.name  # the recorded name: the record names its predictions' file
    children.run(["predict", str(world.inputs["model"].path), "--windows", str(w), "-o", str(p),
                  *record.settings.argv(), "--json"], "predict")
    rerun_doc = _child_json(record_path_for(p), "prediction", where)
    recorded = dict(record.doc)
    recorded["settings"] = dict(recorded.get("settings") or {})
    declared = recorded["settings"].get("tolerance")
    if isinstance(declared, (int, float)) and not isinstance(declared, bool) and declared > MAX_TOLERANCE:
        recorded["settings"]["tolerance"] = MAX_TOLERANCE
        notes.append(f"the prediction record declares a tolerance of {declared:g}; verify applies at most "
                     f"{MAX_TOLERANCE:g}")
    with _own_memory_bounded(children.limits):  # the scored file is the party's: as large as it was made
        scored = load_npy_bytes(world.read(world.inputs["pred"], "input pred"), "predictions")
        pred_bytes = _child_output(p, "predictions", where, max_array_bytes() + MAX_NPY_HEADER_BYTES + 256)
        outcome = compare_predictions(recorded, scored, rerun_doc, load_npy_bytes(pred_bytes, "re-run predictions"))
    if not outcome.equal:
        raise _mismatch(where, f"the model run again gives other predictions than those scored: {outcome.detail}",
                        "chain.predict", "the scored predictions", outcome.detail)
    environment = dict(RECORD_ENVIRONMENT)
    if outcome.rule != "identical bits":
        environment.update({"pred.sha256": "the predictions are compared within tolerance",
                            "pred.bytes": "the predictions are compared within tolerance"})
        uncompared.append({"field": "predictions", "why": f"compared within tolerance, not bit for bit: "
                                                          f"{outcome.detail}"})
    _refuse_differences(diff_documents(record.doc, rerun_doc, environment, world.budget)[0], "chain.predict", where,
                        "the model run again gives another prediction record")
    notes.append(f"chain replayed: windows rebuilt from the dataset and the model run again ({outcome.detail})")
    return {"rule": outcome.rule, "pred": pred_bytes}


def _ingest_again(world: ClosedWorld, children: _Children, scratch: Path, where: Any, uncompared: list) -> None:
    """Ingest each manifest's dataset tree again, with the settings the manifest records, and compare the two
    manifests field by field: a manifest is a file the scored party could edit (a label, a domain, a recording
    listed twice or pointed at another's file, its frames) and then split, window and score again, so that every
    later link agrees with it. Only the tree decides what a manifest says."""
    from rfbench.datasets.reingest import ROOT_FIELD, ingest_argv

    for k, (m, root, recorded) in enumerate(world.manifests):  # one entry per distinct manifest (_chain_files)
        if not any(isinstance(r, Mapping) and r.get("files") for r in recorded.get("recordings") or []):
            uncompared.append({"field": "manifest", "why": f"{m.path.name} lists no dataset file (recordings "
                                                           "written by hand): there is no tree to ingest again"})
            continue
        out = scratch / f"ingest-{k}" / "manifest.json"
        out.parent.mkdir()
        children.run([*ingest_argv(recorded, str(root), str(out), m.path), "--json"], "ingest")
        again = _child_json(out, "manifest", where)
        why = "where the dataset tree is, relative to the manifest; the tree itself is ingested again"
        _refuse_differences(diff_documents(recorded, again, {ROOT_FIELD: why}, world.budget)[0], "chain.ingest", where,
                            f"the manifest {m.path} is not what ingest makes of its dataset tree: it was edited, or "
                            "the tree changed since")


# -- pictures and report.md ----------------------------------------------------------------------------------


def _plot_engine() -> str | None:
    """``"matplotlib"`` when the plotting library is installed here (the re-runs can draw the pictures again),
    else None. Found, not imported: verify's own process never imports it — matplotlib reads a ``matplotlibrc``
    in the current folder as it is imported, and one that was a FIFO hung verify past ``--timeout`` (one linked
    to /dev/zero grew without bound); the re-runs draw, each in an empty folder of its own."""
    import importlib.util

    try:
        return "matplotlib" if importlib.util.find_spec("matplotlib") is not None else None
    except (ImportError, ValueError):
        return None


def _rerun_name(recorded: str | None, task: str) -> str:
    """The name the score re-run writes its report under: the one its reproducer's ``-o`` gave (the pictures are
    named after it, and compared by name), when it is a plain name the ``task``'s pictures can be named after
    (:func:`rfbench.report.plots.unlinkable_picture`, as score asks); else ``report.json``. Only a name: the
    re-run writes in verify's own scratch folder whatever the report says."""
    from rfbench.report.plots import unlinkable_picture

    name = Path(recorded).name if recorded else ""
    if not name or name.lower().endswith(".md") or unlinkable_picture(Path(name), task) is not None:
        return "report.json"
    return name


def _stored_pictures(report: Mapping, report_real: Path, root: Path, budget: Budget) -> None:
    """Each picture the report lists must be a file beside it with the sha256 it records."""
    from rfbench.report.closed_world import hash_resolved
    from rfbench.report.render import PICTURE_NAME

    for n, p in enumerate(report.get("pictures") or []):
        name = p["file"]
        if not PICTURE_NAME.fullmatch(name):
            raise _mismatch(report_real, f"pictures[{n}] names {name!r}, not a picture file beside the report",
                            f"pictures[{n}].file", name, "a file name beside the report")
        item = resolve(name, report_real.parent, what=f"picture {name}", root=root)
        digest = hash_resolved(item, budget, f"picture {name}")
        if digest != p.get("sha256") or item.size != p.get("bytes"):
            raise _mismatch(report_real, f"the picture {name} is not the one the report records (its sha256 "
                            "differs): it was replaced", f"pictures[{n}].sha256", p.get("sha256"), digest)


#: Most names of unchecked Markdown files a verdict's note lists.
_SHOW_MD = 5


#: Most entries of the report's folder looked at for Markdown verify did not check.
_LIST_AT_MOST = 100_000


#: Suffixes of the files a reader opens as a rendered report (Markdown's, HTML's).
_MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdown", ".mkd", ".mkdn", ".html", ".htm")


def _reads_as_markdown(name: str) -> bool:
    """Whether a file name reads as a Markdown (or HTML) file's: its suffix as a reader sees it, case, spaces and
    invisible characters left out (``report.md`` followed by a zero-width space, or a space, is one)."""
    from rfbench.names import plain_name

    return plain_name(name).endswith(_MARKDOWN_SUFFIXES)


def _other_markdown(md_path: Path) -> tuple[list[str], int, bool]:
    """The Markdown files (:func:`_reads_as_markdown`: ``.md``, ``.markdown``, HTML…, any case, spaces and invisible
    characters after the suffix included) in ``md_path``'s folder other than ``md_path`` itself
    — a report.md a reader may open that is not the one checked (a report named ``report.md.json`` has its
    Markdown at ``report.md.md``; a ``report.md`` beside it is then anyone's). Every one is listed, another
    report's too: which report a Markdown file belongs to is only what the folder's names say, and those are
    anyone's. Returns the first :data:`_SHOW_MD` names in name order, how many there are, and whether the folder
    held more than :data:`_LIST_AT_MOST` entries (the rest not looked at)."""
    import heapq

    found: list[str] = []
    seen = 0
    try:
        with os.scandir(md_path.parent) as it:
            for e in it:
                seen += 1
                if seen > _LIST_AT_MOST:
                    break
                if e.name != md_path.name and _reads_as_markdown(e.name):
                    found.append(e.name)
    except OSError:
        return [], 0, False
    return heapq.nsmallest(_SHOW_MD, found), len(found), seen > _LIST_AT_MOST


def _markdown_difference(report: Mapping, md_path: Path, root: Path) -> tuple[str, str | None]:
    """``(status, first differing line)`` of the report.md beside the report against a fresh rendering."""
    from rfbench.io.files import read_regular
    from rfbench.report.render import render_markdown

    if not md_path.exists() and not md_path.is_symlink():
        return "absent", None
    real = resolve(md_path.name, md_path.parent, what="report.md", root=root).path
    have = read_regular(real, MAX_REPORT_BYTES, "report.md")
    # as write_text stores it: a lone surrogate (a file name that is not UTF-8) as its \udcXX escape
    want = render_markdown(report).encode("utf-8", "backslashreplace")
    if have == want:  # byte for byte: bytes that are not UTF-8 are not what rfbench wrote either
        return "identical", None
    a, b = have.decode("utf-8", errors="backslashreplace").splitlines(), want.decode("utf-8").splitlines()
    for n, (x, y) in enumerate(zip(a, b), start=1):
        if x != y:
            return "differs", f"line {n}: {x!r} in the file, {y!r} rendered from the report"
    return "differs", f"{len(a)} lines in the file, {len(b)} rendered from the report"


# -- verify --------------------------------------------------------------------------------------------------


def verify_report(path: str | os.PathLike, *, root: str | os.PathLike | None = None, python: str | None = None,
                  limits: Limits | None = None, cells: Sequence[str] = (), all_cells: bool = False,
                  datasets: Sequence[str | os.PathLike] = (), convention: "Convention | None" = None,
                  sha256: str | None = None) -> VerifyResult:
    """Re-run a report in a closed world and compare everything (see the module docstring for every step).

    Parameters
    ----------
    path : path-like
        The report (``report.json``); ``report.md`` beside it is checked too when present.
    root : path-like, optional
        The verify root: any folder that holds every file the chain reads; nothing outside it is read.
        Default: the report's folder.
    python : str, optional
        The interpreter of the re-run (default: this one).
    limits : Limits, optional
        The whole command's wall time, the re-runs' CPU time and address space, the bytes verify hashes.
    cells, all_cells : optional
        For a robustness summary (``rfbench robustness``'s summary.json, checked by
        :mod:`rfbench.report.verify_robustness`): the cells to re-run as reports (``noise-3-seed0``, ``clean``);
        every one (the default) unless ``cells`` names some, and ``all_cells`` re-runs every one in any case.
    datasets : sequence of path-like, optional
        The verifier's own copies of the dataset trees (folders under the root): the tree of every manifest of
        the chain must be one of them, and a chain with no dataset tree is refused. Without them the re-run
        ingests whatever folder each manifest names (the result names it).
    convention : Convention, optional
        The file-name convention the verifier holds a template corpus to (``ingest files``' template, roles,
        ``recording_by`` and ``drop_duplicates``): every manifest of the chain must record exactly it. A
        template manifest is the scored party's word on what each part of a name means (which field is the
        class, which the person), so with ``datasets`` and a template manifest, ``convention`` is required.
    sha256 : str, optional
        The sha256 of the report's bytes as the caller read them (``rfbench compare --verify`` lines up the
        document it read with claims): verify re-runs those very bytes, and a report whose bytes differ (it
        changed in between) is a :class:`VerificationError` before anything is re-run.

    Returns
    -------
    VerifyResult
        When every compared value is identical.

    Raises
    ------
    FormatError
        Missing, unreadable or malformed report, no reproducer, a missing input, an input outside the root or
        not a regular file, a ``datasets`` folder that is not a folder under the root (exit 2).
    VerificationError
        An input's size or hash changed, the reproducer is not the command rfbench records, a re-run failed, a
        value differs, report.md does not render from the report, or a dataset tree is not one of ``datasets``
        (exit 1); ``differences`` lists them.

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
    deadline = time.monotonic() + limits.timeout  # the whole command's, a robustness summary's cells included
    # a report, or a file of its chain, malformed in a way no check names: still one line, exit 2
    with malformed_as_format_error(f"{path}: the report or a file of its chain is malformed"):
        summary = _robustness_summary(Path(path), strict=bool(cells or all_cells))
        if summary is not None and sha256 is not None:  # the caller read a report: a summary is not those bytes
            raise VerificationError(f"{path}: not the report the caller read: a robustness summary is in its place "
                                    "(it changed while verify ran); not re-run",
                                    differences=[{"path": "sha256", "report": sha256, "rerun": "a summary"}])
        if summary is not None:  # a robustness sweep's summary: its own checks, cells verified as reports
            return summary(Path(path), root,
                           lambda cell, digest: _verify(cell, root, python, limits, deadline, datasets, convention,
                                                        digest),
                           VerifyResult, cells=cells, all_cells=all_cells, limits=limits,
                           bounded=lambda: _own_memory_bounded(limits), routine=frozenset(ENVIRONMENT))
        if cells or all_cells:
            raise FormatError(f"{path}: cells are re-run from a robustness summary (summary.json), not a report")
        return _verify(Path(path), root, python, limits, None, datasets, convention, sha256, "the caller")


def _robustness_summary(path: Path, strict: bool = False):
    """``verify_summary`` when ``path`` is a robustness summary, else None (a report, or anything else, is left
    to the report checks and their messages). ``strict`` (cells were asked for: only a summary will do): a file
    that cannot be read as JSON is refused with the reason (a key twice, a NaN, not UTF-8...), not as "a report"."""
    from rfbench.io.files import read_json
    from rfbench.report.verify_robustness import is_summary, verify_summary

    try:
        doc = read_json(path, cap=MAX_REPORT_BYTES)
    except RfbenchError:
        if strict:
            raise
        return None
    return verify_summary if is_summary(doc) else None


def _verify(path: Path, root, python: str | None, limits: Limits, deadline: float | None = None,
            datasets: Sequence[str | os.PathLike] = (), convention: "Convention | None" = None,
            sha256: str | None = None, reader: str = "the summary's checks") -> VerifyResult:
    """One report verified (a robustness summary's cell: ``sha256``, the digest of the bytes the summary's
    checks read, or those ``reader`` read; the report re-run must be those very bytes)."""
    from rfbench import __version__
    from rfbench.io.world import write_world

    budget = Budget(limits.timeout, int(limits.max_gb * 2**30))
    if deadline is not None:  # a cell of a summary: within what is left of the whole command's time
        budget.deadline = min(budget.deadline, deadline)
        budget.left()
    report_real = _report_file(path)
    root = Path(os.path.realpath(root if root is not None else report_real.parent))
    if not root.is_dir():
        raise FormatError(f"verify root {root}: not a folder")
    resolve(path.name, path.parent, what="report", root=root)  # the report too is a file under the root
    check_loader_environment(root, folder=report_real.parent)
    pinned = _pinned_datasets(datasets, root)
    if os.path.islink(path):  # report.md and the pictures are checked beside the real file: a reader opening
        # those beside the link would see files verify never looked at
        raise FormatError(f"{path}: a symbolic link to {report_real}; verify the report file itself (its report.md "
                          "and pictures are those beside it)")
    with _own_memory_bounded(limits):  # the report and the files of its chain are parsed here, in this process
        report = _read_report(report_real, path, sha256, reader)
        try:
            world = close_world(report, report_real, root, budget)
        except FormatError as exc:
            if "resolves outside" not in str(exc):
                raise
            raise FormatError(f"{exc}{_root_hint(report, report_real, root)}") from None
    if world.changed:
        data = [d for d in world.changed if d.get("dataset")]
        if data:
            raise VerificationError(
                f"{path}: {len(data)} dataset file(s) the ground truth was read from changed since the report was "
                f"made (" + ", ".join(d["file"] for d in data[:5]) + "); numbers not re-computed",
                differences=world.changed)
        raise VerificationError(
            f"{path}: {len(world.changed)} input(s) changed since the report was made ("
            + ", ".join(f"{d['path']} {d['file']}" for d in world.changed) + "); numbers not re-computed",
            differences=world.changed)
    trees = _dataset_trees(world)
    try:  # a mismatch from here on names the trees too (verify --json lists them on a MISMATCH as on a MATCH)
        _hold_to_pinned(trees, world, pinned, path, report)
        _hold_to_convention(trees, world, convention, pinned, path)
        plan = rerun_plan(report, path)
        chain = _check_chain(report, world, path)
        _check_reproducible(chain, path)
        notes: list[str] = []
        uncompared = [{"field": k, "why": v} for k, v in ENVIRONMENT.items()]
        made_with = report["rfbench_version"] if report["rfbench_version"] != __version__ else None
        stored_pictures = report.get("pictures") or []
        engine = _plot_engine() if stored_pictures else None
        draw = bool(stored_pictures) and engine is not None
        environment = dict(ENVIRONMENT)
        if stored_pictures:
            _stored_pictures(report, report_real, root, budget)
            if engine is None:  # (the engine a report records is its own word: it never turns the comparison off)
                why = "the plotting library is not installed here"
                environment.update({"pictures[].sha256": why, "pictures[].bytes": why, "pictures[].engine": why,
                                    "pictures": why})
                uncompared.append({"field": "pictures", "why": f"not compared with a re-drawing: {why}; the stored PNG "
                                                              "files still hash to the report's sha256"})
        with _scratch(root, [tree for _, tree, _ in world.manifests] + list(pinned or []),
                      report_real.parent) as scratch:
            world_file = scratch / "world.json"
            write_world(str(world_file), str(scratch), world.files, world.digests)
            children = _Children(python or sys.executable, limits, budget, scratch, world_file, path)
            _ingest_again(world, children, scratch, path, uncompared)
            replayed = None
            if chain is not None:
                replayed = _replay_chain(*chain, world, children, scratch, path, notes, uncompared)
            out = scratch / "score" / _rerun_name(plan.out, plan.task)
            args = plan.argv(world, out, draw)
            children.run(args, "score")
            rerun = _child_json(out, "report", path)
            diffs, compared = diff_reports(report, rerun, environment, budget)
            if replayed is not None and replayed["rule"] != "identical bits":
                out2 = scratch / "score-rerun-predictions" / "report.json"
                kept = scratch / "rerun-predictions" / "pred.npy"  # without its record: scored as plain predictions
                kept.parent.mkdir()
                kept.write_bytes(replayed["pred"])  # the bytes compared, not a second read
                children.run(plan.argv(world, out2, False, pred=kept), "score")
                again = _child_json(out2, "report", path)
                # every section the predictions decide, not only the results (the classes, the confusion matrix, the
                # domains, the notes): all but what differs by construction between the two scorings
                skip = ("chain", "inputs", "pictures", "reproducer")
                more, n = diff_documents({k: v for k, v in report.items() if k not in skip},
                                         {k: v for k, v in again.items() if k not in skip}, budget=budget)
                for d in more:
                    d["path"] = f"{d['path']} (scored from the re-run's own predictions)"
                diffs += more
                compared += n
                notes.append("predictions re-run under another environment agree within the recorded tolerance; every "
                             "number also came out identical when scored from the re-run's own predictions")
        for d in diffs:
            d["path"] = _label(report, d["path"])
        version = f" (made with rfbench {made_with}, re-run with {__version__})" if made_with else ""
        if diffs:
            first = diffs[0]
            raise VerificationError(f"{path}: {len(diffs)} value(s) differ on re-run{version} (first: {first['path']}: "
                                    f"{first['report']!r} in the report, {first['rerun']!r} now)", differences=diffs)
        from rfbench.report.render import markdown_path

        md_path = markdown_path(report_real)  # where score writes it
        md_status, where = _markdown_difference(report, md_path, root)
        if md_status == "differs":
            raise _mismatch(path, f"{md_path.name} does not render from {report_real.name} ({where}); it was "
                            f"edited{version}", "report.md", "rendered from report.json", where)
        if md_status == "absent":
            notes.append(f"no {md_path.name} beside the report (where score writes its Markdown): only the JSON was "
                         "checked")
        others, count, partial = _other_markdown(md_path)
        if count or partial:
            more = f" and {count - len(others)} more" if count > len(others) else ""
            listed = f": {', '.join(others)}{more}" if count else ""
            unlisted = (f"{';' if count else ':'} the folder holds more than {_LIST_AT_MOST:,} entries, and Markdown "
                        "among the rest was not looked for") if partial else ""
            notes.append(f"Markdown beside the report that verify did not check (another report's, or anyone's: "
                         f"only {md_path.name} is {report_real.name}'s){listed}{unlisted}")
        for t in trees:
            if t.get("convention") is not None and not t["convention_pinned"]:
                notes.append(f"the labels and domains of {t['manifest']} are read from file names by the scored "
                             f"party's convention ({convention_text(t['convention'])}): the chain agrees with "
                             "it, not with what the names mean; give --template (and the roles) to hold it to "
                             "yours")
        from rfbench.report.render import _WARN_PREFIXES

        for note in report.get("notes") or []:  # what the report warns of holds on re-run too: say it with MATCH
            if isinstance(note, str) and note.startswith(_WARN_PREFIXES):
                notes.append(f"the report warns: {note}")
        supplied = _supplied_truth(report)
        if supplied:  # MEASURED by rfbench, against arrays the scored party handed over with its predictions
            flags = ", ".join("--" + r for r in supplied)
            notes.append(f"the ground truth is a file the scored party supplied ({flags}): the same arrays score "
                         "the same, but nothing says they are the dataset's; score with "
                         "--rows to have it read from the dataset, and verify with --dataset to hold it to your copy")
        return VerifyResult(str(path), "match", compared, notes, args, str(root), asdict(limits), md_status,
                            uncompared, made_with, trees, md_path.name,
                            replayed["pred"] if replayed is not None and replayed["rule"] != "identical bits"
                            else None)
    except VerificationError as exc:
        exc.datasets = exc.datasets or trees
        raise


def _pinned_datasets(datasets: Sequence[str | os.PathLike], root: Path) -> list[Path] | None:
    """The real folders of ``datasets`` (None when none was given): each a folder under the verify root."""
    if not datasets:
        return None
    from rfbench.io.paths import resolve_folder

    return [resolve_folder(d, None, what="--dataset", root=root) for d in datasets]


def _dataset_trees(world: ClosedWorld) -> list[dict]:
    """Each manifest's dataset tree, as the verdict names it (``files``: the files the manifest lists;
    ``left_out``: the problems ingest recorded, files of the tree the manifest does not take; ``convention``: a
    template corpus's file-name convention (:class:`Convention`), else None; ``pinned`` and
    ``convention_pinned`` filled in by :func:`_hold_to_pinned` and :func:`_hold_to_convention`)."""
    trees = []
    for m, tree, doc in world.manifests:
        files = sum(len(r.get("files") or []) for r in doc.get("recordings") or [] if isinstance(r, Mapping))
        convention = Convention.of_manifest(doc)
        trees.append({"tree": str(tree), "manifest": str(m.path), "files": files,
                      "left_out": len(doc.get("problems") or []), "pinned": False,
                      "convention": None if convention is None else convention.record(), "convention_pinned": False})
    return trees


def _supplied_truth(report: Mapping) -> list[str]:
    """The ground-truth inputs the scored party supplied (``gt``, ``train-gt``), by the roles of the report's
    inputs (which the re-run's must equal)."""
    return sorted({i.get("role") for i in report.get("inputs") or [] if isinstance(i, Mapping)} & {"gt", "train-gt"})


def _hold_to_pinned(trees: list[dict], world: ClosedWorld, pinned: list[Path] | None, where: Any,
                    report: Mapping) -> None:
    """With ``pinned`` (the verifier's own copies), each tree must be one of them — the manifest's ``root`` is
    the scored party's word, and a copy of the corpus beside the real one (its test files renamed to other
    labels, or a subfolder of it) ingests again to the same manifest. Under ``pinned`` the numbers must rest on
    the tree: ground truth the scored party supplied (``--gt``, ``--train-gt``) and a tree ingested following
    links (which may lead out of it) are refused."""
    if pinned is None:
        return
    for t, (_, tree, _) in zip(trees, world.manifests):
        t["pinned"] = tree in pinned
    given = ", ".join(str(p) for p in pinned)
    if not trees:
        raise _mismatch(where, f"the report rests on no dataset tree (no manifest in its chain), so it cannot be "
                        f"held to --dataset {given}", "chain.ingest.tree", None, given)
    supplied = _supplied_truth(report)
    if supplied:
        raise _mismatch(where, f"its ground truth is a file the scored party supplied (--{supplied[0]}), not read "
                        f"from --dataset {given}: score with --rows to have it read from the dataset",
                        "inputs.gt", supplied[0], "read from the dataset (--rows)")
    for t, (_, _, doc) in zip(trees, world.manifests):
        if doc.get("follow_symlinks") is True:
            raise _mismatch(where, f"the manifest {t['manifest']} was ingested following links, which may lead "
                            f"out of --dataset {given}; ingest without --follow-symlinks to hold it to the tree",
                            "chain.ingest.follow_symlinks", True, False)
        if not t["pinned"]:
            raise _mismatch(where, f"the manifest {t['manifest']} names the dataset tree {t['tree']}, not the one "
                            f"given (--dataset {given}): the numbers rest on another copy of the data",
                            "chain.ingest.tree", t["tree"], given)
        if not t["files"]:
            raise _mismatch(where, f"the manifest {t['manifest']} lists no file of the dataset tree {t['tree']} "
                            "(recordings written by hand): nothing in it rests on --dataset", "chain.ingest.files",
                            0, "the files of the dataset tree")


@dataclass(frozen=True)
class Convention:
    """A template corpus's file-name convention, as ``rfbench ingest files`` takes it: the ``template`` text, the
    ``roles`` (``{role: field}``), the ``recording_by`` fields (None: one recording per file) and
    ``drop_duplicates``. What each part of a name means is this convention's word, not the tree's: the same
    files under ``{gesture}_{user}_…`` and ``{user}_{gesture}_…`` ingest to two self-consistent chains."""

    template: str
    roles: Mapping[str, str] = field(default_factory=dict)
    recording_by: tuple[str, ...] | None = None
    drop_duplicates: bool = False

    def record(self) -> dict:
        return {"template": self.template, "roles": dict(sorted(self.roles.items())),
                "recording_by": None if self.recording_by is None else list(self.recording_by),
                "drop_duplicates": self.drop_duplicates}

    @classmethod
    def from_options(cls, template: str | None, recording_by: Sequence[str] | None = None,
                     roles: Mapping[str, str | None] = (), drop_duplicates: bool = False) -> "Convention | None":
        """:meth:`given` from verify's options, or None when none was given.

        Raises
        ------
        FormatError
            A role, ``recording_by`` or ``drop_duplicates`` without ``template``: a part of a convention pins
            nothing.
        """
        if template is not None:
            return cls.given(template, recording_by, roles, drop_duplicates)
        named = [f"--{k}" for k, v in dict(roles).items() if v] + ["--recording-by"] * bool(recording_by) \
            + ["--drop-duplicates"] * bool(drop_duplicates)
        if named:
            raise FormatError(f"{named[0]} is part of a template corpus's convention: give it with --template")
        return None

    @classmethod
    def given(cls, template: str, recording_by: Sequence[str] | None = None, roles: Mapping[str, str | None] = (),
              drop_duplicates: bool = False) -> "Convention":
        """The convention a verifier gives, as ``ingest files`` would take it (checked, and written as a
        manifest records it).

        Raises
        ------
        ValidationError
            A template or role ``ingest files`` would refuse.
        """
        from rfbench.datasets.files import check_spec

        tpl, by, _, out_roles = check_spec(template, recording_by, dict(roles))
        return cls(template=tpl.text, roles=out_roles, recording_by=by or None, drop_duplicates=bool(drop_duplicates))

    @classmethod
    def of_manifest(cls, doc: Mapping) -> "Convention | None":
        """The convention a manifest records (None for rfbench's own ingests, which have no template); the
        fields are read as the second ingest reads them (:func:`rfbench.datasets.reingest.ingest_argv` has
        refused any of the wrong type before this is asked)."""
        template = doc.get("template")
        if not isinstance(template, Mapping):
            return None
        by = template.get("recording_by")
        roles = doc.get("roles") or {}
        return cls(template=str(template.get("text")),
                   roles={str(k): str(v) for k, v in roles.items()} if isinstance(roles, Mapping) else {},
                   recording_by=tuple(str(f) for f in by) if isinstance(by, list) else None,
                   drop_duplicates=doc.get("drop_duplicates", False) is True)


def convention_text(record: Mapping) -> str:
    """``template '{user}_{gesture}.dat'; label: gesture, subject: user`` (and the recording fields, duplicates)."""
    roles = ", ".join(f"{k}: {v}" for k, v in record["roles"].items()) or "no roles"
    by = f"; recordings by {', '.join(record['recording_by'])}" if record["recording_by"] else ""
    dup = "; duplicates dropped" if record["drop_duplicates"] else ""
    return f"template {record['template']!r}; {roles}{by}{dup}"


def _hold_to_convention(trees: list[dict], world: ClosedWorld, convention: Convention | None,
                        pinned: list[Path] | None, where: Any) -> None:
    """Name each template manifest's convention in its tree (``convention``, ``convention_pinned``); with
    ``convention`` (the verifier's), every manifest must record exactly it; with ``pinned`` copies and a
    template manifest, the verifier must give one — the copy is the verifier's, but the meaning of each part of
    its names would otherwise still be the scored party's."""
    for t, (_, _, doc) in zip(trees, world.manifests):
        found = Convention.of_manifest(doc)
        if convention is not None:
            if found is None:
                raise _mismatch(where, f"the manifest {t['manifest']} is rfbench's own ingest of "
                                f"{doc.get('dataset')!r}, not a template corpus: --template holds nothing there",
                                "chain.ingest.template", None, convention.template)
            given, got = convention.record(), found.record()
            diffs = [{"path": f"chain.ingest.{k}", "report": got[k], "rerun": given[k]}
                     for k in given if got[k] != given[k]]
            if diffs:
                first = diffs[0]
                raise VerificationError(
                    f"{where}: the manifest {t['manifest']} reads its names by another convention than the one "
                    f"given ({first['path'].rsplit('.', 1)[1]}: {first['report']!r} in the manifest, "
                    f"{first['rerun']!r} given): its labels and domains mean something else", differences=diffs)
            t["convention_pinned"] = True
        elif pinned is not None and found is not None:
            raise _mismatch(where, f"the manifest {t['manifest']} reads its labels and domains from file names by "
                            f"the scored party's convention ({convention_text(t['convention'])}), which "
                            "--dataset does not pin: give the convention you hold your copy to (--template, with "
                            "the roles, --recording-by and --drop-duplicates as you would ingest it)",
                            "chain.ingest.template", t["convention"]["template"], "given with --template")


def _check_reproducible(chain, where: Any) -> None:
    """A chain whose model run allowed random operators cannot be replayed to the same numbers."""
    if chain is None:
        return
    _, record = chain
    if (record.doc.get("settings") or {}).get("allow_random"):
        raise _mismatch(where, "NOT REPRODUCIBLE: the predictions were made with --allow-random (the model holds "
                        "random operators); a re-run cannot give the same numbers", "chain.predict.allow_random",
                        True, "not reproducible")


def _root_hint(report: Mapping, report_real: Path, root: Path) -> str:
    """``; rerun with --root FOLDER`` when the inputs lie outside ``root``: their nearest common ancestor with the
    report's folder (computed from the recorded paths; nothing is read)."""
    places = [str(report_real.parent)]
    for item in report.get("inputs") or []:
        if isinstance(item, Mapping) and isinstance(item.get("path"), str) and "\x00" not in item["path"]:
            places.append(os.path.realpath(report_real.parent / item["path"]))
    try:
        common = os.path.commonpath(places)
    except ValueError:
        return ""
    if Path(common) == root or not Path(common).is_dir():
        return ""
    import shlex

    return f" (the report's inputs lie under {common}: rfbench verify {shlex.quote(str(report_real))} --root " \
           f"{shlex.quote(common)})"
