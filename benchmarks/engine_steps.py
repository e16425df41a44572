"""Whole steps against the engines' own kernels: the calibrated price of a step's dense GEMMs,
attention and all-reduces over what the engine's measured tables say the same calls take
(validate/engine_steps.py, aiconfigurator's way of pricing a step), per GPU, engine,
precision, tensor-parallel degree and phase.

    python -m benchmarks.engine_steps [--gpu ID]... [--engine vllm]... [--model ID]... [--show N]
                                      [--held-out [DIR]]

Prints the ratio (ours / tables) of each group's summed GEMM time, its median and range over
the scenarios, the same for attention (also priced as the tables' harness replayed it, its one
cache warm in L2 where it fits), for the decode all-reduces and for the three together (the step
less its norms, activations and embedding); then the N scenarios furthest off.
By default in sample on the measured GPUs: it shows whether fp8 and TP > 1 stay as close to the
engines' kernels as bf16 at TP 1, not how an unmeasured GPU fares. `--held-out` prices each GPU
with the profile of the cross-validation fold that left it out (`rooflens validate cv --folds
DIR`; DIR defaults to the committed folds, validate/results/cv_folds/): its GEMM and attention
terms were fitted on the other GPUs only, as a GPU nobody measured is priced. Its all-reduces
keep the collectives' own fit (hardware/calibration/comm-custom-allreduce.yaml), in sample.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from rooflens.hardware.errors import RooflensError
from rooflens.hardware.profiles import ENGINES, Profile, load_calibration
from rooflens.hardware.step_accuracy import HELD_OUT, IN_SAMPLE, STEP_ACCURACY_FILE
from rooflens.io.files import atomic_write_text
from rooflens.model.predict.api import make_scenario, run
from rooflens.validate.cv import CV_FOLDS_DIR
from rooflens.validate.engine_steps import step_rows, summarize
from rooflens.validate.store import provenance_base

GPUS = ("h100-sxm", "b300", "a100-sxm-80gb", "rtx-pro-6000")
PRECISIONS = {"bf16": {"weight_dtype": "bf16"}, "fp8": {"quant": "w8a8-fp8"},
              "fp8-block": {"quant": "fp8-block"}, "nvfp4": {"quant": "nvfp4"}}  # fmt: skip
MODELS = {"llama-3-8b": (1, 2), "llama-3-70b": (2, 4, 8)}  # model: TP degrees
BATCHES = (1, 8, 64)
PROMPT = 2048


def scenarios(
    gpus: list[str],
    engines: list[str],
    folds: dict[str, Profile] | None = None,
    models: list[str] | None = None,
) -> pd.DataFrame:
    """Every scenario's step sums per phase; `folds`: price each GPU with its fold's profile."""
    out = []
    for gpu in gpus:
        for engine in engines:
            terms = folds[gpu].for_engine(engine) if folds is not None else None
            for precision, fields in PRECISIONS.items():
                for model, tps in MODELS.items():
                    if models and model not in models:
                        continue
                    for tp in tps:
                        for batch in BATCHES:
                            try:
                                sc = make_scenario(model, gpu, batch=batch, prompt_len=PROMPT,
                                                   output_len=128, tp=tp, engine=engine,
                                                   profile="calibrated", **fields)  # fmt: skip
                            except RooflensError:  # a precision this GPU cannot run (nvfp4)
                                continue
                            rows = step_rows(run(sc, profile=terms), profile=terms)
                            for phase, part in rows.groupby("phase"):
                                s = summarize(part)
                                out.append({"gpu": gpu, "engine": engine, "precision": precision,
                                            "scheme": sc.precision.scheme, "model": model,
                                            "tp": tp, "batch": batch, "phase": phase,
                                            **s})  # fmt: skip
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


def load_folds(folder: Path, gpus: list[str]) -> dict[str, Profile]:
    """The fold profile of each GPU (`validate cv --folds`); a one-line error if one is missing."""
    missing = [g for g in gpus if not (folder / f"{g}.yaml").is_file()]
    if missing:
        raise RooflensError(
            f"no fold profile for {', '.join(missing)} in {folder}: run `rooflens validate cv "
            f"--folds {folder}`"
        )
    return {g: load_calibration(folder / f"{g}.yaml") for g in gpus}


def overall(frame: pd.DataFrame) -> str:
    """Whole steps (GEMMs, attention, all-reduces) over every scenario-phase that prices all
    three: median and worst |ours / tables - 1| (issue 23: median <= 10 %, worst <= 25 %)."""
    error = (frame["step"].dropna() - 1.0).abs()
    if error.empty:
        return "whole steps: none priced by every table"
    return (
        f"whole steps over {len(error)} scenario-phases: median |ours / tables - 1| "
        f"{100 * error.median():.1f} %, p90 {100 * error.quantile(0.9):.1f} %, worst "
        f"{100 * error.max():.1f} %; within 25 %: {100 * error.le(0.25).mean():.0f} %"
    )


def accuracy(frame: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per engine, precision scheme and phase: median, p90 and worst |step - 1| and the steps
    (hardware/step_accuracy.py reads it)."""
    out: dict[str, dict[str, Any]] = {}
    steps = frame[frame["step"].notna()]
    for (engine, scheme, phase), g in steps.groupby(["engine", "scheme", "phase"]):
        error = (g["step"] - 1.0).abs()
        out.setdefault(str(engine), {}).setdefault(str(scheme), {})[str(phase)] = {
            "median": round(float(error.median()), 4), "p90": round(float(error.quantile(0.9)), 4),
            "worst": round(float(error.max()), 4), "steps": len(error)}  # fmt: skip
    return out


def write_accuracy(gpus: list[str], engines: list[str], path: Path = STEP_ACCURACY_FILE) -> Path:
    """Run the benchmark in sample and held out and write its summary (STEP_ACCURACY_FILE)."""
    in_sample = scenarios(gpus, engines)
    held_out = scenarios(gpus, engines, load_folds(CV_FOLDS_DIR, gpus))
    data = {
        "source": "python -m benchmarks.engine_steps --write-accuracy: Llama-3-8B (TP 1, 2) and "
        f"70B (TP 2, 4, 8), batch {', '.join(map(str, BATCHES))}, {PROMPT}-token prompts; |ours "
        "/ the engine's measured kernels - 1| over each step's dense GEMMs, attention and "
        "all-reduces",
        **provenance_base(),
        IN_SAMPLE: {str(g): accuracy(part) for g, part in in_sample.groupby("gpu")},
        HELD_OUT: accuracy(held_out),
    }
    header = (
        "# Written by `python -m benchmarks.engine_steps --write-accuracy`; do not edit by hand.\n"
        "# hardware/step_accuracy.py reads it (a prediction's accuracy note).\n"
    )
    return atomic_write_text(path, header + yaml.safe_dump(data, sort_keys=False, width=100))


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
    print(overall(frame))
    ar = frame[frame["all_reduce"].notna()]
    print("\ndecode all-reduces (the engines' own kernel, <= 8 MiB), ours / tables:")
    print(ar.groupby(["gpu", "engine"])["all_reduce"].apply(_spread).unstack().to_string())
    cols = ["gpu", "engine", "precision", "model", "tp", "batch", "phase", "gemm"]
    for name, rows, by in (("GEMM sum", gemm, "gemm"), ("whole step", step, "step")):
        far = rows.assign(off=np.abs(np.log(rows[by]))).nlargest(show, "off")
        shown = cols if by == "gemm" else [*cols, "attention", "all_reduce", "step"]
        print(f"\nthe {show} scenarios furthest off ({name}):")
        print(far[shown].round(3).to_string(index=False))
    print(
        f"\nscenario-phases {len(frame)}, GEMM rows outside every table "
        f"(lm_head wider than the grid, unmeasured precisions): {int(frame['left_out'].sum())}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", action="append", choices=GPUS)
    parser.add_argument("--engine", action="append", choices=ENGINES)
    parser.add_argument("--model", action="append", choices=tuple(MODELS))
    parser.add_argument("--show", type=int, default=8)
    parser.add_argument("--held-out", nargs="?", const=str(CV_FOLDS_DIR), metavar="DIR",
                        help="price each GPU with the profile of the cv fold that left it "
                        f"out (default DIR: {CV_FOLDS_DIR.name}/, `rooflens validate cv "
                        "--folds`)")  # fmt: skip
    parser.add_argument("--write-accuracy", action="store_true",
                        help="run in sample and held out and write hardware/accuracy/steps.yaml, "
                        "which a prediction's accuracy note reads")  # fmt: skip
    args = parser.parse_args(argv)
    gpus = args.gpu or list(GPUS)
    if args.write_accuracy:
        print(f"wrote {write_accuracy(gpus, args.engine or list(ENGINES))}")
        return 0
    try:
        folds = load_folds(Path(args.held_out), gpus) if args.held_out else None
    except RooflensError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if folds is not None:
        print("held out: each GPU priced by the fold that never saw it (terms of "
              + "; ".join(f"{g}: {', '.join(folds[g].provenance.get('gpus', []))}"
                          for g in gpus) + ")\n")  # fmt: skip
    report(scenarios(gpus, args.engine or list(ENGINES), folds, args.model), args.show)
    return 0


if __name__ == "__main__":
    sys.exit(main())
