"""Reports: evidence tags, the mean-pose baseline, the report document, renderings and verification.

Submodules: :mod:`~rfbench.report.evidence` (MEASURED / SYNTHETIC / CLAIMED and their rules),
:mod:`~rfbench.report.baseline` (splits, row → recording ids, mean training pose),
:mod:`~rfbench.report.build` (the ``rfbench.report/1`` document), :mod:`~rfbench.report.pose` (the pose task),
:mod:`~rfbench.report.render` (Markdown and terminal), :mod:`~rfbench.report.verify` (re-run and compare).
"""
