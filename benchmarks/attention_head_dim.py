"""Long prefill attention by head dimension: what the engines' best kernels reach, and what the
calibrated profile prices (the softmax term, model/pricing/softmax.py; docs/validation.md,
"Prefill attention's softmax").

    python -m benchmarks.attention_head_dim [--min-tokens 4096] [--min-heads 1]

For each measured GPU with 16-bit prefill attention, over the per-shape fastest implementation
(validate/frontier.py) at `--min-tokens` or more, no sliding window and at least `--min-heads`
query heads: per head_dim, the rows, the median fraction of the bf16 tensor peak the kernel
reaches (causal FLOPs / time / datasheet peak), and the median error of the GPU's calibrated
terms (pooled over engines, as the frontier was fitted). A roofline of FLOPs alone prices every
head_dim at one fraction; the softmax's exponentials do not shrink with the head dimension.
"""

from __future__ import annotations

import argparse

from rooflens.validate.compare import prefill_by_head_dim
from rooflens.validate.datasets import load_kernels
from rooflens.validate.measured_files import DEFAULT_ROOT


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--min-tokens", type=int, default=4096)
    p.add_argument("--min-heads", type=int, default=1)
    args = p.parse_args()
    frame = prefill_by_head_dim(load_kernels(DEFAULT_ROOT), args.min_tokens, args.min_heads)
    print(f"16-bit prefill attention, >= {args.min_tokens} tokens, no window, >= "
          f"{args.min_heads} heads: best kernel per shape")  # fmt: skip
    for r in frame.to_dict("records"):
        print(
            f"{r['gpu']:<14} head_dim {r['head_dim']:>3}  {r['rows']:>5} rows  "
            f"{r['peak_fraction']:.2f} of the bf16 peak  calibrated {r['calibrated_error']:+.1%}"
        )


if __name__ == "__main__":
    main()
