"""verify's re-runs (and verify itself) never read a library's code or data from a folder the environment names.

With ``NUMBA_CACHE_DIR`` pointing at a folder the scored party shipped, numba loaded its index files (pickles,
read before any check) in every re-run child: code of the party's that copied a forged report over the re-run's
output, and verify said MATCH on an accuracy of 1.0 the model never made. ``MPLCONFIGDIR`` (or
``XDG_CACHE_HOME``) with a forged font cache drew a picture's digits from another font file under a MATCH.
``RFBENCH_RERUN_LIMITS`` set by hand made verify itself a re-run confined to nothing, blaming the report.
"""

from __future__ import annotations

import subprocess

import pytest

from rfbench.cli import app
from rfbench.report import verify as V

FOREIGN = {"NUMBA_CACHE_DIR": "/party/numba", "MPLCONFIGDIR": "/party/mpl", "XDG_CACHE_HOME": "/party/cache",
           "XDG_CONFIG_HOME": "/party/config", "MATPLOTLIBRC": "/party/rc", "PYTHONPATH": "/party/py",
           "FONTCONFIG_FILE": "/party/fonts.conf", "FONTCONFIG_PATH": "/party/fontconfig"}


def test_the_foreign_variables_are_the_ones_that_move_library_files():
    assert set(FOREIGN) <= set(V.FOREIGN_ENV)
    env = {**FOREIGN, "PATH": "/usr/bin", "HOME": "/root", "TMPDIR": "/tmp/x"}
    assert sorted(V.foreign_environment_removed(env)) == sorted(FOREIGN)
    assert env == {"PATH": "/usr/bin", "HOME": "/root", "TMPDIR": "/tmp/x"}


def _children_environments(tiny_demo, monkeypatch) -> list[dict]:
    """Verify the tiny demo's gesture report (a MATCH) and return the environment of each re-run child."""
    seen = []
    real = subprocess.Popen

    def popen(cmd, *args, **kwargs):
        seen.append(dict(kwargs.get("env") or {}))
        return real(cmd, *args, **kwargs)

    monkeypatch.setattr(V.subprocess, "Popen", popen)
    result = V.verify_report(tiny_demo / "gesture" / "report.json", root=tiny_demo)
    assert result.status == "match"
    return seen


def test_no_rerun_child_gets_a_folder_the_environment_names(runner, tiny_demo, monkeypatch):
    for k, v in FOREIGN.items():
        monkeypatch.setenv(k, v)
    seen = _children_environments(tiny_demo, monkeypatch)
    assert seen, "no re-run child was started"
    for env in seen:
        assert not set(FOREIGN) & set(env), sorted(set(FOREIGN) & set(env))
        assert V.LIMITS_ENV in env and "PATH" in env


def test_the_verify_command_drops_them_from_its_own_process_first(runner, monkeypatch, tmp_path):
    import os

    for k, v in FOREIGN.items():
        monkeypatch.setenv(k, v)
    result = runner.invoke(app, ["verify", str(tmp_path / "missing.json")])  # the command starts, then refuses
    assert result.exit_code == 2, result.output
    assert not set(FOREIGN) & set(os.environ)


def test_a_hand_set_rerun_marker_is_named_not_blamed_on_the_report(runner, monkeypatch, tiny_demo):
    monkeypatch.setenv(V.LIMITS_ENV, '{"cpu_seconds": 60, "memory_mb": 4096, "parent": 1, "world": "/nowhere"}')
    result = runner.invoke(app, ["verify", str(tiny_demo / "gesture" / "report.json"), "--root", str(tiny_demo)])
    assert result.exit_code == 2, result.output
    assert f"the environment variable {V.LIMITS_ENV} is set" in " ".join(result.output.split())


@pytest.mark.parametrize("name", sorted(FOREIGN))
def test_each_is_named_in_the_docs(name):
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "verify.md").read_text()
    assert f"`{name}`" in text


def test_each_rerun_child_has_a_home_of_its_own(tiny_demo, monkeypatch, tmp_path):
    """A ``HOME`` the party's instructions set (beside the report: a forged Matplotlib font cache under it drew
    swapped digits that verify re-drew the same) is never a re-run's: the children share an empty ``HOME`` in
    verify's private scratch folder, and nothing is read from or written to the verifier's."""
    from pathlib import Path

    party = tmp_path / "home"
    (party / ".cache" / "matplotlib").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(party))
    seen = _children_environments(tiny_demo, monkeypatch)
    homes = {env.get("HOME") for env in seen}
    assert len(seen) > 1 and len(homes) == 1 and str(party) not in homes
    home = Path(homes.pop())
    assert home.name == "home" and home.parent.name.startswith("rfbench-verify-") and not home.exists()
    assert list((party / ".cache" / "matplotlib").iterdir()) == []  # no child drew with the party's font cache
