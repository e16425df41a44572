"""Which models `validate e2e` builds, and which layers a run of N of them takes.

`unsupported_reason` is the one place that says what the e2e decoder cannot build (MLA, ALiBi,
Mamba mixers, periodic MoE layouts, activations it does not know), as the one-line message the
CLI refuses with (exit 2) and the tests skip with. `with_layers` is the spec a `--layers N` run
builds: the first N layers, except that a model whose layers differ in kind (gpt-oss alternates
sliding-window and full attention, Gemma 3 has 5 sliding per full) keeps its mix in proportion,
each kind at least once when N allows, so per-layer time scaled by L / N stands for the whole
depth. No torch here: the CLI checks before importing it.
"""

from __future__ import annotations

import math

from rooflens.hardware.errors import RooflensError
from rooflens.model.specs.spec import ModelSpec

ACTIVATION_NAMES = ("silu", "gelu", "relu")  # what blocks.py's ACTIVATIONS implement


def unsupported_reason(spec: ModelSpec) -> str | None:
    """Why the e2e decoder cannot build `spec` (one line), or None when it can."""
    if spec.attention == "mla":
        return (
            f"{spec.id} uses MLA attention, which `validate e2e` does not build yet: pick a "
            "MHA/GQA/MQA model"
        )
    if spec.n_mamba_layers:
        return (
            f"{spec.id} has {spec.n_mamba_layers} Mamba layers, which `validate e2e` does not "
            "build yet: pick an attention-only model"
        )
    if spec.positional == "alibi":
        return f"{spec.id} uses ALiBi positions, which `validate e2e` does not build"
    if spec.is_moe and (spec.expert_layer_period > 1 or spec.expert_layer_offset):
        return (
            f"{spec.id} has experts on every n-th layer only, which `validate e2e` does not build"
        )
    if spec.activation not in ACTIVATION_NAMES:
        known = ", ".join(ACTIVATION_NAMES)
        return f"{spec.id}'s activation '{spec.activation}' is not one of {known}"
    return None


def check_supported(spec: ModelSpec) -> None:
    """A one-line RooflensError for what the e2e decoder does not build."""
    reason = unsupported_reason(spec)
    if reason:
        raise RooflensError(reason)


def layer_kinds(spec: ModelSpec, n_layers: int) -> tuple[str, ...]:
    """The layer types of an N-layer run (`with_layers`), () for a model of one kind."""
    if not spec.layer_types or n_layers == spec.n_layers:
        return spec.layer_types
    counts: dict[str, int] = {}
    for kind in spec.layer_types:
        counts[kind] = counts.get(kind, 0) + 1
    share = {k: n_layers * c / spec.n_layers for k, c in counts.items()}
    floor = 1 if n_layers >= len(counts) else 0
    quota = {k: max(floor, math.floor(s)) for k, s in share.items()}
    while sum(quota.values()) > n_layers:  # the most over-served kind gives one back
        k = max((k for k in quota if quota[k] > floor), key=lambda k: quota[k] - share[k])
        quota[k] -= 1
    while sum(quota.values()) < n_layers:  # the most under-served kind takes one more
        k = max(quota, key=lambda k: share[k] - quota[k])
        quota[k] += 1
    kinds = []
    for kind in spec.layer_types:  # in the model's order, as often as its quota says
        if quota[kind]:
            kinds.append(kind)
            quota[kind] -= 1
    return tuple(kinds)


def with_layers(spec: ModelSpec, n_layers: int) -> ModelSpec:
    """`spec` at depth N (1 ≤ N ≤ L): layer kinds in proportion, MoE's leading dense layers
    capped at N − 1."""
    if not 1 <= n_layers <= spec.n_layers:
        raise RooflensError(f"--layers must be in 1..{spec.n_layers} ({spec.id}), got {n_layers}")
    if n_layers == spec.n_layers:
        return spec
    update = {
        "n_layers": n_layers,
        "layer_types": layer_kinds(spec, n_layers),
        "first_dense_layers": min(spec.first_dense_layers, n_layers - 1),
    }
    return type(spec).model_validate({**spec.model_dump(), **update})
