"""Shared test fixtures: paths to the optional conformance data and a CLI runner."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: ``../shared`` beside the checkout; ``RFBENCH_SHARED`` points elsewhere (e.g. from a second worktree).
SHARED = Path(os.environ.get("RFBENCH_SHARED") or ROOT.parent / "shared")
CONFORMANCE = SHARED / "conformance"


def conformance_path(*parts: str) -> Path:
    """Path under ../shared/conformance, or skip the test when the folder is absent (a plain clone)."""
    path = CONFORMANCE.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"conformance data not available: {path}")
    return path


@pytest.fixture
def runner():
    from typer.testing import CliRunner

    return CliRunner()
