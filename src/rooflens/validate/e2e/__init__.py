"""`rooflens validate e2e`: run a whole decoder on this machine's GPU (or CPU) and check the
predicted TTFT, TPOT and every operator's time against what it measures.

- decoder.py: a plain-torch decoder built from a ModelSpec, static KV cache;
- scopes.py: the operator scopes its forward runs under (profiler or thread clock);
- backend.py: the kernels its operators call (torch, or kernels/ with `--impl triton`);
- measure.py: timing (CUDA events, or the CPU thread clock), CUDA graphs, attribution;
- predict.py: the prediction for the same run (model/predict/api.py plus model/pricing/host.py),
memory check;
- run.py: one scenario end to end, rows for the table, JSON and CSV; cli.py: the command.
"""
