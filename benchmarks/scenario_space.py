"""Issue 23's check of the realistic scenario space: a fixed random sample of scenarios (models
from Llama to DeepSeek-V3, GPUs from A10 to B200, TP 1–8, batch 1–512, prompt 128–16k, native,
bf16, W8A8 fp8, W4A16, W8A16, common optimizations), each checked by
rooflens.validate.scenario_space.check. Prints the counts of crashes, broken physics, operators
priced by `calibrated` at more than 20× their ideal time (and those whose grid's waves, as the
engines' attention tables measure them, explain it), and quantized decode slower than bf16
at batch ≤ 16 under `calibrated`, with and without a measured table named for it
(model/analysis/quant_vs_bf16.py), then the first few of each. `--space wide` draws the
property test's whole space instead (every preset model and GPU, TP/PP/EP, batch 1–1024,
prompt 1–128k; validate/scenario_draws.py), where draws the schema refuses are counted apart.

    PYTHONPATH=src python benchmarks/scenario_space.py [--n 400] [--seed 23] [--space wide]
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter

from rooflens.validate.scenario_draws import realistic, valid, wide
from rooflens.validate.scenario_space import check


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=400, help="scenarios drawn (default 400)")
    parser.add_argument("--seed", type=int, default=23, help="random seed (default 23)")
    parser.add_argument("--show", type=int, default=8, help="examples printed per kind")
    parser.add_argument(
        "--space",
        choices=("realistic", "wide"),
        default="realistic",
        help="issue 23's realistic sample, or the property test's whole space",
    )
    args = parser.parse_args()
    rng = random.Random(args.seed)
    draw = realistic if args.space == "realistic" else wide
    start = time.perf_counter()
    draws = [draw(rng) for _ in range(args.n)]
    scenarios = [s for s in draws if args.space == "realistic" or valid(s)]
    reports = [check(s) for s in scenarios]
    elapsed = time.perf_counter() - start
    counts = Counter()
    for r in reports:
        counts["refused (one-line error)"] += bool(r.refused)
        counts["does not fit (exit 3)"] += not r.fits and not r.refused
        for kind in ("crash", "physics", "physics_measured", "ratio", "ratio_measured"):
            counts[kind] += bool(getattr(r, kind))
        counts["quant"] += any(q.startswith("calibrated") for q in r.quant)
        counts["quant_named"] += any(q.startswith("calibrated") for q in r.quant_named)
    left_out = args.n - len(scenarios)
    invalid = f", {left_out} draws the schema refuses left out" if draw is wide else ""
    print(f"{len(scenarios)} {args.space} scenarios (seed {args.seed}{invalid}) in {elapsed:.1f} s")
    print(f"  crashes:                               {counts['crash']}")
    print(f"  broken physics:                        {counts['physics']}")
    print(f"  faster at 2× batch, as kernels run it: {counts['physics_measured']}")
    print(f"  op > 20× ideal and > 10 % of its step: {counts['ratio']}")
    print(f"  the same, as measured kernels run it:  {counts['ratio_measured']}")
    # calibrated quantized decode (int4/int8 weight-only, SmoothQuant, fp8, block fp8) vs bf16
    print(f"  quantized decode > bf16, no table:     {counts['quant']}")
    print(f"  quantized decode > bf16, table named:  {counts['quant_named']}")
    # every sampled scenario is valid: a refusal (exit 2) is a failure too
    print(f"  refused (exit 2 on a valid scenario):  {counts['refused (one-line error)']}")
    print(f"  does not fit (exit 3):                 {counts['does not fit (exit 3)']}")
    kinds = (
        "crash",
        "physics",
        "physics_measured",
        "ratio",
        "ratio_measured",
        "quant",
        "quant_named",
        "refused",
    )
    for kind in kinds:
        shown = [r for r in reports if getattr(r, kind)][: args.show]
        for r in shown:
            s = {k: v for k, v in r.scenario.items() if v not in ((), None)}
            print(f"[{kind}] {s}: {getattr(r, kind)}")


if __name__ == "__main__":
    main()
