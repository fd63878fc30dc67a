"""Shared pieces of the robustness tests: a two-output model made from the demo's ridge model, and a summary's cell
recorded again after its report changed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path


def two_outputs(ridge: Path, out: Path) -> Path:
    """The demo's ridge model with a second output ``z``: the training mean pose, whatever the CSI."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    m = onnx.load(str(ridge))
    g = m.graph
    g.node.extend([helper.make_node("Mul", ["flat", "zero"], ["flat0"]),
                   helper.make_node("Add", ["flat0", "target_mean"], ["flatz"]),
                   helper.make_node("Reshape", ["flatz", "out_shape"], ["z"])])
    dtype = numpy_helper.to_array([i for i in g.initializer if i.name == "target_mean"][0]).dtype
    g.initializer.append(numpy_helper.from_array(np.array(0, dtype=dtype), "zero"))
    z = onnx.ValueInfoProto()
    z.CopyFrom(g.output[0])
    z.name = "z"
    g.output.append(z)
    onnx.checker.check_model(m)
    onnx.save(m, str(out))
    return out


def rehash(summary: Path, cell: str) -> None:
    """Record cell ``cell``'s report again in the summary (sha256, first result, drop) and derive every number and
    picture again with rfbench's own functions."""
    from rfbench.report.robustness import _first, _pictures, aggregate

    doc = json.loads(summary.read_text())
    report = summary.parent / "cells" / cell / "report.json"
    first = _first(json.loads(report.read_text()))
    for e in doc["cells"]:
        if e["report"] == f"cells/{cell}/report.json":
            e["sha256"] = hashlib.sha256(report.read_bytes()).hexdigest()
            e["model"] = first
            e["drop"]["value"] = doc["clean"]["model"]["value"] - first["value"]
    doc.update(aggregate(doc["metric"]["better"], doc["clean"], doc["cells"], doc["baseline"]["value"], None))
    summary.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    _pictures(doc, summary.parent)
