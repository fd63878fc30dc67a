"""What the repository tracks: source, docs and small test data, never a build artefact or a large blob.

A file over :data:`MAX_BYTES`, or an archive or package (a wheel, a zip, a tarball...), is allowed only under a
``fixtures/`` folder, where a test that needs one keeps it. A single compressed data file (``.json.gz``) is not
an archive: it holds one document a test reads. The list comes from ``git ls-files``; outside a git checkout
(an unpacked sdist) the test skips.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_BYTES = 1_000_000
#: Archives and packages, by how the file name ends.
ARCHIVES = (".whl", ".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst", ".7z",
            ".rar", ".egg", ".jar", ".deb", ".rpm", ".conda")


def tracked_files(root: Path) -> list[str]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    done = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"not a git checkout: {root}")
    return [p for p in done.stdout.decode("utf-8", "surrogateescape").split("\0") if p]


def problems(root: Path, paths: list[str]) -> list[str]:
    out = []
    for rel in paths:
        if "fixtures" in Path(rel).parts[:-1]:
            continue
        path = root / rel
        if rel.lower().endswith(ARCHIVES):
            out.append(f"{rel}: an archive or package; keep it out of the repository (or under fixtures/ "
                       "when a test needs it)")
        elif path.is_file() and not path.is_symlink() and path.stat().st_size > MAX_BYTES:
            out.append(f"{rel}: {path.stat().st_size:,} bytes, over {MAX_BYTES:,}; generate it in the test, or "
                       "keep it under fixtures/")
    return out


def test_no_large_file_or_archive_is_tracked_outside_fixtures():
    assert problems(ROOT, tracked_files(ROOT)) == []


def test_the_check_finds_a_wheel_a_tarball_and_a_large_file(tmp_path):
    for name, size in (("tool-1.0-py3-none-any.whl", 10), ("src.tar.gz", 10), ("big.bin", MAX_BYTES + 1),
                       ("small.json.gz", 10), ("fixtures/ok.zip", 10), ("tests/fixtures/big.bin", MAX_BYTES + 1),
                       ("fine.py", MAX_BYTES)):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x" * size)
    found = problems(tmp_path, ["tool-1.0-py3-none-any.whl", "src.tar.gz", "big.bin", "small.json.gz",
                                "fixtures/ok.zip", "tests/fixtures/big.bin", "fine.py"])
    assert [p.split(":")[0] for p in found] == ["tool-1.0-py3-none-any.whl", "src.tar.gz", "big.bin"]


def test_outside_a_git_checkout_it_skips(tmp_path):
    with pytest.raises(pytest.skip.Exception):
        tracked_files(tmp_path)
