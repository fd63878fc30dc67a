"""``rfbench audit`` as a library call: re-check any split file for leaks (DESIGN.md §6, §7a).

:func:`audit_split` takes an rfbench split file — re-checked against its manifest by
:func:`rfbench.protocols.splitfile.check_split_file`: its sides must be what its protocol gives, and the
protocol's own claims are audited, never the file's — or a plain ``{"train": [...], "test": [...]}`` document
made elsewhere, audited for recordings, windows and the claims the caller names.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from rfbench.errors import ValidationError
from rfbench.io.files import check_schema, read_json
from rfbench.protocols.leakage import AuditResult

__all__ = ["AuditOutcome", "audit_split"]


@dataclass
class AuditOutcome:
    """What :func:`audit_split` found: the verdict and what it was computed from."""

    result: AuditResult
    manifest: Path
    plain: bool
    protocol: str | None
    leakage_prone: bool | None
    content: object = None  # rfbench.protocols.content.ContentAudit when content was checked


def audit_split(path: str | os.PathLike, manifest: str | os.PathLike | None = None, *,
                claims: Iterable[str] = (), content: bool = False, min_shared: int | None = None,
                progress=None, on_total=None) -> AuditOutcome:
    """Audit a split file (see the module docstring); a failed check is in ``result``, not raised.

    Parameters
    ----------
    path : path-like
        An rfbench split file, or a plain ``{"train": [...], "test": [...]}`` document.
    manifest : path-like, optional
        The manifest (default, for a split file: the one it names; required for a plain file).
    claims : iterable of str
        Further domain keys required disjoint.
    content : bool
        Also fingerprint both sides' files: the same file, Intel 5300 record or MM-Fi frame on both sides under
        any ids fails the audit (:mod:`rfbench.protocols.content`; ``min_shared`` records or frames make a leak,
        default 1). A split made with a content audit is always re-checked for content.
    progress, on_total : callable, optional
        While fingerprinting: ``on_total(n)`` once (the files to read), then ``progress(n_files)``.

    Returns
    -------
    AuditOutcome
        ``result`` (an :class:`~rfbench.protocols.leakage.AuditResult`), the manifest used, and the protocol and
        its leakage-proneness (None for a plain file).

    Raises
    ------
    FormatError, SchemaError, ValidationError
        Unreadable split or manifest, a plain file without a manifest, ids the manifest does not have.

    Examples
    --------
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> import rfbench
    >>> d = Path(tempfile.mkdtemp())
    >>> recordings = [{"id": f"r{i}", "files": [], "frames": 10, "subject": f"s{i % 4}"} for i in range(8)]
    >>> rfbench.Manifest("mine", ".", recordings).write(d / "manifest.json")
    PosixPath(...)
    >>> _ = (d / "theirs.json").write_text(json.dumps({"train": ["r0", "r3"], "test": ["r7"]}))
    >>> outcome = rfbench.audit_split(d / "theirs.json", d / "manifest.json", claims=["subject"])
    >>> outcome.result.passed, [c["name"] for c in outcome.result.failed]
    (False, ['subject-disjoint'])
    """
    from rfbench.datasets.manifest import read_manifest
    from rfbench.protocols.leakage import audit_document
    from rfbench.protocols.splitfile import check_split_file

    path = Path(path)
    if min_shared is not None:
        from rfbench.protocols.content import check_min_shared

        if not content:
            raise ValidationError("`min_shared` applies only with `content`")
        check_min_shared(min_shared)
    doc = read_json(path)
    if "schema" in doc:
        check_schema(doc, "split", str(path))
        check = check_split_file(path, manifest, doc=doc, claims=claims, content=content, min_shared=min_shared,
                                 progress=progress, on_total=on_total)
        return AuditOutcome(check.audit, check.manifest_file, False, check.assignment.protocol,
                            bool(check.assignment.leakage_prone), check.content)
    if manifest is None:
        raise ValidationError(f"{path}: a plain split file names no manifest; pass the manifest it refers to")
    m = read_manifest(manifest)
    result = audit_document(doc, m.table(), claims=claims, where=str(path))
    found = None
    if content:
        from rfbench.protocols.content import DEFAULT_MIN_SHARED, audit_split_content, with_content

        found = audit_split_content(path, manifest, progress=progress, on_total=on_total,
                                    min_shared=DEFAULT_MIN_SHARED if min_shared is None else min_shared)
        result = with_content(result, found)
    return AuditOutcome(result, Path(manifest), True, None, None, found)
