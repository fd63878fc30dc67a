"""The whole ``rfbench parse`` job, as whole processes, against the script a user writes today.

The job: a folder of Widar-size logs to one ``.npz`` archive each. The script a user writes instead
(:data:`CSIREAD_SCRIPT`): for each file, csiread's ``Intel(f, nrxnum=3, ntxnum=1).read()`` then ``numpy.savez``
of the same arrays, in one process. Both are timed from outside, start-up included (a fresh interpreter per
run): ``timeraw_parse_job`` (gated) runs ``rfbench parse FOLDER -o OUT --json``; ``track_speedup_vs_csiread_script``
runs the two in turn (A B A B ..., :data:`PAIRS` pairs) and returns the median of the pairs' time ratios, the
script's over rfbench's; ``track_startup_seconds`` / ``track_csiread_script_startup_seconds`` time each on a
folder of one 1-record log (what a job costs before its first file), reported separately.

Cases (inputs built in ``setup_cache``, never committed): ``ci`` — 24 copies of a generated log the size and
shape of the public ``los_40.dat`` (1,119 3×1 records, 240,585 bytes); with ``RFBENCH_BENCH_LARGE=1``,
``widar600`` — 600 copies of ``los_40.dat`` (the real file when ``../shared/conformance`` is present, else
the generated one) and ``mb150`` — 150 copies of ``sample_0x5_64_3000.dat`` (1 MB; real or
:func:`rfbench.io.writer.sample_0x5_like`).

For the same measurement outside asv (docs/parse.md): ``python -m benchmarks.bench_parse_job make CASE DIR``
builds a case's inputs in DIR, and ``python -m benchmarks.bench_parse_job script > csiread_job.py`` writes the
csiread script, run as ``python csiread_job.py DIR OUT``.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LARGE = os.environ.get("RFBENCH_BENCH_LARGE") == "1"  # CI sizes only unless set (benchmarks/README.md)
# The gate sets RFBENCH_BENCH_TIMER=cpu for time_*; timeraw_* always measure wall-clock time in their own process.
timer = time.process_time if os.environ.get("RFBENCH_BENCH_TIMER") == "cpu" else time.perf_counter
CONFORMANCE = Path(__file__).resolve().parents[1].parent / "shared" / "conformance" / "intel5300"
#: case: (log, copies)
ALL_CASES = {"ci": ("los_40", 24), "widar600": ("los_40", 600), "mb150": ("sample_0x5", 150)}
CASES = {k: v for k, v in ALL_CASES.items() if k == "ci" or LARGE}
PAIRS = 5

#: The script a user writes today: csiread, then numpy.savez of the same arrays, file by file, in one process.
CSIREAD_SCRIPT = r"""
import glob, os, sys
import csiread
import numpy as np

src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
for path in sorted(glob.glob(os.path.join(src, "*.dat"))):
    c = csiread.Intel(path, nrxnum=3, ntxnum=1, if_report=False)
    c.read()
    np.savez(os.path.join(out, os.path.basename(path)[:-4] + ".npz"), csi=c.csi, timestamp_low=c.timestamp_low,
             bfee_count=c.bfee_count, nrx=c.Nrx, ntx=c.Ntx, rssi_a=c.rssi_a, rssi_b=c.rssi_b, rssi_c=c.rssi_c,
             noise=c.noise, agc=c.agc, perm=c.perm, rate=c.rate)
"""

# The console script's own path: rfbench.cli.main reads the command from sys.argv (and, since it builds only the
# command it runs, this times what a user's `rfbench parse` costs).
_RFBENCH = r"""
import contextlib, io, sys
sys.argv = ["rfbench", "parse", sys.argv[1], "-o", sys.argv[2], "--json"]
from rfbench.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main()
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise
"""


def _log_bytes(kind: str, real_if_present: bool) -> bytes:
    """The log a case copies: the real public file when asked and present, else a generated one of its size
    and shape."""
    from rfbench.io.writer import sample_0x5_like, synthetic_log

    real = CONFORMANCE / ("los_40.dat" if kind == "los_40" else "sample_0x5_64_3000.dat")
    if real_if_present and real.exists():
        return real.read_bytes()
    return synthetic_log(1119, nrx=3, ntx=1, seed=40) if kind == "los_40" else sample_0x5_like(0)


def make_case(case: str, folder: Path) -> Path:
    """Build ``case``'s input folder under ``folder`` (copies of one log), and return it."""
    kind, n = ALL_CASES[case]
    folder.mkdir(parents=True, exist_ok=True)
    data = _log_bytes(kind, real_if_present=case != "ci")
    for k in range(n):
        (folder / f"{kind}_{k:04d}.dat").write_bytes(data)
    return folder


def _run(code: str, src: str, scratch: str) -> float:
    """Wall-clock seconds of one fresh interpreter running ``code SRC OUT`` (OUT a new folder under ``scratch``).

    Outputs are removed only in ``teardown``, not between runs: on ext4, creating a file right after many were
    deleted costs far more (the inode allocator skips recently freed inodes), which would slow the next run."""
    out = tempfile.mkdtemp(dir=scratch)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, src, os.path.join(out, "o")], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


class ParseJob:
    params = [list(CASES)]
    param_names = ["case"]
    timeout = 900

    def setup_cache(self):
        try:
            import rfbench.io.writer  # noqa: F401
            from rfbench.io.parse_files import parse_many  # noqa: F401
        except ImportError:  # an older commit: setup() skips every benchmark of the class
            return {}  # not None: asv passes a None cache on as no argument at all
        root = Path("parse-job").resolve()
        shutil.rmtree(root, ignore_errors=True)
        folders = {case: str(make_case(case, root / case)) for case in CASES}
        tiny = root / "tiny"
        tiny.mkdir()
        from rfbench.io.writer import synthetic_log

        (tiny / "one.dat").write_bytes(synthetic_log(1, seed=1))
        scratch = root / "scratch"
        scratch.mkdir()
        _run(_RFBENCH, str(tiny), str(scratch))  # the kernels compiled and cached before anything is timed
        return {"folders": folders, "tiny": str(tiny), "scratch": str(scratch)}

    def setup(self, cache, case):
        if not cache:
            raise NotImplementedError("no parallel parse job (rfbench.io.parse_files.parse_many) on this commit")
        self.src, self.tiny, self.scratch = cache["folders"][case], cache["tiny"], cache["scratch"]
        self.out = tempfile.mkdtemp(dir=self.scratch)

    def teardown(self, cache, case):
        if getattr(self, "out", None):
            shutil.rmtree(self.out, ignore_errors=True)

    def timeraw_parse_job(self, cache, case):
        """``rfbench parse FOLDER -o OUT --json`` in a fresh interpreter (each run writes a new OUT)."""
        return (f"import sys, tempfile; sys.argv = ['', {self.src!r}, tempfile.mkdtemp(dir={self.out!r})]\n"
                + _RFBENCH)

    def _csiread(self):
        try:
            import csiread  # noqa: F401
        except ImportError:
            raise NotImplementedError("csiread is not installed") from None

    def track_speedup_vs_csiread_script(self, cache, case):
        """Median over A/B pairs of the csiread script's wall-clock time over rfbench's, whole processes."""
        self._csiread()
        ratios = []
        for _ in range(PAIRS):
            ours = _run(_RFBENCH, self.src, self.out)
            theirs = _run(CSIREAD_SCRIPT, self.src, self.out)
            ratios.append(theirs / ours)
        return statistics.median(ratios)

    track_speedup_vs_csiread_script.unit = "x csiread script"

    def track_startup_seconds(self, cache, case):
        """rfbench parse on a folder of one 1-record log: the job's fixed cost (median of runs)."""
        return statistics.median(_run(_RFBENCH, self.tiny, self.out) for _ in range(PAIRS))

    track_startup_seconds.unit = "s"

    def track_csiread_script_startup_seconds(self, cache, case):
        """The csiread script on the same folder of one 1-record log."""
        self._csiread()
        return statistics.median(_run(CSIREAD_SCRIPT, self.tiny, self.out) for _ in range(PAIRS))

    track_csiread_script_startup_seconds.unit = "s"


def main(argv: list[str]) -> int:
    """``make CASE DIR``: build a case's inputs in DIR; ``script``: print the csiread script (run it as
    ``python SCRIPT SRC OUT``)."""
    if len(argv) == 3 and argv[0] == "make":
        print(make_case(argv[1], Path(argv[2])))
        return 0
    if argv == ["script"]:
        sys.stdout.write(CSIREAD_SCRIPT.lstrip())
        return 0
    print("usage: python -m benchmarks.bench_parse_job make CASE DIR | script", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
