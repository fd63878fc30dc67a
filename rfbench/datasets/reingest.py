"""The ``rfbench ingest`` command that writes a manifest again from its dataset tree.

A manifest is what ``ingest`` made of a tree: every recording's id, label and domains follow from its files' paths
and every ``frames`` and sha256 from their bytes. ``rfbench verify`` does not take them on the manifest's word —
the manifest is a file the scored party could have edited (a label set to the predicted class, a location moved
to the other side of a protocol, a recording listed twice, a recording's frames set to 0) and then split, windowed
and scored again, so every later link agrees with it. verify runs ingest again over the tree with the settings
the manifest records (:func:`ingest_argv`) and compares the two manifests field by field (its root excepted:
where the tree is, relative to the manifest).

The settings each ``ingest`` records, and so its command here:

- ``widar3-bvp``: ``ingest widar ROOT --kind bvp``;
- ``widar3``: ``--kind csi``, or ``--kind both`` for a manifest of both releases (``kind: csi+bvp``), with
  ``--receivers N`` when the expected receivers are r1…rN (otherwise those seen, which ingest finds again);
- ``mmfi``: ``ingest mmfi ROOT``, with ``--verify-frames`` when it was given;
- a manifest with a ``template``: ``ingest files ROOT --template T --dataset NAME`` and its ``--recording-by``,
  roles and ``--drop-duplicates``;
- any of them: ``--follow-symlinks`` when it was given.
"""

from __future__ import annotations

from typing import Any, Mapping

from rfbench.datasets.files import ROLES
from rfbench.errors import FormatError

__all__ = ["ingest_argv", "ROOT_FIELD"]

#: The manifest field a second ingest writes differently by construction (the tree's folder, relative to the
#: manifest, or absolute): not compared.
ROOT_FIELD = "root"

def ingest_argv(doc: Mapping[str, Any], root: str, out: str, where: Any = "manifest") -> list[str]:
    """The ``rfbench ingest …`` arguments (without ``rfbench``) that write manifest ``doc`` again from the tree
    at ``root`` into ``out``.

    Raises
    ------
    FormatError
        ``doc`` is not a manifest ``rfbench ingest`` writes (an unknown dataset without a template, or settings
        of the wrong type): its recordings cannot be checked against a tree.
    """
    dataset = doc.get("dataset")
    follow = doc.get("follow_symlinks", False)
    if not isinstance(follow, bool):
        raise FormatError(f"{where}: follow_symlinks is {follow!r}, not true or false")
    template = doc.get("template")
    if template is not None:
        argv = ["ingest", "files", root, f"--template={_text(template, 'text', where)}",
                f"--dataset={_name(dataset, where)}"]
        by = template.get("recording_by")
        if by is not None:
            if not isinstance(by, list) or not by or not all(isinstance(f, str) and f for f in by):
                raise FormatError(f"{where}: template.recording_by is {by!r}, not a list of field names")
            argv.append(f"--recording-by={','.join(by)}")
        roles = doc.get("roles") or {}
        if not isinstance(roles, Mapping) or set(roles) - set(ROLES):
            raise FormatError(f"{where}: roles is {roles!r}, not an object of {', '.join(ROLES)}")
        for role in ROLES:
            field = roles.get(role)
            if field is not None:
                argv.append(f"--{role}={_name(field, where)}")
        if doc.get("drop_duplicates", False) is True:
            argv.append("--drop-duplicates")
    elif dataset == "widar3-bvp":
        argv = ["ingest", "widar", root, "--kind", "bvp"]
    elif dataset == "widar3":
        argv = ["ingest", "widar", root, "--kind", "both" if doc.get("kind") == "csi+bvp" else "csi"]
        expected = doc.get("receivers_expected")
        if isinstance(expected, list) and expected and all(type(r) is int for r in expected) \
                and expected == list(range(1, len(expected) + 1)) and len(expected) <= 6:
            argv += ["--receivers", str(len(expected))]
    elif dataset == "mmfi":
        argv = ["ingest", "mmfi", root]
        if doc.get("verify_frames", False) is True:
            argv.append("--verify-frames")
    else:
        raise FormatError(f"{where}: dataset {dataset!r} is not one rfbench ingest writes without a template; its "
                          "recordings cannot be checked against the dataset tree")
    if follow:
        argv.append("--follow-symlinks")
    return argv + ["-o", out]


def _text(template: Any, key: str, where: Any) -> str:
    value = template.get(key) if isinstance(template, Mapping) else None
    if not isinstance(value, str) or not value:
        raise FormatError(f"{where}: template.{key} is {value!r}, not a template")
    return value


def _name(value: Any, where: Any) -> str:
    if not isinstance(value, str) or not value:
        raise FormatError(f"{where}: {value!r} is not a name ingest records")
    return value
