"""What the faces (CLI, dashboard, validator, Python API) share to show and keep results:
numbers with units (units.py) and files written atomically, JSON (files.py). The cost model
(model/) does no I/O: it imports only units.py, to word its notes."""
