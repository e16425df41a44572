"""The routing of the shared MoE benchmark, so its fused-MoE times are priced with the work the
measured GPU really did (the `assignments` and `experts_read` columns of the kernel contract's
`moe` op, model/pricing/kernel_table.py).

The aiconfigurator MoE collector (vLLM fused_moe, A100; its `_generate_power_law_distribution`)
routes no token uniformly. Per call it draws a token count for each of the E experts from a
power law p(x) ∝ x^(−α) on [1, 0.8·N] (on [0.01, 2] when N·k ≤ E) by inverse-CDF sampling,
scales the counts to sum to N·k, rounds them (half to even), adds or removes the rounding
remainder one token at a time on the largest (adding) or smallest (removing) experts, and under
expert parallelism swaps the expert group with the most tokens into rank 0's slot, the GPU that
runs the kernel. Each token then picks its experts once (top-k of its one-hot logits), so no
expert serves more than N tokens. The `distribution` column names α (`power_law_1.01`,
`power_law_1.2`); the table has no uniform rows.

Consequences the uniform formula of model/ops/moe.py misses: skewed counts leave more experts
untouched at small N·k/E (fewer weight bytes: up to 18 % below the uniform roofline on the A100
rows), and under EP the measured GPU holds the heaviest group, not the mean one (at ep = 8 it
computes ~1.5-4x its balanced share). This module reproduces the generator in numpy (its
expectation over `DRAWS` seeded draws; the benchmark averages 5) and returns both quantities.
Removing a remainder from an expert already at zero takes it from the largest expert instead,
as the collector does. Counts beyond N are duplicate picks that top-k re-routes to experts the
token had not chosen; they are spread evenly over the expert groups, each landing on an
expert not otherwise touched (an upper bound on the experts read).
"""

from __future__ import annotations

from typing import cast

import numpy as np
import pandas as pd

DRAWS = 16
SEED = 0


def _power_law(rng: np.random.Generator, shape: tuple[int, int], alpha: np.ndarray,
               lo: np.ndarray, hi: np.ndarray) -> np.ndarray:  # fmt: skip
    """Inverse-CDF samples of p(x) ∝ x^(−α) on [lo, hi] (the collector's sample_power_law);
    alpha, lo and hi are per row."""
    u = rng.random(shape)
    e = (1.0 - alpha)[:, None]
    lo, hi = lo[:, None], hi[:, None]
    return ((hi**e - lo**e) * u + lo**e) ** (1.0 / e)


def _fix_remainder(counts: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """Per row (draw): add `delta` > 0 tokens to the largest experts or remove −delta from the
    smallest, one token each in turn, as the collector's adjustment loop does; removals that
    hit an empty expert come off the largest one instead."""
    n = counts.shape[1]
    d = delta[:, None]
    descending = np.argsort(np.argsort(-counts, axis=1, kind="stable"), axis=1)
    ascending = n - 1 - descending
    add = np.where(d > 0, d // n + (descending < d % n), 0)
    targeted = (d < 0) & (ascending < np.minimum(-d, n))
    take = targeted & (counts > 0)
    out = counts + add - take
    from_max = np.maximum(-delta, 0) - take.sum(axis=1)  # the rest comes off the largest
    out[np.arange(len(out)), np.argmax(out, axis=1)] -= from_max
    return out


def power_law_work(
    tokens: np.ndarray, n_experts: int, topk: np.ndarray | int, ep: int, alpha: np.ndarray | float
) -> tuple[np.ndarray, np.ndarray]:
    """Expected (assignments, distinct experts) on the measured GPU (rank 0 after the swap),
    per configuration (tokens; topk and alpha broadcast) of one expert count and EP size."""
    rng = np.random.default_rng(SEED)
    tokens = np.asarray(tokens, np.int64)
    E, C = n_experts, len(tokens)
    topk, alpha = (np.broadcast_to(np.asarray(v), tokens.shape) for v in (topk, alpha))
    N = np.repeat(tokens, DRAWS)  # one row per (configuration, draw)
    k = np.repeat(np.asarray(topk, np.int64), DRAWS)
    many = N * k > E
    lo, hi = np.where(many, 1.0, 0.01), np.where(many, 0.8 * N, 2.0)
    samples = _power_law(rng, (C * DRAWS, E), np.repeat(alpha.astype(float), DRAWS), lo, hi)
    target = N * k
    counts = np.round(samples / samples.sum(axis=1, keepdims=True) * target[:, None])
    counts = _fix_remainder(counts.astype(np.int64), target - counts.sum(axis=1).astype(np.int64))
    groups = counts.reshape(C * DRAWS, ep, E // ep)  # the swap: the heaviest group is rank 0's
    heaviest = np.argmax(groups.sum(axis=2), axis=1)
    local = groups[np.arange(C * DRAWS), heaviest]  # [C·DRAWS, E/ep]
    # A token picks an expert once: counts beyond N are duplicate picks, re-routed by top-k to
    # experts the token had not picked, spread over the groups (one new expert each).
    spill = np.maximum(counts - N[:, None], 0).sum(axis=1) / ep
    assignments = np.minimum(local, N[:, None]).sum(axis=1) + spill
    read = np.minimum(E // ep, np.count_nonzero(local, axis=1) + spill)
    return assignments.reshape(C, DRAWS).mean(axis=1), read.reshape(C, DRAWS).mean(axis=1)


def with_routing(table: pd.DataFrame) -> pd.DataFrame:
    """`table` plus `assignments` and `experts_read` for its power-law `moe` rows (NaN for
    other rows, which the cost model prices with uniform routing)."""
    out = table.copy()
    out["assignments"], out["experts_read"] = np.nan, np.nan
    if "distribution" not in out.columns:
        return out
    rows = out["op"].eq("moe") & out["distribution"].astype(str).str.startswith("power_law_")
    keys = ["num_tokens", "num_experts", "topk", "moe_ep_size", "distribution"]
    configs = out.loc[rows, keys].drop_duplicates().reset_index(drop=True)
    configs["alpha"] = configs["distribution"].astype(str).str.removeprefix("power_law_")
    parts = []
    for group, g in configs.groupby(["num_experts", "moe_ep_size"], sort=False):
        E, ep = (int(v) for v in cast(tuple[float, float], group))  # the two keys' values
        work = power_law_work(g["num_tokens"].to_numpy(), E, g["topk"].to_numpy(), ep,
                              g["alpha"].astype(float).to_numpy())  # fmt: skip
        parts.append(g.assign(assignments=work[0], experts_read=work[1]))
    if not parts:
        return out
    routed = pd.concat(parts)[[*keys, "assignments", "experts_read"]]
    merged = out.loc[rows, keys].merge(routed, on=keys, how="left")
    out.loc[rows, "assignments"] = merged["assignments"].to_numpy()
    out.loc[rows, "experts_read"] = merged["experts_read"].to_numpy()
    return out
