"""Reports: evidence tags, the training-split baselines, the report document, renderings and verification.

Submodules: :mod:`~rfbench.report.evidence` (MEASURED / SYNTHETIC / CLAIMED and their rules),
:mod:`~rfbench.report.baseline` (mean training pose, class frequencies),
:mod:`~rfbench.report.common` (inputs, scored-row checks, clusters and the paired bootstrap, for every task),
:mod:`~rfbench.report.build` (the ``rfbench.report/1`` document), :mod:`~rfbench.report.pose` (the pose task),
:mod:`~rfbench.report.gesture` (the gesture task), :mod:`~rfbench.report.render` (Markdown and terminal),
:mod:`~rfbench.report.verify` (re-run and compare).
"""
