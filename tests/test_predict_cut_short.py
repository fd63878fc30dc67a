"""X is memory-mapped by ``rfbench predict``: a file cut short while it is mapped kills the process on the next
touch of a lost page (SIGBUS, exit 135, no word said). Every copy rfbench's own process makes of rows of X (rows
gathered for the rows-alone check, a padded batch) is now read from the file instead, and a batch goes from the
mapping to the model's process by a system call, which fails with an error; either way one line. And X's sha256
is of the file mapped (its descriptor), not of whatever the path names by the time the hashing thread opens it.
(Found by an adversarial probe; each test fails on the code before.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

SCRIPT = textwrap.dedent("""
    import os, sys
    from rfbench.errors import RfbenchError
    from rfbench.nn import predict as P

    folder, model, when = sys.argv[1], sys.argv[2], sys.argv[3]
    w = P.open_windows(folder, check_x=False)
    if when == "before":
        os.truncate(w.x_path, 128)
    else:  # after the batches, before the rows-alone check gathers rows of X
        real = P._Runner.run

        def run_then_cut(self):
            real(self)
            os.truncate(w.x_path, 128)

        P._Runner.run = run_then_cut
    try:
        P.predict(model, w, P.PredictSettings(batch_size=16))
    except RfbenchError as exc:
        print(exc)
        raise SystemExit(2)
""")


@pytest.mark.parametrize("when, said", [
    ("before", "a batch of the input could not be read (its file, mapped, was cut short while the model ran)"),
    ("after", "changed since `rfbench windows` wrote it"),
])
def test_x_cut_short_while_predict_runs_is_one_line(tiny_demo, tmp_path, when, said):
    folder = tmp_path / "w"
    shutil.copytree(tiny_demo / "windows" / "bvp-test", folder)
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(folder), str(tiny_demo / "bvp" / "centroid.onnx"),
                             when], capture_output=True, text=True, timeout=300)
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert said in result.stdout and result.stdout.count("\n") == 1, result.stdout


def test_x_s_sha256_is_of_the_file_mapped(tiny_demo, tmp_path):
    """The mapped X is forged; the honest one is renamed into its place once predict has opened the folder: the
    hashing thread opened X.npy by its path and hashed the honest file, so predictions from the forged X passed
    under the honest digest."""
    from rfbench.errors import ValidationError
    from rfbench.nn import predict as P

    folder = tmp_path / "w"
    shutil.copytree(tiny_demo / "windows" / "bvp-test", folder)
    honest = folder / "X.honest"
    shutil.copy(folder / "X.npy", honest)
    rows = np.load(honest)
    forged = rows[::-1].copy()  # the rows in another order: the same shape and size
    assert not np.array_equal(forged, rows)
    np.save(folder / "X.npy", forged)
    w = P.open_windows(folder, check_x=False)
    os.replace(honest, folder / "X.npy")
    with pytest.raises(ValidationError, match="changed since `rfbench windows` wrote it"):
        P.predict(tiny_demo / "bvp" / "centroid.onnx", w, P.PredictSettings(batch_size=16))
