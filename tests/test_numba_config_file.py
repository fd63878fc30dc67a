"""A ``.numba_config.yaml`` in the current folder is never read by rfbench's processes.

Numba reads that file (when PyYAML is installed) at import and before every compilation; ``cache_dir`` in it
pointed Numba's cache at a folder whose index files (pickles, loaded at a kernel's first call) ran someone
else's code: run from such a folder, ``rfbench proof`` printed PASS for weights it never trained.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("yaml")  # without PyYAML Numba reads no such file in any case

PROBE = """
import json, os
from rfbench._jit import njit
import numba.core.config as config

add_one = njit(cache=False)(lambda x: x + 1)  # (a lambda of -c has no file to cache beside)
value = add_one(41)  # a compilation: Numba reloads its settings first
print(json.dumps({"value": value, "jit": hasattr(add_one, "py_func"), "disable_jit": config.DISABLE_JIT,
                  "cache_dir": config.CACHE_DIR, "debug_cache": config.DEBUG_CACHE}))
"""


def test_a_numba_settings_file_in_the_current_folder_is_ignored(tmp_path):
    (tmp_path / ".numba_config.yaml").write_text("disable_jit: 1\ncache_dir: planted-cache\ndebug_cache: 1\n")
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("NUMBA_")}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"value": 42, "jit": True, "disable_jit": 0, "cache_dir": "", "debug_cache": 0}, seen
    assert not (tmp_path / "planted-cache").exists()
    assert "config file" not in done.stderr  # ignored without a warning on every compilation
