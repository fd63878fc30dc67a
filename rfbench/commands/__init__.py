"""One module per ``rfbench`` command. Each imports only typer and the standard library at import time."""
