"""The architecture-generation rule: which measured GPUs a GPU's calibration learns from.

A GPU's `calibrated` profile is its datasheet (peaks, bandwidth, SM count, L2) priced with
dimensionless fractions and latencies fitted on measured GPUs. Those terms depend on what the
kernels can do on the silicon, which changes by generation (Hopper's TMA and warpgroup MMA,
Ampere's and Ada's mma.sync), so a GPU learns them from the measured GPUs of its own
generation, else from the nearest one in `NEAREST` (an explicit order, not a distance between
compute capabilities: Ada's SM 8.9 is an Ampere-class SM with FP8 added, so Ada falls back to
Ampere first; Blackwell keeps Hopper's asynchronous tensor-core pipeline and falls back to
Hopper). Kinds the reference generation has no rows for come from the fit pooled over every
measured GPU (`generic.yaml`). Non-NVIDIA parts take the pooled fit. The rule `calibrated`
uses is the narrower 'sibling' one (`sibling_gpus`: the measured GPU of the same SM design,
else the pooled fit; hardware/profiles.py calibration_file). docs/validation.md states
the rule and the cross-validation (validate/cv.py) that decides where it is used: today the
pooled fit (`generic.yaml`) wins it, so the rule is opt-in (`rooflens calibrate fit --rule
generation` writes `generation_profiles` as files for the unmeasured presets).
"""

from __future__ import annotations

import pandas as pd

from rooflens.hardware.presets import get_gpu, gpu_ids
from rooflens.hardware.profiles import Profile, sibling_of
from rooflens.hardware.spec import GPUSpec
from rooflens.validate.fit_terms import FIT_EVALS
from rooflens.validate.profile_fit import fit_profile

# architecture -> the architectures to learn from, nearest first (its own included)
NEAREST: dict[str, tuple[str, ...]] = {
    "volta": ("volta", "ampere", "ada", "hopper", "blackwell"),
    "ampere": ("ampere", "ada", "hopper", "volta", "blackwell"),
    "ada": ("ada", "ampere", "hopper", "blackwell", "volta"),
    "hopper": ("hopper", "blackwell", "ada", "ampere", "volta"),
    "blackwell": ("blackwell", "hopper", "ada", "ampere", "volta"),
}


def reference_gpus(gpu: GPUSpec, measured: list[str]) -> list[str]:
    """The measured GPUs (preset ids) of the generation nearest `gpu`'s; [] for a part outside
    the NVIDIA order (it learns from all of them, pooled)."""
    arch = {g: get_gpu(g).architecture for g in measured}
    for candidate in NEAREST.get(gpu.architecture, ()):
        same = sorted(g for g, a in arch.items() if a == candidate)
        if same:
            return same
    return []


def sibling_gpus(gpu: GPUSpec, measured: list[str]) -> list[str]:
    """The measured GPU of `gpu`'s SM design, the first in preset order, as a list ([] if
    none): the one whose file `calibrated` prices it with (hardware/profiles.py
    calibration_file)."""
    sibling = sibling_of(gpu, tuple(measured))
    return [sibling] if sibling is not None else []


def profile_for(
    gpu: GPUSpec,
    train: pd.DataFrame,
    pooled: Profile,
    rule: str = "generation",
    max_evals: int = FIT_EVALS,
) -> tuple[Profile, list[str]]:
    """The calibrated profile a GPU without its own measurements gets from `train`, and the
    GPUs it learned from. `pooled`: the fit over all of `train` (`rule='pooled'` returns it;
    `'sibling'` returns it where no GPU of `train` has `gpu`'s SM design)."""
    measured = sorted(train["gpu"].astype(str).unique())
    reference = {"generation": reference_gpus, "sibling": sibling_gpus}.get(
        rule, lambda _gpu, _measured: []
    )(gpu, measured)
    if not reference or reference == measured:
        return pooled, measured
    rows = train[train["gpu"].isin(reference)]
    return fit_profile(rows, None, inherit=pooled, max_evals=max_evals), reference


def generation_profiles(
    table: pd.DataFrame, pooled: Profile, max_evals: int = FIT_EVALS
) -> dict[str, Profile]:
    """Preset id -> the generation rule's profile, for every GPU preset without measurements in
    `table` whose nearest measured generation is not all of them (where the rule and the pooled
    fit differ). One fit per distinct set of reference GPUs."""
    measured = sorted(table["gpu"].astype(str).unique())
    fits: dict[tuple[str, ...], Profile] = {}
    out = {}
    for gpu_id in gpu_ids():
        if gpu_id in measured:
            continue
        gpu = get_gpu(gpu_id)
        reference = tuple(reference_gpus(gpu, measured))
        if not reference or list(reference) == measured:
            continue
        if reference not in fits:
            fits[reference], _ = profile_for(gpu, table, pooled, "generation", max_evals)
        fit = fits[reference]
        source = (f"generation rule ({gpu.architecture} -> {', '.join(reference)}), "
                  f"validate/generation.py; {fit.source}")  # fmt: skip
        out[gpu_id] = fit.model_copy(update={"source": source})
    return out
