"""Any labelled Intel 5300 corpus → a manifest, from a file-name template (``rfbench ingest files``).

Most labs name their logs by a convention of their own (``{user}_{gesture}_{repetition}.dat``,
``{distance}_alldata/csi_a{activity}_{sample}.dat``). :func:`ingest` reads such a tree with a template
(:mod:`rfbench.datasets.template`: the rules) and writes the same manifest as the other ingests:

- every file under the root is matched against the template; files that do not match, ambiguous names and
  fields used twice with different texts are problems (with counts), never fatal; a folder that cannot match
  its template segment is one problem with its file count;
- one recording per file, or per group of files when ``recording_by`` names the fields that identify a recording
  (the other fields, e.g. a receiver, name its parts: each part's file entry carries them; a part named
  ``receiver`` with integer values also gives the recording ``receivers``, as for Widar3.0);
- every recording-level field becomes a domain column (integer when every value is a canonical decimal, else
  text); the declared roles (``subject``, ``location``, ``room``, ``orientation``) copy a field under that key,
  and the class (``label`` role) is stored as a **string** under ``label``, so an integer-looking class is never
  read as a label-set index downstream;
- each log is framed by the parser's kernel (valid records, skipped records by reason) and hashed (sha256) in
  the same read; ``frames`` is the fewest valid records of any usable part; empty files and unreadable logs
  are problems; files with identical bytes are problems (and, with ``drop_duplicates``, their recordings are
  left out: a copy of one recording under two names would otherwise sit on both sides of a split);
- the manifest records ``template`` (``{text, fields: [{name, type: "int" | "str"}], recording_by}``, fields in
  template order), ``roles`` and
  ``tree`` (``{files, matched}``: how many files were looked at and how many the template read).

Recording ids are the file's path relative to the root (one file per recording) or the template with each part
field written ``*`` (``20181109/user1-1-1-r*.dat``): unique and stable across runs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Mapping, Sequence

from rfbench.datasets.manifest import Manifest
from rfbench.datasets.template import Template, compile_template, infer_field_types
from rfbench.datasets.tree import (
    TreeWalk,
    count_logs,
    display_path,
    duplicate_problems,
    generated_log,
    part_entries,
    tree_marker,
)
from rfbench.datasets.values import value_sort_key
from rfbench.errors import ValidationError

__all__ = ["ingest", "check_spec", "reads_as_builtin", "ROLES", "RESERVED_FIELDS", "SYNTHETIC_MARKER"]

SYNTHETIC_MARKER = "RFBENCH_SYNTHETIC.json"
#: Roles a template field may be given; each is copied under its own key (``label`` as a string).
ROLES = ("label", "subject", "location", "room", "orientation")
#: Dataset names of rfbench's own ingests: a template corpus may not take them (a report naming ``widar3`` would
#: then rest on labels a template chose).
BUILTIN_DATASETS = {"widar3": "ingest widar", "widar3-bvp": "ingest widar --kind bvp", "mmfi": "ingest mmfi"}
#: Recording keys a template field may not be named after (they have fixed meanings).
RESERVED_FIELDS = ("id", "files", "frames", "label", "receivers", "problems")


def reads_as_builtin(name: str) -> str | None:
    """The dataset of rfbench's own ingests (:data:`BUILTIN_DATASETS`) that ``name`` reads as, or None: the name
    itself however written (``Widar3``, ``mmfi ``, a Cyrillic ``і``), and any name whose letters and digits begin
    as a release's (``Widar3.0``, ``Widar3.0 BVP``, ``MM-Fi``, ``mm_fi``: the names ``compare`` and papers call
    the releases by). A template corpus may take none of them: its labels and domains are its template's, not
    the release's."""
    from rfbench.names import plain_name, read_alike

    found = next((b for b in BUILTIN_DATASETS if read_alike(b, name)), None)
    if found is not None:
        return found
    squashed = "".join(ch for ch in plain_name(name) if ch.isalnum())
    if squashed.startswith("widar"):
        return "widar3-bvp" if "bvp" in squashed else "widar3"
    return "mmfi" if squashed.startswith("mmfi") else None


def check_spec(template: str, recording_by: Sequence[str] | None = None,
               roles: Mapping[str, str] | None = None) -> tuple[Template, tuple, tuple, dict]:
    """Compile the template and check the recording fields and roles against it.

    Returns ``(template, recording_by, parts, roles)``: ``parts`` are the fields that vary within a recording.

    Raises
    ------
    ValidationError
        A bad template (:func:`~rfbench.datasets.template.compile_template`), a field with a reserved name, a
        ``recording_by`` field or a role naming a field the template does not have, a role naming a part field,
        an unknown role, or a field named like a role given to another field.
    """
    tpl = compile_template(template)
    fields = tpl.fields
    listed = ", ".join(fields)
    for f in fields:
        if f in RESERVED_FIELDS:
            raise ValidationError(f"template field {{{f}}} would overwrite the recording's {f!r}; rename it "
                                  f"(e.g. {{{f}_}}) and give it a role if it is the class: label={f}_")
    by = tuple(dict.fromkeys(recording_by or ()))
    for f in by:
        if f not in fields:
            raise ValidationError(f"recording_by names field {f!r}, which the template does not have (its fields: "
                                  f"{listed})")
    parts = tuple(f for f in fields if f not in by) if by else ()
    out_roles: dict[str, str] = {}
    for role, f in (roles or {}).items():
        if f is None:
            continue
        if role not in ROLES:
            raise ValidationError(f"unknown role {role!r}; roles are {', '.join(ROLES)}")
        if f not in fields:
            raise ValidationError(f"the {role} role names field {f!r}, which the template does not have (its "
                                  f"fields: {listed})")
        if f in parts:
            raise ValidationError(f"the {role} role names field {f!r}, which varies within a recording (it is not "
                                  "one of the recording_by fields); a role must be a recording's")
        out_roles[role] = f
    for role in ROLES:
        if role in fields and role in out_roles and out_roles[role] != role:
            raise ValidationError(f"template field {{{role}}} and the {role} role given to field "
                                  f"{out_roles[role]!r} would both be the recording's {role!r}; rename one")
    # a field named like a role is that role's (a template's {subject} is the subject): one role per field
    held: dict[str, str] = {role: role for role in ROLES if role in fields and role not in out_roles}
    for role, f in out_roles.items():
        other = next((r for r, g in held.items() if g == f), None)
        if other is not None:
            first, second = sorted((other, role), key=ROLES.index)
            why = (": a domain that is the class would hold out classes no model trained on"
                   if first == "label" else "")
            raise ValidationError(f"field {f!r} is given two roles, {first} and {second}; a field has one "
                                  f"role{why}")
        held[role] = f
    return tpl, by, parts, out_roles


def _typed(value: str, kind: str):
    return int(value) if kind == "int" else value


def ingest(root: str | os.PathLike, template: str, *, recording_by: Sequence[str] | None = None,
           roles: Mapping[str, str] | None = None, dataset: str | None = None, workers: int | None = None,
           follow_symlinks: bool = False, drop_duplicates: bool = False,
           progress: Callable[[int], None] | None = None,
           on_total: Callable[[int], None] | None = None) -> Manifest:
    """Walk ``root``, read every file's path with ``template`` and build the manifest (see the module docs).

    Parameters
    ----------
    root : path-like
        The dataset folder; the template is a path relative to it.
    template : str
        E.g. ``"{distance}_alldata/csi_a{activity}_{sample}.dat"``.
    recording_by : sequence of str, optional
        Fields that identify a recording; the others name its parts (files). Default: one recording per file.
    roles : mapping, optional
        ``{role: field}`` for the roles in :data:`ROLES` (``{"label": "activity", "location": "distance"}``).
    dataset : str, optional
        The manifest's ``dataset`` (default: the root folder's name).
    workers : int, optional
        Threads counting and hashing logs (default: every core).
    follow_symlinks : bool
        Also follow symbolic links leading outside ``root`` (recorded in the manifest).
    drop_duplicates : bool
        Leave out every recording holding a file whose bytes equal another file's (recorded in the manifest).
    progress, on_total : callable, optional
        ``on_total(n_files)`` once before counting, then ``progress(n)`` as files are counted.

    Returns
    -------
    Manifest

    Raises
    ------
    ValidationError
        ``root`` is not a folder, a bad template or role (:func:`check_spec`), or no recording found (e.g. a
        template matching no file).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import rfbench
    >>> from rfbench.io.writer import synthetic_log
    >>> root = Path(tempfile.mkdtemp())
    >>> for user in ("ann", "bob"):
    ...     for gesture in ("wave", "push"):
    ...         _ = (root / f"{user}_{gesture}.dat").write_bytes(synthetic_log(4, seed=len(user + gesture)))
    >>> m = rfbench.ingest_files(root, "{user}_{gesture}.dat", roles={"label": "gesture", "subject": "user"})
    >>> sorted((r["subject"], r["label"], r["frames"]) for r in m.recordings)
    [('ann', 'push', 4), ('ann', 'wave', 4), ('bob', 'push', 4), ('bob', 'wave', 4)]
    """
    tpl, by, parts, roles = check_spec(template, recording_by, roles)
    root = Path(root)
    if not root.is_dir():
        raise ValidationError(f"{display_path(str(root))}: not a folder; give the folder the template's paths are "
                              "relative to")
    name = dataset or display_path(Path(os.path.abspath(root)).name) or "files"
    builtin = reads_as_builtin(name)
    if builtin is not None:  # `Widar3`, `mmfi `, `Widar3.0`, `MM-Fi` or a Cyrillic і read as the name itself
        said = "" if builtin == name else f" (it reads as {builtin!r})"
        raise ValidationError(f"dataset name {name!r}{said} is that of rfbench's own ingest of the release "
                              f"({BUILTIN_DATASETS[builtin]}), whose labels and domains follow the release's own "
                              "rules; a corpus read by a template needs a name of its own (--dataset)")
    walk = TreeWalk(root, follow_symlinks=follow_symlinks)
    problems = walk.problems
    nseg = len(tpl.segments)
    matched: list[tuple] = []  # (entry, {field: text})
    seen = [0]

    def visit(folder: Path, real: str | None, depth: int) -> None:
        for e in walk.entries(folder, real):
            if e.is_dir:
                if depth < nseg - 1 and tpl.segment_matches(depth, e.name):
                    visit(e.path, e.real, depth + 1)
                    continue
                n = walk.count_files(e.path, e.real)
                seen[0] += n
                if n:
                    where = ("the template expects a file name here" if depth >= nseg - 1 else
                             f"the name does not match {tpl.segment_text(depth)!r} of the template")
                    walk.problem(e.rel, f"folder left out ({where}); its {n} file(s) are not read")
                continue
            if depth == 0 and e.name == SYNTHETIC_MARKER:
                continue
            seen[0] += 1
            values = tpl.match(e.rel)
            if isinstance(values, str):
                walk.problem(e.rel, values + "; left out")
            else:
                matched.append((e, values))

    visit(root, None, 0)
    if not matched:
        raise ValidationError(f"{display_path(str(root))}: no file matches the template {tpl.text!r} ({seen[0]} "
                              "file(s) looked at"
                              + (f", e.g. {problems[0]['path']}" if problems else "") + ")")
    kinds = infer_field_types({f: [v[f] for _, v in matched] for f in tpl.fields})

    # Group files into recordings.
    groups: dict[str, dict] = {}
    for e, values in matched:
        if parts:
            rid = tpl.render(values, placeholder={p: "*" for p in parts})
            key = tuple(values[f] for f in by)
        else:
            rid, key = e.rel, None
        group = groups.setdefault(rid, {"key": key, "values": values, "files": []})
        if group["key"] != key:  # only for pathological texts holding '*'
            walk.problem(e.rel, f"its recording id {rid!r} is that of another recording; left out")
            continue
        group["files"].append((tuple(_typed(values[p], kinds[p]) for p in parts), e))

    to_count = [(str(e.path), e.size) for g in groups.values() for _, e in g["files"] if e.size > 0]
    if on_total is not None:
        on_total(len(to_count))
    counts = count_logs(sorted(to_count), workers=workers, progress=progress)

    all_parts = sorted({pv for g in groups.values() for pv, _ in g["files"]},
                       key=lambda pv: tuple(value_sort_key(v) for v in pv))

    def owner(values: tuple) -> str:  # "receiver 3" in a problem text; a single file is the recording's
        return ", ".join(f"{p} {v}" for p, v in zip(parts, values)) or "the recording"

    recordings = []
    for rid in sorted(groups):
        g = groups[rid]
        values = g["values"]
        rec: dict = {"id": rid}
        for f in tpl.fields:
            if f not in parts:
                rec[f] = _typed(values[f], kinds[f])
        for role, f in roles.items():
            rec[role] = values[f] if role == "label" else _typed(values[f], kinds[f])
        files, usable = part_entries(g["files"], parts, counts, owner, problems)
        if "receiver" in parts and kinds["receiver"] == "int":
            k = parts.index("receiver")
            rec["receivers"] = sorted(pv[k] for pv, _ in usable)
        if parts:
            have = {pv for pv, _ in g["files"]}
            missing = [pv for pv in all_parts if pv not in have]
            if missing:
                shown = "; ".join(", ".join(f"{p}={v}" for p, v in zip(parts, pv)) for pv in missing[:10])
                walk.problem(rid, f"missing part(s) {shown}{' …' if len(missing) > 10 else ''} (found in other "
                                  "recordings)")
        rec["files"] = files
        rec["frames"] = min((n for _, n in usable), default=0)
        recordings.append(rec)

    dup_problems, dup_groups = duplicate_problems((f["path"], f["sha256"], f["bytes"]) for r in recordings
                                                  for f in r["files"])
    problems.extend(dup_problems)
    if drop_duplicates and dup_groups:
        copies = {p for group in dup_groups for p in group}
        kept = []
        for rec in recordings:
            if any(f["path"] in copies for f in rec["files"]):
                walk.problem(rec["id"], "recording left out (duplicates are dropped): a file of it is identical to "
                                        "another file, so which recording the bytes belong to is unknown")
            else:
                kept.append(rec)
        recordings = kept
        if not recordings:
            raise ValidationError(f"{display_path(str(root))}: every recording holds a duplicated file; none is left")
    problems.sort(key=lambda p: (p["path"], p["reason"]))
    extra: dict = {
        "template": {"text": tpl.text, "fields": [{"name": f, "type": kinds[f]} for f in tpl.fields],
                     "recording_by": list(by) or None},
        "roles": dict(roles),
        "tree": {"files": seen[0], "matched": len(matched)},
    }
    marker = tree_marker(walk, SYNTHETIC_MARKER)
    if marker is None:  # the marker file gone, the logs may still say who wrote them
        marker = generated_log(recordings, {e.rel: str(e.path) for g in groups.values() for _, e in g["files"]},
                               counts)
    if marker is not None:
        extra["synthetic_marker"] = marker
    if follow_symlinks:
        extra["follow_symlinks"] = True
    if drop_duplicates:
        extra["drop_duplicates"] = True
    return Manifest(dataset=name, root=os.path.abspath(root), recordings=recordings, problems=problems,
                    synthetic=marker is not None, extra=extra)
