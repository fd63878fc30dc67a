"""Split protocols and the leakage audit.

:mod:`~rfbench.protocols.split` maps recording metadata and a seed to train/test (random, cross-subject/room/
location/orientation, leave-one-domain-out, MM-Fi S1/S2/S3 × P1/P2/P3) and offers a scikit-learn-compatible
splitter; :mod:`~rfbench.protocols.leakage` audits any split and raises ``LeakageError`` on a leak;
:mod:`~rfbench.protocols.splitfile` reads split files back (``SplitInfo``), row → recording ids and the split's
manifest.
"""
