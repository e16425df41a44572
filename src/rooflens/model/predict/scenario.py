"""A scenario: the model, the machine, the workload and the settings one prediction is for."""

from __future__ import annotations

from pydantic import Field, model_validator

from rooflens.hardware.engines import engine_refusal
from rooflens.hardware.errors import FieldError
from rooflens.hardware.profiles import (
    DEFAULT_ENGINE,
    ENGINE_NAMES,
    calibration_file,
)
from rooflens.hardware.spec import GPUSpec, Spec, SystemSpec
from rooflens.model.specs.dtypes import ACTIVATION_DTYPES, FP4_DTYPES, STORAGE_DTYPES
from rooflens.model.specs.quant import FAMILIES, SCHEMES, family_of, scheme_text
from rooflens.model.specs.spec import ModelSpec

GIB = float(2**30)
# CUDA context (~0.5 GiB), cuBLAS/NCCL workspaces and CUDA-graph pools (~1 GiB): the memory a
# serving process holds beyond weights, KV cache and activations. An assumption, overridable.
DEFAULT_OVERHEAD_BYTES = 1.5 * GIB
# Prefill activations are sized for at most this many tokens at once: vLLM's default
# max_num_batched_tokens with chunked prefill (8192). Set it to 0 for no chunking.
DEFAULT_PREFILL_CHUNK_TOKENS = 8192
# The profile every face prices with unless told otherwise; `ideal` is the stated lower bound.
DEFAULT_PROFILE = "calibrated"


def priced_by(profile: str, engine: str = DEFAULT_ENGINE, gpu: GPUSpec | None = None) -> str:
    """What produced a prediction's numbers, in the words every table, JSON and page print: the
    pricing profile and, for a fitted one, the engine whose kernels it was fitted on, and (with
    `gpu`) where a GPU without measurements of its own takes its terms from; `ideal` named as
    the lower bound it is (no engine reaches it)."""
    if profile == "ideal":
        return "ideal profile (datasheet lower bound)"
    text = f"{profile} profile, {ENGINE_NAMES.get(engine, engine)} kernels"
    if gpu is None:
        return text
    path, _ = calibration_file(gpu)
    if path.stem == gpu.id:
        return text
    if path.stem == "generic":
        return f"{text}, terms pooled over the measured GPUs"
    return f"{text}, terms of {path.stem}, the same SM design"


def priced_by_engines(profile: str, engines: tuple[str, ...]) -> str:
    """`priced_by` for a search over several engines (`rooflens plan --engine`): each
    configuration priced with its own engine's kernels."""
    if profile == "ideal" or len(engines) == 1:
        return priced_by(profile, engines[0] if engines else DEFAULT_ENGINE)
    names = ", ".join(ENGINE_NAMES.get(e, e) for e in engines)
    return f"{profile} profile, each configuration with its engine's kernels ({names})"


FP8_WEIGHT_ONLY = "--weight-dtype fp8 with no --quant or --act-dtype (activations then bf16)"
FP8_MARLIN_MIN_CC = 7.5  # vLLM docs, "FP8 W8A8": FP8 models run weight-only from Turing on


def lacks_fp8(gpu: GPUSpec) -> bool:
    """Whether `gpu` has no fp8 tensor cores (before Ada): fp8 activations are refused there."""
    return "fp8" not in gpu.peak_flops_per_s


def fp8_units_needed(gpu: GPUSpec, fix: str = FP8_WEIGHT_ONLY) -> str:
    """Why fp8 activations are refused on `gpu` (no fp8 tensor cores), and what engines run an
    FP8 checkpoint as there: weight-only FP8, the weights dequantized to bf16 in the GEMM (vLLM's
    FP8 Marlin, for compute capability >= 7.5; vLLM docs, "FP8 W8A8"), `fix` the flags that ask
    for it; below 7.5 (Volta) no engine runs FP8 weights. A FieldError template (`{subject}`
    names what asked for fp8 activations)."""
    cc = gpu.compute_capability
    lacks = f"{gpu.id}" + (f" (compute capability {cc})" if cc else "")
    if cc and float(cc) < FP8_MARLIN_MIN_CC:
        tail = (
            "no engine runs FP8 weights there either (vLLM's weight-only FP8 Marlin needs "
            f"compute capability {FP8_MARLIN_MIN_CC}): serve 16-bit, int8 or int4 weights"
        )
    else:
        tail = (
            f"engines run FP8 checkpoints there as weight-only FP8 (vLLM's FP8 Marlin): use {fix}"
        )
    return (
        f"{{subject}} needs FP8 tensor cores (Ada, Hopper, Blackwell), which {lacks} lacks; " + tail
    )


class Precision(Spec):
    """Storage dtype per tensor kind; matmuls run on the unit dtypes.compute_dtype picks."""

    weight_dtype: str = "bf16"
    act_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    expert_weight_dtype: str = Field(
        default="",
        description="routed experts' weight dtype when it differs (gpt-oss's mxfp4); '' = weights",
    )
    weight_group_size: int = Field(
        default=128,
        gt=0,
        description="elements sharing one fp16 scale in int8/int4/nf4 weights",
    )
    scheme: str = Field(
        default="",
        description="the precision scheme in force (model/specs/quant.py SCHEMES: w4a16, "
        "w8a8-fp8, fp8-block, ...); '' where the dtypes make none (fp8 weight-only, mixed experts)",
    )
    native: bool = Field(default=False, description="the checkpoint's own format (--quant native)")

    @model_validator(mode="after")
    def _check(self) -> Precision:
        for field, allowed in (
            ("weight_dtype", STORAGE_DTYPES),
            ("kv_dtype", STORAGE_DTYPES),
            ("act_dtype", ACTIVATION_DTYPES),
            ("expert_weight_dtype", ("", *STORAGE_DTYPES)),
            ("scheme", ("", *SCHEMES)),
        ):
            value = getattr(self, field)
            if value not in allowed:
                raise ValueError(f"{field} '{value}' is not one of {', '.join(allowed)}")
        return self

    @property
    def expert_dtype(self) -> str:
        """The dtype routed experts are stored in."""
        return self.expert_weight_dtype or self.weight_dtype

    @property
    def family(self) -> str | None:
        """The kernel family the (dense) matmuls run as (model/specs/quant.py FAMILIES)."""
        if self.scheme:
            return SCHEMES[self.scheme].family
        return family_of(self.weight_dtype, self.act_dtype)

    def quant_label(self, weight_dtype: str) -> str | None:
        """The kernel family a matmul of `weight_dtype` weights must name (gemm_op's and
        moe_op's `quant`): the scheme's, where the operands alone name another (FP8-block runs
        the 128-block kernels, not per-tensor FP8's); None where they name it themselves, and
        for weights the scheme leaves 16-bit (router, lm_head)."""
        family = self.family
        if family is None or family == family_of(weight_dtype, self.act_dtype):
            return None
        act, weight = FAMILIES[family]
        return family if act == self.act_dtype and (weight or act) == weight_dtype else None

    @property
    def text(self) -> str:
        """The precision in engine words: 'W4A16', 'native: MXFP4 experts, bf16 attention'."""
        words = scheme_text(self.weight_dtype, self.act_dtype, self.expert_weight_dtype,
                            self.scheme == "fp8-block")  # fmt: skip
        return f"native: {words}" if self.native else words


class Parallelism(Spec):
    tp: int = Field(default=1, gt=0, description="tensor-parallel degree")
    pp: int = Field(default=1, gt=0, description="pipeline-parallel degree")
    ep: int = Field(default=1, gt=0, description="expert-parallel degree")

    @property
    def n_gpus(self) -> int:
        return self.tp * self.pp


class Workload(Spec):
    batch: int = Field(default=1, gt=0, description="concurrent sequences (B)")
    prompt_len: int = Field(default=512, gt=0, description="prompt tokens per sequence (P)")
    output_len: int = Field(default=128, gt=0, description="generated tokens per sequence (O)")
    images_per_prompt: int = Field(
        default=0,
        ge=0,
        description="images per prompt of a vision-language model; their tokens are part of "
        "prompt_len and the vision encoder runs at prefill (model/ops/vision.py)",
    )
    prefill_chunk_tokens: int = Field(
        default=DEFAULT_PREFILL_CHUNK_TOKENS,
        ge=0,
        description="tokens prefilled at once, which sizes activation memory (0 = all B·P)",
    )


class Applied(Spec):
    """What the optimizations applied to a scenario leave for later pipeline stages: set by
    their `scenario` hooks (model/optimizations/), read by their `result`/`timing` hooks and by
    pipeline parallelism. Zero or empty means "not applied"."""

    decoding: str = Field(
        default="",
        pattern=r"^[a-z0-9-]*$",
        description="the optimization that replaced the decode step (speculative, medusa, "
        "lookahead); '' = plain one-token decoding",
    )
    pp_microbatches: int = Field(
        default=0, ge=0, description="micro-batches per pipeline-parallel batch (0 = min(pp, B))"
    )
    kv_window_tokens: int = Field(
        default=0,
        ge=0,
        description="positions a sequence's KV cache holds at most under --opt sliding-window "
        "(window + sinks); 0 = the model's own window, if any",
    )
    prune_from_params: int = Field(
        default=0, ge=0, description="parameters before --opt prune (0 = not pruned)"
    )
    distill_from_params: int = Field(
        default=0, ge=0, description="the teacher's parameters under --opt distill (0 = none)"
    )
    prompt_len_before_compression: int = Field(
        default=0,
        ge=0,
        description="prompt tokens P before --opt prompt-compression (0 = not compressed)",
    )


def with_applied(sc: Scenario, **changes: int | str) -> Scenario:
    """`sc` with fields of its `applied` record changed (each checked against its bounds)."""
    return sc.model_copy(update={"applied": sc.applied.model_copy(update=changes)})


class Scenario(Spec):
    model: ModelSpec
    system: SystemSpec
    workload: Workload = Workload()
    precision: Precision = Precision()
    parallel: Parallelism = Parallelism()
    profile: str = "ideal"
    engine: str = Field(default=DEFAULT_ENGINE, description="serving engine (hardware/profiles.py)")
    overhead_bytes: float = Field(default=DEFAULT_OVERHEAD_BYTES, ge=0)
    opts: tuple[str, ...] = Field(
        default=(),
        description="the optimizations it was built with (ScenarioRequest.opts), which "
        "model/predict/api.py `run` applies unless told others",
    )
    applied: Applied = Field(
        default=Applied(),
        description="what optimizations' scenario hooks leave for later stages (never user input)",
    )

    @property
    def gpu(self) -> GPUSpec:
        return self.system.gpu

    @model_validator(mode="after")
    def _check(self) -> Scenario:
        m, tp = self.model, self.parallel.tp
        if m.n_heads % tp:
            raise FieldError("tp", f"{{subject}} must divide {m.id}'s {m.n_heads} attention heads",
                             "--tp", tp)  # fmt: skip
        kv = m.n_kv_heads
        if m.attention != "mla" and kv % tp and tp % kv:
            raise FieldError(
                "tp", f"{{subject}} and {m.id}'s {kv} KV heads must divide one another "
                "(KV heads are split, or replicated when tp exceeds them)", "--tp", tp,
            )  # fmt: skip
        p = self.precision
        for field, flag, value in (("act_dtype", "--act-dtype", p.act_dtype),
                                   ("kv_dtype", "--kv-dtype", p.kv_dtype)):  # fmt: skip
            if value in FP4_DTYPES and "fp4" not in self.gpu.peak_flops_per_s:
                raise FieldError(
                    field, f"{{subject}} needs FP4 tensor cores (Blackwell), which {self.gpu.id} "
                    f"lacks; keep {value} for weights only (dequantized to bf16/fp8 activations)",
                    flag, value,
                )  # fmt: skip
        if p.act_dtype == "fp8" and lacks_fp8(self.gpu):
            raise FieldError("act_dtype", fp8_units_needed(self.gpu), "--act-dtype", "fp8")
        if why := engine_refusal(self.engine, self.gpu):
            raise FieldError("engine", why, "--engine", self.engine)
        images = self.workload.images_per_prompt
        if images and m.vision is None:
            raise FieldError("images", f"{{subject}}: {m.id} has no vision encoder", "--images",
                             images)  # fmt: skip
        if images and m.vision and self.workload.prompt_len < images * m.vision.tokens_per_image:
            raise FieldError(
                "prompt_len", f"{{subject}} is shorter than the {images} image(s)' "
                f"{images * m.vision.tokens_per_image} tokens", "prompt_len",
                self.workload.prompt_len,
            )  # fmt: skip
        if m.n_layers % self.parallel.pp:
            raise FieldError("pp", f"{{subject}} must divide {m.id}'s {m.n_layers} layers", "--pp",
                             self.parallel.pp)  # fmt: skip
        if self.context_tokens > m.max_context:
            raise FieldError(
                "prompt_len", f"the sequence reaches {self.context_tokens} positions (prompt + "
                f"output − 1), over {m.id}'s max context of {m.max_context} tokens; shorten "
                "{subject} or the output", "the prompt",
            )  # fmt: skip
        return self

    @property
    def context_tokens(self) -> int:
        """Positions a sequence holds at its last step: P + O − 1 (the last token is not fed)."""
        return self.workload.prompt_len + self.workload.output_len - 1

    @property
    def kv_heads_per_gpu(self) -> int:
        """KV heads per GPU: split by TP, replicated once TP exceeds them (vLLM, Megatron)."""
        return max(1, self.model.n_kv_heads // self.parallel.tp)
