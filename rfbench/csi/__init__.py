"""CSI arithmetic: absolute scaling (total RSS, scaled CSI), subcarrier interpolation, windows."""
