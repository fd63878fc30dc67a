"""The model path: a naive 2D convolution, softmax and attention layers, and a small CSI → pose regressor.

Every kernel here is serial, uses only ``+ - * /``, ``sqrt`` and an arithmetic-only ``exp``, and sums in a
fixed written order, so the same inputs give the same bits on any x86-64 CPU (see :mod:`rfbench.train.proof`).
"""
