"""verify's own process never imports matplotlib: imported, it reads a ``matplotlibrc`` in the current folder (and
under ``HOME``), and one that was a FIFO beside the report hung ``rfbench verify`` past ``--timeout`` (one linked to
/dev/zero grew without bound). Whether pictures can be drawn again is found without importing it; the re-runs
draw, each in an empty folder of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def test_verify_tells_the_plotting_library_is_there_without_importing_it(tmp_path):
    code = ("import sys\nfrom rfbench.report.verify import _plot_engine\n"
            "print(_plot_engine(), 'matplotlib' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    pytest.importorskip("matplotlib")
    assert done.stdout.split() == ["matplotlib", "False"]


@pytest.mark.long
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_matplotlibrc_beside_the_report_does_not_hang_verify(tiny_demo, tmp_path):
    import shutil

    pytest.importorskip("matplotlib")
    script = Path(sys.executable).parent / "rfbench"
    if not script.is_file():
        pytest.skip("no rfbench console script beside this interpreter")
    demo = tmp_path / "d"
    shutil.copytree(tiny_demo, demo)
    os.mkfifo(demo / "gesture" / "matplotlibrc")
    done = subprocess.run([str(script), "verify", "report.json", "--root", str(demo), "--timeout", "300"],
                          cwd=demo / "gesture", capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("MATCH report.json")
