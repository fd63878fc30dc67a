"""A large BVP side's X made by reader processes: each reads, checks and parses its runs of rows straight into a
shared buffer, so the side is read on every core (threads share one interpreter lock, and per file a BVP profile
is mostly short Python steps between the checks: two threads were barely faster than one).

The parent (:class:`BvpReaders`) starts ``n`` children (``python -I -m rfbench.datasets.windows.bvp_procs``), or
takes children started ahead (:func:`prestart`: ``rfbench windows`` starts them while it re-checks the split, on
the core that check leaves idle), gives them the dataset root, the row width and the side's file entries through a
file whose path is the first line of their input and which they read once, and hands each
run of rows ``(a, b)`` to the child ``k mod n`` with the shared slot ``k mod 2n``. A child reads every file of its
run through :class:`~rfbench.datasets.windows.dataset_files.DatasetFiles` — inside the root, a regular file of
the manifest's size and sha256, and in a verify re-run only a file verify admitted, exactly as a thread does — and
fills the rows with :func:`rfbench.datasets.windows.bvp.chunk_x`; it answers with each file's size and sha256 (for
the index), or with the error it met (its kind and its one line), which the parent raises when that run's rows
are due: the first damaged file in row order stops the side, as with threads. Both sides of a split written in
one run (``--side both``) share one pool: the test side's runs are queued behind the train side's, so its first
files are read while the train side's last rows are still being written. The parent copies each run out of
its slot in row order and records the files as read. Nothing differs in the output: the same rows, the same
errors, the same index.

A child ignores Ctrl-C (the parent stops it: its input closes) and ends when its input ends, so a parent killed
outright never leaves one behind. The slots live in a file under ``/dev/shm`` (else the temporary folder) that is
removed as soon as every child has mapped it.
"""

from __future__ import annotations

import json
import mmap
import os
import queue
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import numpy as np

from rfbench.errors import RfbenchError

__all__ = ["BvpReaders", "MIN_ROWS", "prestart", "close_spares"]

#: Fewest rows of a side read by processes: below, starting them costs what they save (whole processes on two
#: cores: 3,276 rows 0.91 s with processes against 0.82-0.87 s with threads, 5,346 rows 1.63-1.83 s against
#: 1.61-1.71 s; 24,948 rows 4.0-4.4 s against 5.7-6.3 s).
MIN_ROWS = 8000
_SHM = "/dev/shm"


def _error_class(name: str):
    from rfbench import errors

    cls = getattr(errors, name, None)
    return cls if isinstance(cls, type) and issubclass(cls, RfbenchError) else None


def _spawn() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-I", "-m", __name__], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)  # buffered: replies are read line by line


def prestart(n: int) -> list[subprocess.Popen]:
    """``n`` reader processes started ahead of their rows (each imports what it needs, then waits for the first
    line of its input); hand them to :class:`BvpReaders` (``spares``), and close those not taken with
    :func:`close_spares`; an empty list when one cannot start."""
    procs: list[subprocess.Popen] = []
    try:
        for _ in range(n):
            procs.append(_spawn())
    except OSError:
        close_spares(procs)
        return []
    return procs


def close_spares(procs: list[subprocess.Popen]) -> None:
    """End the processes of :func:`prestart` no :class:`BvpReaders` took (their input closed: they exit unused)."""
    from rfbench.datasets.bvp_readers import close_children

    close_children(procs)
    for proc in procs:
        proc.stdout.close()
    procs.clear()


class BvpReaders:
    """``n`` reader processes for the rows of ``recordings`` (one file each), ``t_max`` steps wide, under the
    dataset ``root``; use as a context manager, then :meth:`queue` runs and :meth:`take` them. ``spares``: reader
    processes started ahead (:func:`prestart`), taken from the list before any is started here."""

    def __init__(self, root: Path, recordings: Sequence[Mapping], t_max: int, n: int, slot_rows: int,
                 spares: list | None = None):
        self.root, self.recordings, self.t_max, self.n = Path(root), recordings, int(t_max), int(n)
        self._spares = spares if spares is not None else []
        self.row_bytes = 4 * t_max * 400
        self.slot_rows = int(slot_rows)
        self.n_slots = 2 * self.n
        self.slot_bytes = self.slot_rows * self.row_bytes
        self.procs: list[subprocess.Popen] = []
        self.drains: list[threading.Thread] = []
        self.replies: list[queue.Queue] = []
        self._map = None
        self._paths: list[str] = []
        self._runs: list[tuple[int, int]] = []  # every run queued, in the order they are taken
        self._sent = 0  # runs handed to a child
        self._taken = 0  # runs taken whose slots are free again
        self._holding = False  # the last run taken is still the caller's (its slot not yet free)

    def __enter__(self) -> "BvpReaders":
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _start(self) -> None:
        folder = _SHM if os.path.isdir(_SHM) and os.access(_SHM, os.W_OK) else None
        fd, slots = tempfile.mkstemp(prefix="rfbench-bvp-", suffix=".slots", dir=folder)
        self._paths.append(slots)
        try:
            # the space reserved now (no room: an error here, and threads read the side), never a fault later
            if hasattr(os, "posix_fallocate"):
                os.posix_fallocate(fd, 0, self.n_slots * self.slot_bytes)
            else:  # pragma: no cover - macOS: a sparse file
                os.ftruncate(fd, self.n_slots * self.slot_bytes)
            self._map = mmap.mmap(fd, self.n_slots * self.slot_bytes)
        finally:
            os.close(fd)
        fd, config = tempfile.mkstemp(prefix="rfbench-bvp-", suffix=".json")
        self._paths.append(config)
        rows = [[r["files"][0]["path"], r["files"][0]["bytes"], r["files"][0].get("sha256"), r["frames"]]
                for r in self.recordings]
        with os.fdopen(fd, "w", encoding="utf-8") as fh:  # dumps, not dump: json.dump encodes in pure Python
            fh.write(json.dumps({"root": str(self.root), "t_max": self.t_max, "slots": slots,
                                 "slot_bytes": self.slot_bytes, "rows": rows}))
        for _ in range(self.n):
            proc = self._spares.pop() if self._spares else _spawn()
            self.procs.append(proc)
            proc.stdin.write(json.dumps(config).encode() + b"\n")  # its first line: where its rows are
            proc.stdin.flush()
            replies: queue.Queue = queue.Queue()
            drain = threading.Thread(target=_drain, args=(proc.stdout, replies), daemon=True)
            drain.start()
            self.drains.append(drain)
            self.replies.append(replies)
        for k in range(self.n):  # every child has read the rows and mapped the slots: their files can go
            reply = self._reply(k)
            if reply.get("ready") is not True:
                raise RuntimeError(f"a BVP reader process did not start: {reply}")
        self._remove_files()

    def _reply(self, k: int) -> dict:
        line = self.replies[k].get()
        if line is None:
            raise RuntimeError("a BVP reader process ended before answering (see its error above)")
        return json.loads(line)

    def _send(self, k: int, task: int, a: int, b: int) -> None:
        pipe = self.procs[k % self.n].stdin
        pipe.write(f"{task % self.n_slots} {a} {b}\n".encode())
        pipe.flush()

    def queue(self, runs: Sequence[tuple[int, int]]) -> None:
        """Queue runs of rows after those queued before: the children start on them as slots free up (a side's
        runs queued ahead are read while the side before it is still being written)."""
        self._runs.extend((int(a), int(b)) for a, b in runs)
        self._fill()

    def _fill(self) -> None:
        while self._sent < len(self._runs) and self._sent < self._taken + self.n_slots:
            k = self._sent
            self._send(k, k, *self._runs[k])
            self._sent += 1

    def take(self, count: int, files, borrow: bool = False) -> Iterator[np.ndarray]:
        """X of the next ``count`` queued runs, in order: a copy, or with ``borrow`` the shared slot itself (valid
        until the next run is asked for); each file a child read is recorded in ``files`` (a
        :class:`~rfbench.datasets.windows.dataset_files.DatasetFiles`) as read there.
        A run's slot is given to the next queued run once the run after it is asked for, here or by the next
        :meth:`take` (a caller that stops asking after the last run it wants never resumes this generator)."""
        for _ in range(count):
            self._release()
            k = self._taken
            a, b = self._runs[k]
            reply = self._reply(k % self.n)
            for path, size, digest in reply["files"]:
                files._remember(path, size, digest)
            if reply.get("error") is not None:
                kind, message = reply["error"]
                cls = _error_class(kind)
                if cls is None:
                    raise RuntimeError(f"a BVP reader process failed: {kind}: {message}")
                raise cls(message)
            slot = k % self.n_slots
            x = np.frombuffer(self._map, dtype=np.float32, count=(b - a) * self.t_max * 400,
                              offset=slot * self.slot_bytes).reshape(b - a, self.t_max, 20, 20)
            self._holding = True
            yield x if borrow else x.copy()
            del x
        self._release()

    def _release(self) -> None:
        """The slot of the last run taken is free again: the next queued run goes to it."""
        if self._holding:
            self._holding = False
            self._taken += 1
            self._fill()

    def _remove_files(self) -> None:
        while self._paths:
            try:
                os.unlink(self._paths.pop())
            except FileNotFoundError:
                pass

    def close(self) -> None:
        from rfbench.datasets.bvp_readers import close_children

        close_children(self.procs)
        for drain in self.drains:
            drain.join()
        for proc in self.procs:
            proc.stdout.close()
        self.procs, self.drains = [], []
        self._remove_files()
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:  # a caller still holds a view of a slot: unmapped with the last one
                pass
            self._map = None


def _drain(stream, replies: queue.Queue) -> None:
    for line in stream:
        replies.put(line)
    replies.put(None)


def _child() -> int:
    """A reader process: import what it needs, read the path of its rows (its input's first line, a JSON string),
    map the slots, then fill ``a:b`` rows into slot ``s`` for each line ``s a b`` read."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops its readers by closing their input
    from rfbench.datasets.windows.bvp import chunk_x
    from rfbench.datasets.windows.dataset_files import DatasetFiles

    first = sys.stdin.buffer.readline()
    if not first:  # started ahead and never used: its input closed
        return 0
    config_path = json.loads(first)
    with open(config_path, encoding="utf-8") as fh:
        config = json.load(fh)
    t_max, slot_bytes = int(config["t_max"]), int(config["slot_bytes"])
    rows = config["rows"]
    fd = os.open(config["slots"], os.O_RDWR)
    try:
        shared = mmap.mmap(fd, 0)
    finally:
        os.close(fd)
    out = sys.stdout.buffer

    def answer(doc: dict) -> None:
        out.write(json.dumps(doc).encode() + b"\n")
        out.flush()

    files = DatasetFiles(config["root"])
    answer({"ready": True})
    for line in sys.stdin.buffer:
        slot, a, b = (int(v) for v in line.split())
        recs = [{"id": str(k), "files": [{"path": p, "bytes": n, "sha256": h}], "frames": t}
                for k, (p, n, h, t) in enumerate(rows[a:b], start=a)]
        view = np.frombuffer(shared, dtype=np.float32, count=(b - a) * t_max * 400,
                             offset=slot * slot_bytes).reshape(b - a, t_max, 20, 20)
        error = None
        try:
            chunk_x(recs, t_max, files.read, out=view)
        except RfbenchError as exc:
            error = [type(exc).__name__, str(exc)]
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which raises it
            error = [type(exc).__name__, str(exc)]
        del view
        read = files.records()
        files._read.clear()
        answer({"files": [[r["path"], r["bytes"], r["sha256"]] for r in read], "error": error})
    return 0


if __name__ == "__main__":
    raise SystemExit(_child())
