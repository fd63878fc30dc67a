"""Reading and writing files: Intel 5300 bfee logs, the bfee encoder, atomic archives and JSON."""
