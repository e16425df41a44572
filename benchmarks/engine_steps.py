"""Whole steps against the engines' own kernels: the calibrated price of a step's dense GEMMs,
attention and all-reduces over what the engine's measured tables say the same calls take
(validate/engine_steps.py, aiconfigurator's way of pricing a step), per GPU, engine,
precision, tensor-parallel degree and phase.

    python -m benchmarks.engine_steps [--gpu ID]... [--engine vllm]... [--show N]

Prints the ratio (ours / tables) of each group's summed GEMM time, its median and range over
the scenarios, the same for attention (also priced as the tables' harness replayed it, its one
cache warm in L2 where it fits), for the decode all-reduces and for the three together (the step
less its norms, activations and embedding); then the N scenarios furthest off.
In sample on the measured GPUs: it shows whether fp8 and TP > 1 stay as close to the engines'
kernels as bf16 at TP 1, not how an unmeasured GPU fares (`rooflens validate cv`).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd

from rooflens.hardware.errors import RooflensError
from rooflens.hardware.profiles import ENGINES
from rooflens.model.predict.api import make_scenario, run
from rooflens.validate.engine_steps import step_rows, summarize

GPUS = ("h100-sxm", "b300", "a100-sxm-80gb", "rtx-pro-6000")
PRECISIONS = {"bf16": {"weight_dtype": "bf16"}, "fp8": {"quant": "w8a8-fp8"},
              "fp8-block": {"quant": "fp8-block"}, "nvfp4": {"quant": "nvfp4"}}  # fmt: skip
MODELS = {"llama-3-8b": (1, 2), "llama-3-70b": (2, 4, 8)}  # model: TP degrees
BATCHES = (1, 8, 64)
PROMPT = 2048


def scenarios(gpus: list[str], engines: list[str]) -> pd.DataFrame:
    out = []
    for gpu in gpus:
        for engine in engines:
            for precision, fields in PRECISIONS.items():
                for model, tps in MODELS.items():
                    for tp in tps:
                        for batch in BATCHES:
                            try:
                                sc = make_scenario(model, gpu, batch=batch, prompt_len=PROMPT,
                                                   output_len=128, tp=tp, engine=engine,
                                                   profile="calibrated", **fields)  # fmt: skip
                            except RooflensError:  # a precision this GPU cannot run (nvfp4)
                                continue
                            rows = step_rows(run(sc))
                            for phase, part in rows.groupby("phase"):
                                s = summarize(part)
                                out.append({"gpu": gpu, "engine": engine, "precision": precision,
                                            "model": model, "tp": tp, "batch": batch,
                                            "phase": phase, **s})  # fmt: skip
    frame = pd.DataFrame(out)
    for kind in ("gemm", "attention", "all_reduce"):
        frame[kind] = frame[f"{kind}_ours_s"] / frame[f"{kind}_tables_s"]
        frame[f"{kind}_warm"] = frame[f"{kind}_warm_s"] / frame[f"{kind}_tables_s"]
    kinds = ("gemm", "attention", "all_reduce")
    ours = sum(frame[f"{k}_ours_s"] for k in kinds)
    frame["step"] = ours / sum(frame[f"{k}_tables_s"] for k in kinds)
    return frame.replace([np.inf], np.nan)


def _spread(x: pd.Series) -> str:
    x = x.dropna()
    if x.empty:
        return "—"
    return f"{x.median():.2f} ({x.min():.2f}-{x.max():.2f}, n={len(x)})"


def report(frame: pd.DataFrame, show: int) -> None:
    frame = frame.assign(tp_class=np.where(frame["tp"].gt(1), "TP>1", "TP 1"))
    print("ours / engine tables, summed over a step's dense GEMMs: median (range, scenarios)")
    gemm = frame[frame["gemm"].notna()]
    table = gemm.groupby(["precision", "tp_class", "phase"])["gemm"].apply(_spread).unstack()
    print(table.to_string())
    print("\nper GPU and precision (every TP, both phases):")
    print(gemm.groupby(["gpu", "precision"])["gemm"].apply(_spread).unstack().to_string())
    attention = frame[frame["attention"].notna()]
    print("\nattention (the engine's most-measured kernel), per GPU and engine:")
    print(attention.groupby(["gpu", "engine", "phase"])["attention"].apply(_spread)
          .unstack().to_string())  # fmt: skip
    print(
        "\nthe same calls priced as the tables' harness ran them (one cache, replayed: warm "
        "in L2 where it fits; a deployment's step reads it cold, above):"
    )
    print(attention.groupby(["gpu", "engine", "phase"])["attention_warm"].apply(_spread)
          .unstack().to_string())  # fmt: skip
    step = frame[frame["step"].notna()]
    print("\nGEMMs, attention and all-reduces together, per precision and TP:")
    print(step.groupby(["precision", "tp_class", "phase"])["step"].apply(_spread)
          .unstack().to_string())  # fmt: skip
    ar = frame[frame["all_reduce"].notna()]
    print("\ndecode all-reduces (the engines' own kernel, <= 8 MiB), ours / tables:")
    print(ar.groupby(["gpu", "engine"])["all_reduce"].apply(_spread).unstack().to_string())
    far = gemm.assign(off=np.abs(np.log(gemm["gemm"]))).nlargest(show, "off")
    cols = ["gpu", "engine", "precision", "model", "tp", "batch", "phase", "gemm"]
    print(f"\nthe {show} scenarios furthest off (GEMM sum):")
    print(far[cols].round(3).to_string(index=False))
    print(
        f"\nscenario-phases {len(frame)}, GEMM rows outside every table "
        f"(lm_head wider than the grid, unmeasured precisions): {int(frame['left_out'].sum())}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", action="append", choices=GPUS)
    parser.add_argument("--engine", action="append", choices=ENGINES)
    parser.add_argument("--show", type=int, default=8)
    args = parser.parse_args(argv)
    report(scenarios(args.gpu or list(GPUS), args.engine or list(ENGINES)), args.show)
    return 0


if __name__ == "__main__":
    sys.exit(main())
