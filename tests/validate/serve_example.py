"""Builds the example benchmark files in tests/validate/serve_data/ from rooflens's OWN
simulation (not measurements): Llama-3-8B on one H100 SXM, chunked prefill, with a known
4 ms host overhead per step and a batch cap of 32, so that `validate serve --fit` has a
ground truth to recover. Run `python tests/validate/serve_example.py` to rebuild them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rooflens.model.planner.serving_profile import with_step_overhead
from rooflens.validate.serve_fit import Deployment, deployment_curves, simulated_result

HERE = Path(__file__).parent / "serve_data"
TRUE_OVERHEAD_S = 0.004
TRUE_CAP = 32
DEPLOYMENT = Deployment("llama-3-8b", "h100-sxm")


def lengths(n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    inputs = np.clip(np.round(rng.lognormal(np.log(400), 0.6, n)), 16, 4000)
    outputs = np.clip(np.round(rng.lognormal(np.log(60), 0.5, n)), 2, 400)
    return inputs, outputs


def build(engine: str, n: int, request_rate: float | None, concurrency: int | None) -> dict:
    inputs, outputs = lengths(n)
    c = with_step_overhead(deployment_curves(DEPLOYMENT, inputs, outputs), TRUE_OVERHEAD_S)
    return simulated_result(c, inputs, outputs, mode="chunked", cap=TRUE_CAP, chunk_tokens=2048,
                            request_rate=request_rate, max_concurrency=concurrency,
                            engine=engine)  # fmt: skip


if __name__ == "__main__":
    HERE.mkdir(exist_ok=True)
    vllm = build("vllm", 150, 12.0, None)
    (HERE / "vllm_simulated.json").write_text(json.dumps(vllm) + "\n")
    sglang = build("sglang", 80, None, 48)
    (HERE / "sglang_simulated.jsonl").write_text(json.dumps(sglang) + "\n")
