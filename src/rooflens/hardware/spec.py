"""GPU and system specifications: what the datasheet promises, each number with its source.

Conventions (DESIGN.md): SI units inside, the unit in the field name. Link bandwidths are
**unidirectional, per GPU** (bytes/s one way), because a ring collective moves data in one
direction per link at a time; vendors often quote the bidirectional sum (H100 NVLink "900 GB/s"
is 450 GB/s each way), and each preset's `sources` entry records which figure it started from.
Peak FLOP/s are **dense** (no 2:4 sparsity); `sparsity_2_4_multiplier` gives the structured-sparse
speed-up where the tensor cores have it (2.0 on Ampere and later NVIDIA parts, 1.0 otherwise).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Self, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from rooflens.hardware.errors import RooflensError, validation_message

# "fp4" is the e2m1 tensor-core unit (Blackwell) that NVFP4 and MXFP4 operands run on.
ComputeDtype = Literal["fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4", "fp4"]
COMPUTE_DTYPES: tuple[str, ...] = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4", "fp4")


_NUMBERS = (int, float, int | None, float | None)


class Spec(BaseModel):
    """The base of every spec (GPU, link, system, model, scenario, workload): frozen, no
    unknown fields, every float finite, no true/false standing in for a number, and a
    `model_copy(update=...)` that validates what it builds (pydantic's own would let
    `batch=-5` or `n_experts=0` through). `checked=False` is for a derived spec that must
    escape its own rules on purpose (a pruned model); say why where it is used. A copy that
    breaks a rule raises a one-line RooflensError."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, bool) and info.field_name is not None:
            if cls.model_fields[info.field_name].annotation in _NUMBERS:
                raise ValueError("expects a number, not true/false")
        return value

    def model_copy(
        self, *, update: Mapping[str, Any] | None = None, deep: bool = False, checked: bool = True
    ) -> Self:
        new = super().model_copy(update=update, deep=deep)
        if update and checked:
            # every field already holds its new value, so the whole-spec checks see the final
            # state; fields left alone (a nested spec) are not validated again
            try:
                for name, value in update.items():
                    self.__pydantic_validator__.validate_assignment(new, name, value)
            except ValidationError as exc:
                what = f"{type(self).__name__} ({', '.join(update)} changed)"
                raise RooflensError(validation_message(exc, what)) from None
        return new


# Sizes (bytes) and rates (bytes/s, FLOP/s) of any real part lie far inside this range; outside
# it a number is a typing slip, and times computed from it overflow (issue 27: HBM 1e-300).
PHYSICAL = (1e3, 1e18)
# Exponentials (MUFU.EX2) an NVIDIA SM issues per clock, compute capability 7.0-10.0 and 12.0:
# the CUDA C++ Programming Guide's throughput table (special functions: 16 results per clock per
# SM); FlashAttention-3 (Shah et al. 2024, §3.1) quotes the H100 SXM5 at 3.9 TFLOP/s of them.
# Blackwell Ultra doubles it (GPUSpec.exp_per_sm_cycle in its presets). Other vendors' parts
# (sm_count = their compute units) take it too, unverified: no table measures their attention.
EXP_PER_SM_CYCLE = 16.0
CLOCK_FALLBACK_HZ = 1.5e9  # the SM clock pricing assumes where a GPU states none (custom specs)


class GPUSpec(Spec):
    """One accelerator as its datasheet describes it. Every number carries a source."""

    id: str = Field(min_length=1, description="preset id, lowercase with dashes, e.g. 'h100-sxm'")
    name: str = Field(min_length=1, description="marketing name, e.g. 'NVIDIA H100 SXM5 80GB'")
    vendor: Literal["nvidia", "amd", "intel", "cpu", "other"] = "nvidia"
    architecture: str = Field(description="e.g. 'ampere', 'hopper', 'cdna3'")
    memory_bytes: float = Field(gt=0, description="device memory capacity, bytes")
    hbm_bytes_per_s: float = Field(gt=0, description="peak device-memory bandwidth, bytes/s")
    peak_flops_per_s: dict[ComputeDtype, float] = Field(
        description="dense peak FLOP/s (or OP/s for int) per compute dtype, for dtypes the part has"
    )
    kernel_peak_flops_per_s: dict[ComputeDtype, float] = Field(
        default_factory=dict,
        description="dense peak FLOP/s the engines' shipped kernels reach on a unit, where below "
        "the datasheet's: a rate only kernels built for this exact SM issue (Blackwell Ultra's "
        "FP4, SM103-only MMA) while engines ship the SM family's kernels; `calibrated` prices "
        "with it, `ideal` with the datasheet",
    )
    sparsity_2_4_multiplier: float = Field(
        ge=1.0,
        le=2.0,
        description="speed-up of 2:4 structured sparsity on tensor cores (1 = none)",
    )
    l2_bytes: float = Field(gt=0, description="last-level on-chip cache, bytes")
    sm_count: int = Field(gt=0, description="streaming multiprocessors (compute units on AMD)")
    boost_clock_hz: float | None = Field(
        default=None, gt=0, description="SM boost clock, Hz (None = unknown): sets SM throughput"
    )
    compute_capability: str | None = Field(
        default=None,
        pattern=r"^\d+\.\d+$",
        description="CUDA compute capability, e.g. '9.0' (None: not an NVIDIA part, or "
        "unknown): GPUs with the same SM design run the same kernels, so they share fitted "
        "terms (hardware/profiles.py calibration_path)",
    )
    max_threads_per_sm: int | None = Field(
        default=None,
        gt=0,
        description="resident threads an SM holds at full occupancy (None = unknown): sets how "
        "many loads an eager kernel keeps in flight",
    )
    exp_per_sm_cycle: float | None = Field(
        default=None,
        gt=0,
        description="exponentials (MUFU.EX2) one SM issues per clock (None: EXP_PER_SM_CYCLE); "
        "sets what an attention kernel's softmax costs (model/pricing/softmax.py)",
    )
    smem_per_sm_bytes: float = Field(
        gt=0,
        description="shared memory (SRAM) usable per SM, bytes; sets FlashAttention tile size",
    )
    nvlink_bytes_per_s: float = Field(
        ge=0,
        description="GPU-to-GPU link bandwidth per GPU, one direction, bytes/s (0 = none)",
    )
    pcie_bytes_per_s: float = Field(gt=0, description="host link bandwidth, one direction, bytes/s")
    tdp_watts: float | None = Field(
        default=None, gt=0, description="board power limit (TDP/TBP), W: the top of the power model"
    )
    idle_watts: float | None = Field(
        default=None,
        gt=0,
        description="board power with a CUDA context and no work, W (None = "
        "model/analysis/energy.py's documented fraction of TDP)",
    )
    sources: dict[str, str] = Field(description="field name -> where the number comes from")

    @model_validator(mode="after")
    def _check(self) -> GPUSpec:
        if not self.peak_flops_per_s:
            raise ValueError("peak_flops_per_s needs at least one dtype")
        for dtype, flops in self.peak_flops_per_s.items():
            if not flops > 0:
                raise ValueError(f"peak_flops_per_s[{dtype}] must be > 0, got {flops}")
        numeric = [
            "memory_bytes",
            "hbm_bytes_per_s",
            "peak_flops_per_s",
            "sparsity_2_4_multiplier",
            "l2_bytes",
            "sm_count",
            "smem_per_sm_bytes",
            "nvlink_bytes_per_s",
            "pcie_bytes_per_s",
        ] + [
            f
            for f in (
                "tdp_watts",
                "idle_watts",
                "boost_clock_hz",
                "max_threads_per_sm",
                "exp_per_sm_cycle",
            )
            if getattr(self, f) is not None
        ]
        for name in ("memory_bytes", "hbm_bytes_per_s", "l2_bytes", "smem_per_sm_bytes",
                     "pcie_bytes_per_s", "nvlink_bytes_per_s"):  # fmt: skip
            value = getattr(self, name)
            if value and not PHYSICAL[0] <= value <= PHYSICAL[1]:
                raise ValueError(f"{name} must be in [{PHYSICAL[0]:.0e}, {PHYSICAL[1]:.0e}] "
                                 f"(bytes or bytes/s), got {value:.3g}")  # fmt: skip
        for dtype, flops in self.peak_flops_per_s.items():
            if not PHYSICAL[0] <= flops <= PHYSICAL[1]:
                raise ValueError(f"peak_flops_per_s[{dtype}] must be in [{PHYSICAL[0]:.0e}, "
                                 f"{PHYSICAL[1]:.0e}] FLOP/s, got {flops:.3g}")  # fmt: skip
        for dtype, flops in self.kernel_peak_flops_per_s.items():
            if not 0 < flops <= self.peak_flops_per_s.get(dtype, 0.0):  # type: ignore[call-overload]
                raise ValueError(f"kernel_peak_flops_per_s[{dtype}] must be > 0 and at most "
                                 f"peak_flops_per_s[{dtype}], got {flops:.3g}")  # fmt: skip
        if self.kernel_peak_flops_per_s:
            numeric.append("kernel_peak_flops_per_s")
        if self.idle_watts is not None and self.tdp_watts is not None:
            if self.idle_watts >= self.tdp_watts:
                raise ValueError(
                    f"idle_watts ({self.idle_watts}) must be below tdp_watts ({self.tdp_watts})"
                )
        missing = [f for f in numeric if not self.sources.get(f)]
        if missing:
            raise ValueError(f"every number needs a source; missing sources for {missing}")
        return self

    def unit(self, dtype: str) -> ComputeDtype:
        """The tensor unit a compute dtype runs on; a dtype the part lacks runs on the next unit up.

        fp8 on Ampere runs as fp16 (no fp8 tensor cores); int4 without int4 units runs as int8;
        tf32 without tf32 runs as fp32; fp4 before Blackwell runs as fp8, else fp16 (the operands
        are widened). This mirrors what kernels do on such parts (upcast).
        """
        fallbacks = {
            "fp4": ["fp4", "fp8", "fp16", "bf16"],
            "int4": ["int4", "int8", "fp16"],
            "int8": ["int8", "fp16"],
            "fp8": ["fp8", "fp16", "bf16"],
            "bf16": ["bf16", "fp16"],
            "fp16": ["fp16", "bf16"],
            "tf32": ["tf32", "fp32"],
            "fp32": ["fp32"],
        }
        for candidate in fallbacks.get(dtype, [dtype]):
            if candidate in self.peak_flops_per_s:
                return cast(ComputeDtype, candidate)
        return min(self.peak_flops_per_s, key=self.peak_flops_per_s.__getitem__)

    def peak(self, dtype: str) -> float:
        """Dense datasheet peak FLOP/s of the unit a compute dtype runs on (`unit`)."""
        return self.peak_flops_per_s[self.unit(dtype)]

    def kernel_peak(self, dtype: str) -> float:
        """`peak`, or the lower rate the engines' kernels issue on that unit
        (`kernel_peak_flops_per_s`): what `calibrated` prices with."""
        unit = self.unit(dtype)
        return self.kernel_peak_flops_per_s.get(unit, self.peak_flops_per_s[unit])

    def clock_hz(self) -> float:
        """The SM clock that cycle terms are priced at: the boost clock, else CLOCK_FALLBACK_HZ."""
        return self.boost_clock_hz or CLOCK_FALLBACK_HZ

    def exp_rate(self) -> float:
        """Exponentials one SM issues per clock: the preset's, else EXP_PER_SM_CYCLE."""
        return self.exp_per_sm_cycle or EXP_PER_SM_CYCLE

    def ridge_point(self, dtype: str = "bf16") -> float:
        """Arithmetic intensity (FLOP/byte) where compute and HBM time are equal."""
        return self.peak(dtype) / self.hbm_bytes_per_s


class LinkSpec(Spec):
    """A communication link: per-GPU bandwidth one way, and two latencies per hop.

    `latency_s` is what one step of an NCCL collective costs on this link (an estimate; the
    calibrated comm protocols are multiples of it). `hop_latency_s` is the hardware's own floor
    for one hop (a GPU's store landing in its peer's memory, with no protocol around it): what
    the `ideal` profile charges, so that no real kernel (the engines' one-shot all-reduce
    included) can beat it. A link without one (a user's file) falls back to `latency_s`.
    """

    name: str = Field(description="e.g. 'nvlink4', 'pcie4', 'infiniband-ndr'")
    bytes_per_s: float = Field(gt=0, description="per GPU, one direction, bytes/s")
    latency_s: float = Field(ge=0, description="NCCL's fixed latency per step (hop), s")
    hop_latency_s: float | None = Field(
        default=None, ge=0, description="hardware floor of one hop, s (None = latency_s)"
    )
    source: str = Field(description="where the numbers come from")

    @model_validator(mode="after")
    def _floor_below_step(self) -> LinkSpec:
        if self.hop_latency_s is not None and self.hop_latency_s > self.latency_s:
            raise ValueError(f"hop_latency_s ({self.hop_latency_s:g} s) is the floor of one hop "
                             f"and cannot exceed latency_s ({self.latency_s:g} s)")  # fmt: skip
        return self

    @property
    def floor_latency_s(self) -> float:
        """The least one hop can take: `hop_latency_s`, else `latency_s`."""
        return self.latency_s if self.hop_latency_s is None else self.hop_latency_s


class SystemSpec(Spec):
    """GPUs in nodes: the home of multi-GPU communication."""

    id: str
    gpu: GPUSpec
    gpus_per_node: int = Field(gt=0)
    intra_node: LinkSpec = Field(description="link between GPUs of one node")
    inter_node: LinkSpec | None = Field(default=None, description="link between nodes, if any")

    def link_for(self, n_gpus: int) -> LinkSpec:
        """The slowest link a group of n GPUs spans (inter-node once it outgrows a node)."""
        if n_gpus <= self.gpus_per_node or self.inter_node is None:
            return self.intra_node
        return self.inter_node
