"""A hand-made manifest for content-check tests."""

from __future__ import annotations

import json
from pathlib import Path

from rfbench.datasets.manifest import Manifest


def toy_manifest(tmp_path: Path, files: dict[str, bytes], recordings: dict[str, list[str]], **extra) -> Path:
    """A hand-made manifest: ``files`` written under tmp_path/data, ``recordings`` id → file names."""
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    for name, body in files.items():
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        (data / name).write_bytes(body)
    recs = [{"id": rid, "files": [{"path": n, "bytes": len(files[n]), **extra.get(n, {})} for n in names],
             "frames": 1} for rid, names in recordings.items()]
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(Manifest("toy", "data", recs).to_dict()))
    return path
