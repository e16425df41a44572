"""Pricing profiles, as data: how far below the datasheet a GPU really runs each kind of
operator. The formulas that use these numbers live in model/pricing/roofline.py, the one place that
turns a kernel call into seconds; this module holds only the fitted numbers and their loader.

`ideal` is the datasheet roofline with no overheads, a lower bound on any real kernel.
`calibrated` scales peaks by achieved fractions and adds terms fitted from measurements
(validate/calibrate.py writes `hardware/calibration/<gpu-id>.yaml` with its provenance). A GPU
without its own file uses the file of a measured GPU of the same SM design (an H200 the
H100's), else `generic.yaml`, which validate/ derives from the measured GPUs
(`calibration_file`).

Each kind's terms (`KindEfficiency`: achieved compute and bandwidth fractions, a fixed cost
per call (seconds, or cycles of the GPU's clock), the overlap power of the roofs, a latency
per wave of thread blocks, the blocks per SM that saturate bandwidth, the bytes per SM cycle
an eager PyTorch kernel issues, the bytes per microsecond each of its resident threads keeps
moving, the FLOPs per SM cycle of the SM-side work in series with a quantized GEMM's MMAs, the
bytes a quantized GEMM's own input-quantization pass moves and the cycles per input row it
serializes, the bytes per SM cycle a benchmark's call reads its replayed operands from L2 at)
are defined by the formula in model/pricing/roofline.py (the pass: model/pricing/input_pass.py;
L2: model/pricing/l2_resident.py). Kinds: the op kinds of model/ops/op.py, plus
`attention_decode` (one new token per sequence) and `moe` (fused MoE experts,
model/ops/moe.py), which take their own terms when fitted. A quantized matmul's kernel family
(model/specs/quant.py) has terms of its own under `<kind>:<family>` (`gemm:fp8`,
`gemm:int4_wo`, `moe:nvfp4`; bf16 is the bare kind), and so has FP8 attention or attention
over an fp8 cache (`attention:fp8`, `attention_decode:kv_fp8`).

The engine (vLLM, SGLang, TensorRT-LLM) is a pricing input: `engines` holds, per engine, the
kinds that engine's own kernels were fitted on; `for_engine` lays them over the kinds pooled
over every engine, which price whatever that engine was not measured on.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rooflens.hardware.engines import (  # noqa: F401  (ENGINE_NAMES re-exported: it was here)
    DEFAULT_ENGINE,
    ENGINE_NAMES,
    ENGINES,
)
from rooflens.hardware.errors import RooflensError
from rooflens.hardware.presets import get_gpu, gpu_ids, read_data_file
from rooflens.hardware.spec import GPUSpec

CALIBRATION_DIR = Path(__file__).parent / "calibration"
PROFILES = ("ideal", "calibrated")
# The share of HBM bandwidth a device copy reaches (3.01 of the H100's 3.35 TB/s, measured with
# the H100 set: shared/data/measured/rooflens-h100/README.md): what a streaming kernel of the
# engine's own (a quantized GEMM's input pass, model/pricing/input_pass.py) moves at,
# and the fit's prior for an eager kernel's HBM fraction (validate/fit_terms.py).
COPY_FRACTION = 0.90
# The most a dynamic activation quantization moves per 16-bit input element: its amax read (2 B),
# the read to convert (2 B) and the 8-bit write (1 B); NVFP4's 4-bit write and 1/16 of a scale
# move less.
INPUT_PASS_MAX_BYTES = 5.0


class KindEfficiency(BaseModel):
    """Achieved fractions of peak for one operator kind, its fixed cost per call, and the
    small-problem terms (see the module docstring). Defaults are the ideal roofline;
    model/pricing/roofline.py applies them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    compute_fraction: float = Field(default=1.0, gt=0, le=1.0)
    memory_fraction: float = Field(default=1.0, gt=0, le=1.0)
    overhead_s: float = Field(default=0.0, ge=0, description="fixed time per kernel call, s")
    overhead_cycles: float = Field(
        default=0.0,
        ge=0,
        description="fixed SM clock cycles per kernel call (at the GPU's boost clock): the part "
        "of the launch floor that follows the clock",
    )
    overlap_power: float | None = Field(
        default=None, ge=1.0, description="p of the smooth max of the roofs (None: max)"
    )
    wave_latency_s: float = Field(
        default=0.0, ge=0, description="least time per wave of thread blocks over the SMs, s"
    )
    wave_latency_cycles: float = Field(
        default=0.0,
        ge=0,
        description="least SM clock cycles per wave of thread blocks (at the GPU's boost clock): "
        "the part of the wave latency that follows the clock",
    )
    saturation_blocks_per_sm: float = Field(
        default=0.0, ge=0, description="thread blocks per SM that saturate bandwidth (0: off)"
    )
    bytes_per_sm_cycle: float = Field(
        default=0.0,
        ge=0,
        description="bytes an eager (unfused PyTorch) kernel moves per SM per clock (0: off)",
    )
    bytes_per_thread_us: float = Field(
        default=0.0,
        ge=0,
        description="bytes each resident thread of an eager (unfused PyTorch) kernel moves per "
        "microsecond: the bytes it keeps in flight over the memory latency (0: off)",
    )
    flops_per_sm_cycle: float = Field(
        default=0.0,
        ge=0,
        description="tensor FLOPs per SM clock cycle of the SM-side work a tile's MMAs carry, in "
        "series with them: 1 / rate = 1 / (peak x compute_fraction) + 1 / (SMs x clock x this) "
        "(0: off)",
    )
    input_pass_bytes: float = Field(
        default=0.0,
        ge=0,
        le=INPUT_PASS_MAX_BYTES,
        description="bytes moved per input element by a kernel of its own before a quantized "
        "GEMM (dynamic activation quantization: the 16-bit read, the narrow write, the amax "
        "pass) (0: none, or fused into the previous op)",
    )
    input_pass_row_cycles: float = Field(
        default=0.0,
        ge=0,
        description="SM clock cycles per input row that the input pass serializes, beside its "
        "bytes (a per-tensor amax taken by one atomic max per row on one address: vLLM's "
        "dynamic FP8 scale; TensorRT-LLM's block FP8 on sm_120) (0: none)",
    )
    single_row_cycles: float = Field(
        default=0.0,
        ge=0,
        description="SM clock cycles a GEMM call costs beyond its terms where its input is one "
        "row (m = 1): the engine's m = 1 path (vLLM 0.24's per-tensor FP8 on the B300: +13.3 µs "
        "a call over m = 2 at every shape) (0: none; validate/single_row_fit.py)",
    )
    wave_tail: float = Field(
        default=0.0,
        ge=0,
        le=1.0,
        description="share of a GEMM's tile and wave padding the compute roof pays (0: none)",
    )
    softmax_cycles: float = Field(
        default=0.0,
        ge=0,
        description="SM clock cycles per scored query-key pair of a prefill attention kernel: "
        "its softmax (the exponential on the special-function units, the FP32 scaling, max and "
        "sum) beside the MMAs (0: none; model/pricing/softmax.py)",
    )
    l2_bytes_per_sm_cycle: float = Field(
        default=0.0,
        ge=0,
        description="bytes per SM per clock a benchmark's call reads what it re-reads each "
        "replay at (a GEMM's weight copies, attention's KV cache) where those fit in L2 and that "
        "beats the DRAM roof (0: off; model/pricing/l2_resident.py; a deployment's step reads "
        "them cold)",
    )


class Profile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    gpu_id: str | None = Field(default=None, description="GPU it was fitted on (None = any)")
    kinds: dict[str, KindEfficiency] = Field(
        default_factory=dict,
        description="op kind -> efficiency; key 'default' for the rest",
    )
    engines: dict[str, dict[str, KindEfficiency]] = Field(
        default_factory=dict,
        description="engine -> the kinds fitted on that engine's own kernels (over `kinds`)",
    )
    engine: str | None = Field(default=None, description="engine `kinds` are resolved for")
    datasheet_peaks: bool = Field(
        default=False,
        description="price tensor math at the datasheet's peaks (`ideal`), not at the rate the "
        "engines' kernels issue (GPUSpec.kernel_peak)",
    )
    comm_bandwidth_fraction: float = Field(default=1.0, gt=0, le=1.0)
    comm_latency_scale: float = Field(default=0.0, ge=0, description="x link latency per step")
    source: str = Field(description="how it was obtained: datasheet, or fit data and date")
    provenance: dict[str, Any] = Field(
        default_factory=dict,
        description="fit record: data sets, rows, errors, versions, git commit, date",
    )

    def kind(self, kind: str) -> KindEfficiency:
        return self.kinds.get(kind) or self.kinds.get("default") or KindEfficiency()

    def for_engine(self, engine: str) -> Profile:
        """This profile as `engine` runs it: its own kinds over the ones pooled over engines."""
        if engine not in ENGINES:
            raise RooflensError(f"unknown engine '{engine}': use one of {', '.join(ENGINES)}")
        own = self.engines.get(engine, {})
        return self.model_copy(update={"kinds": {**self.kinds, **own}, "engine": engine})


IDEAL = Profile(
    name="ideal",
    datasheet_peaks=True,
    source="datasheet peaks, perfect overlap, no launch overhead: a lower bound",
)


@cache
def _load(path: Path) -> Profile:
    return Profile.model_validate(read_data_file(path))


def load_calibration(path: Path) -> Profile:
    """A calibration file as written (its terms pooled over engines, `engines`, `provenance`)."""
    return _load(path)


def sm_design(gpu: GPUSpec) -> str | None:
    """The SM design a GPU's kernels are built for: its compute capability, where NVIDIA's
    family-specific targets (CUDA 12.9, `sm_100f`, `sm_120f`) group the minor versions of a
    major from 10 on (B200's 10.0 with B300's 10.3); None where the spec states none."""
    cc = gpu.compute_capability
    if cc is None:
        return None
    major, _, minor = cc.partition(".")
    return f"{major}.x" if int(major) >= 10 else f"{major}.{minor}"


def calibration_file(gpu: GPUSpec) -> tuple[Path, str]:
    """The calibration file a GPU's `calibrated` profile comes from, and why: its own fit;
    else the fit of a measured GPU of the same SM design (the same kernels, built for the same
    SM: an H200 runs the H100's, a B200 the B300's; its own datasheet still sets peaks,
    bandwidth, SM count and clock); else the fit pooled over every measured GPU (generic.yaml).
    docs/validation.md, "Accuracy on a GPU nobody has measured", states the rule."""
    own = CALIBRATION_DIR / f"{gpu.id}.yaml"
    if own.is_file():
        return own, "its own fit"
    sibling = sibling_of(gpu, _calibrated_gpus())
    if sibling is not None:
        return CALIBRATION_DIR / f"{sibling}.yaml", (
            f"the fit of {sibling} (the same SM design, compute capability "
            f"{get_gpu(sibling).compute_capability})"
        )
    return CALIBRATION_DIR / "generic.yaml", "the fit pooled over the measured GPUs"


def sibling_of(gpu: GPUSpec, measured: tuple[str, ...]) -> str | None:
    """The first of the `measured` presets (sorted) with `gpu`'s SM design; None if none, or
    if `gpu` states no compute capability. `calibrated` prices a GPU without measurements with
    that GPU's fit; `rooflens validate cv --rule sibling` tests the rule."""
    design = sm_design(gpu)
    same = (g for g in sorted(measured) if design and sm_design(get_gpu(g)) == design)
    return next(same, None)


def calibration_path(gpu: GPUSpec) -> Path:
    """The calibration file a GPU's `calibrated` profile comes from (`calibration_file`)."""
    return calibration_file(gpu)[0]


@cache
def _calibrated_gpus() -> tuple[str, ...]:
    """The presets with a calibration file of their own (generic.yaml and the collectives'
    files name none)."""
    return tuple(sorted(p.stem for p in CALIBRATION_DIR.glob("*.yaml") if p.stem in gpu_ids()))


@cache
def _engine_view(path: Path, engine: str) -> Profile:
    return _load(path).for_engine(engine)


def get_profile(name: str, gpu: GPUSpec, engine: str | None = DEFAULT_ENGINE) -> Profile:
    """`ideal`, or `calibrated` for this GPU as `engine` runs it (its own fit, else the generic
    derived profile); engine None: the terms pooled over every engine (what the validator
    prices a kernel no engine ran with). The ideal roofline is the same for every engine."""
    if engine is not None and engine not in ENGINES:
        raise RooflensError(f"unknown engine '{engine}': use one of {', '.join(ENGINES)}")
    if name == "ideal":
        return IDEAL
    if name != "calibrated":
        raise RooflensError(f"unknown profile '{name}': use one of {', '.join(PROFILES)}")
    path = calibration_path(gpu)
    return _load(path) if engine is None else _engine_view(path, engine)
