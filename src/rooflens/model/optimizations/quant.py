"""`quant:scheme=…`: the published post-training quantization recipes as presets.

Precisions alone come from `--weight-dtype`, `--act-dtype`, `--kv-dtype` (the operator table
charges packed weight bytes, one fp16 scale per group, and CUDA-core dequantization work for
weight-only kernels: model/ops/table.py). A scheme fixes the storage, the compute unit and the extra
bytes and kernels its reference implementation really has:

- `gptq` (Frantar et al. 2023) and `awq` (Lin et al. 2024): int4 weights (gptq bits=8: int8),
  16-bit activations, the 16-bit unit after dequantization; an fp16 scale and a packed zero
  point per group of 128.
- `smoothquant` (Xiao et al. 2023): int8 weights and per-token int8 activations on the int8
  unit; one fp16 scale per output channel.
- `fp8` (Micikevicius et al. 2022): fp8 weights and per-token fp8 activations on the fp8 unit;
  one fp32 scale per output channel.
- `llm.int8` (Dettmers et al. 2022): int8 weights with an fp32 scale per row; activations int8
  except a fraction of outlier feature dims kept in fp16: both the int8 and fp16 units.

Formulas per linear layer Y[M,N] = X[M,K]·W[N,K]ᵀ with g the group (K for per-channel):
- weight bytes = N·K·(b_w + (scale + zero)/g), zero = b_w (packed like the weights);
- 8-bit activations: X is read at 1 byte (quantization fused into the producing kernel, as
  SmoothQuant and vLLM's fp8 path do), FLOPs 2MNK on the 8-bit unit, no dequantization;
- llm.int8 decomposes X by feature dims: a fraction f of outlier dims (≈6 of 4096 at 6.7B,
  Dettmers et al. §4) runs as an fp16 GEMM (2MN·fK FLOPs), the rest as int8 (2MN·(1−f)K) whose
  int32 output (4 bytes) is dequantized by a separate kernel, and a third kernel quantizes X and
  gathers the outlier columns: both paths are paid, plus the bytes between them.

Limits: accuracy is not modelled; MoE expert GEMMs get the unit and storage but not the input
bytes; an 8-bit unit the GPU lacks (fp8 before Hopper/Ada) falls back to the 16-bit peak, as
GPUSpec.peak does, and a note says so.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar

from rooflens.hardware.errors import RooflensError
from rooflens.model.ops.op import Num, Op
from rooflens.model.optimizations._weights import (
    bytes_per_weight,
    is_linear,
    linear_weight_elements_per_gpu,
    weight_elements,
)
from rooflens.model.optimizations.base import Optimization, Param
from rooflens.model.predict.scenario import fp8_units_needed, lacks_fp8
from rooflens.model.predict.steps import MemoryBreakdown, Prediction, Step, StepPricer
from rooflens.model.specs.dtypes import dtype_bytes

if TYPE_CHECKING:
    from rooflens.model.predict.scenario import Scenario


@dataclass(frozen=True)
class Scheme:
    weight_dtype: str
    group_size: int  # 0 = one scale per output channel
    zero_point: bool
    input_dtype: str  # "" = 16-bit activations (weight-only), else the GEMM's input dtype
    scale_bytes: float = 2.0
    outliers: bool = False


SCHEMES: dict[str, Scheme] = {
    "gptq": Scheme("int4", 128, True, ""),
    "awq": Scheme("int4", 128, True, ""),
    "smoothquant": Scheme("int8", 0, False, "int8"),
    "fp8": Scheme("fp8", 0, False, "fp8", scale_bytes=4.0),
    "llm.int8": Scheme("int8", 0, False, "int8", scale_bytes=4.0, outliers=True),
}


class Quant(Optimization):
    name = "quant"
    summary = "quantization presets: gptq, awq (W4A16), smoothquant (W8A8), fp8, llm.int8"
    citation = (
        "Frantar 2023 GPTQ; Lin 2024 AWQ; Xiao 2023 SmoothQuant; Dettmers 2022 LLM.int8(); "
        "Micikevicius 2022 FP8 formats"
    )
    order = 12  # sets the precision (scenario), then rewrites linear ops
    params: ClassVar[dict[str, Param]] = {
        "scheme": Param(str, "awq", f"none, {', '.join(SCHEMES)}"),
        "bits": Param(int, 0, "gptq/awq weight bits, 4 or 8 (0 = the scheme's)"),
        "group": Param(int, -1, "weights per scale (0 = per channel, -1 = the scheme's)", lo=-1),
        "outlier_fraction": Param(
            float, 0.0015, "llm.int8: feature dims kept in fp16", lo=0, hi=1, hi_open=True
        ),
    }

    def check(self) -> None:
        scheme = self["scheme"]
        if scheme != "none" and scheme not in SCHEMES:
            raise RooflensError(
                f"--opt quant: unknown scheme '{scheme}'; use one of none, {', '.join(SCHEMES)}"
            )
        if self["bits"] not in (0, 4, 8) or (self["bits"] and scheme not in ("gptq", "awq")):
            raise RooflensError("--opt quant: bits=4 or 8, and only for scheme=gptq or awq")

    @property
    def scheme(self) -> Scheme | None:
        base = SCHEMES.get(self["scheme"])
        if base is None:
            return None
        if self["bits"]:
            base = replace(base, weight_dtype="int4" if self["bits"] == 4 else "int8")
        if self["group"] >= 0:
            base = replace(base, group_size=self["group"])
        return base

    def scenario(self, sc: Scenario) -> Scenario:
        s = self.scheme
        if s is None:
            return sc
        if s.input_dtype == "fp8" and lacks_fp8(sc.gpu):
            why = fp8_units_needed(sc.gpu, "--weight-dtype fp8 in place of this --opt")
            raise RooflensError(why.replace("{subject}", "--opt quant: scheme=fp8"))
        precision = sc.precision.model_copy(
            update={
                "weight_dtype": s.weight_dtype,
                # per-channel: one scale per output row of K ≈ D weights
                "weight_group_size": s.group_size or sc.model.d_model,
            }
        )
        return sc.model_copy(update={"precision": precision})

    def ops(self, ops: list[Op], sc: Scenario, step: Step) -> list[Op]:
        s = self.scheme
        if s is None:
            return ops
        out: list[Op] = []
        for op in ops:
            if not is_linear(op):
                out.append(op)
                continue
            op = replace(op, weight_bytes=self._weight_bytes(op, sc, s))
            if not s.input_dtype:
                out.append(op)
            elif s.outliers:
                out.extend(self._decomposed(op, sc))
            else:
                out.append(_eight_bit_input(op, s.input_dtype, sc))
        return out

    def _weight_bytes(self, op: Op, sc: Scenario, s: Scheme) -> Num:
        group = s.group_size or op.shape.get("k", sc.model.d_model)
        b_w = dtype_bytes(s.weight_dtype)
        overhead = (s.scale_bytes + (b_w if s.zero_point else 0.0)) / group
        return weight_elements(op, sc) * (b_w + overhead)

    def _decomposed(self, op: Op, sc: Scenario) -> list[Op]:
        """LLM.int8(): int8 GEMM on (1−f)K dims, fp16 GEMM on fK outlier dims, quant kernel."""
        f = self["outlier_fraction"]
        int8 = _eight_bit_input(op, "int8", sc)
        if "m" not in op.shape:
            return [replace(int8, flops=op.flops * (1 - f))]
        M, N, K = op.shape["m"], op.shape["n"], op.shape["k"]
        ab = dtype_bytes(sc.precision.act_dtype)
        main = replace(int8, flops=op.flops * (1 - f), act_bytes=M * K * 1.0 + M * N * 4.0)
        outlier_act = M * f * K * ab + M * N * ab
        outliers = replace(
            op,
            name=f"{op.name}.outliers",
            flops=op.flops * f,
            weight_bytes=N * f * K * 1.0,  # the outlier columns' int8 weights, read again
            act_bytes=outlier_act,
            live_bytes=outlier_act,
            compute_dtype=sc.precision.act_dtype,
            vector_flops=2.0 * N * f * K,  # dequantize those columns to fp16
        )
        quant_act = M * K * (ab + 1.0) + M * N * (4.0 + 2 * ab)
        quantize = replace(
            op,
            name=f"{op.name}.int8_quant",
            kind="elementwise",
            flops=3.0 * M * K + 3.0 * M * N,  # row absmax, scale and round; dequant and add
            weight_bytes=0.0,
            act_bytes=quant_act,
            live_bytes=quant_act,
            compute_dtype="fp32",
            vector_flops=0.0,
        )
        return [quantize, main, outliers]

    def memory(self, mem: MemoryBreakdown, sc: Scenario) -> MemoryBreakdown:
        """Scale and zero-point bytes beyond the one fp16 scale per group memory.py charges."""
        s = self.scheme
        if s is None:
            return mem
        p = sc.precision
        group = s.group_size or sc.model.d_model
        b_w = dtype_bytes(s.weight_dtype)
        scheme_bytes = b_w + (s.scale_bytes + (b_w if s.zero_point else 0.0)) / group
        charged = bytes_per_weight(p.weight_dtype, p.weight_group_size)
        extra = linear_weight_elements_per_gpu(sc) * (scheme_bytes - charged)
        return replace(mem, weights_bytes=mem.weights_bytes + extra)

    def result(self, pred: Prediction, sc: Scenario, pipeline: StepPricer) -> Prediction:
        s = self.scheme
        unit = s.input_dtype if s else ""
        if unit and unit not in sc.gpu.peak_flops_per_s:
            note = (
                f"quant:{self['scheme']}: {sc.gpu.id} has no {unit} tensor cores; its GEMMs run "
                f"at the {unit} fallback peak ({sc.gpu.peak(unit) / 1e12:.0f} TFLOP/s)"
            )
            return replace(pred, notes=[*pred.notes, note])
        return pred


def _eight_bit_input(op: Op, unit: str, sc: Scenario) -> Op:
    """W8A8: the GEMM reads X at 1 byte and runs on the 8-bit unit; no weight widening."""
    act = op.act_bytes
    if "m" in op.shape:  # a per-head batched GEMM (MLA's absorbed products) reads `heads` X's
        x = op.shape["m"] * op.shape["k"] * op.shape.get("heads", 1)
        act = act - x * (dtype_bytes(sc.precision.act_dtype) - 1.0)
    return replace(op, compute_dtype=unit, act_bytes=act, vector_flops=0.0 * op.vector_flops)
