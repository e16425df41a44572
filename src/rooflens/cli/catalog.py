"""What `rooflens list` shows: the presets and the optimization registry, as JSON rows for
scripts and as formatted cells (every number with its unit) for the terminal table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rooflens.hardware.presets import get_gpu, gpu_ids
from rooflens.hardware.spec import GPUSpec
from rooflens.hardware.systems import get_system, system_ids
from rooflens.io.units import fmt_bytes
from rooflens.model.optimizations import registry
from rooflens.model.optimizations.base import EXCLUSIVE_PAIRS
from rooflens.model.specs.params import count_params
from rooflens.model.specs.presets import get_model, model_ids


@dataclass(frozen=True)
class Listing:
    title: str
    columns: list[str]
    rows: list[dict[str, Any]]  # JSON, SI units
    cells: list[list[str]]  # the same, formatted with units


def _tflops(gpu: GPUSpec, dtype: str) -> str:
    """A unit's datasheet peak, and in parentheses the lower rate the engines' kernels issue."""
    value = gpu.peak_flops_per_s.get(dtype)  # type: ignore[call-overload]
    if not value:
        return "—"
    kernels = gpu.kernel_peak(dtype)  # the one place that says what the kernels issue
    issued = f" ({kernels / 1e12:.0f})" if kernels < value else ""
    return f"{value / 1e12:.0f}{issued}"  # the unit is in the column's header


def _models() -> Listing:
    rows: list[dict[str, Any]] = []
    for mid in model_ids():
        m = get_model(mid)
        pc = count_params(m)
        rows.append({"id": mid, "name": m.name, "params": pc.total, "active_params": pc.active,
                     "layers": m.n_layers, "d_model": m.d_model, "attention": m.attention,
                     "max_context": m.max_context})  # fmt: skip
    cells = [
        [r["id"], r["name"], f"{r['params'] / 1e9:.2f} B", f"{r['active_params'] / 1e9:.2f} B",
         str(r["layers"]), str(r["d_model"]), r["attention"], f"{r['max_context']:,}"]
        for r in rows
    ]  # fmt: skip
    columns = ["id", "name", "params", "active", "layers", "d_model", "attention", "context"]
    return Listing("Models (params in billions)", columns, rows, cells)


def _gpus() -> Listing:
    gpus = [get_gpu(g) for g in gpu_ids()]
    cells = [
        [g.id, g.name, fmt_bytes(g.memory_bytes), f"{g.hbm_bytes_per_s / 1e12:.2f} TB/s",
         _tflops(g, "bf16"), _tflops(g, "fp8"), _tflops(g, "int8"), _tflops(g, "fp4"),
         f"{g.ridge_point('bf16'):.0f} FLOP/B",
         f"{g.nvlink_bytes_per_s / 1e9:.0f} GB/s" if g.nvlink_bytes_per_s else "—"]
        for g in gpus
    ]  # fmt: skip
    columns = ["id", "name", "memory", "HBM", "bf16 TFLOP/s", "fp8 TFLOP/s", "int8 TOP/s",
               "fp4 TFLOP/s", "ridge bf16", "GPU link"]  # fmt: skip
    title = ("GPUs (dense peaks; in parentheses the rate the engines' kernels issue, where lower: "
             "`calibrated` prices with it; links one direction per GPU)")  # fmt: skip
    return Listing(title, columns, [g.model_dump() for g in gpus], cells)


def _systems() -> Listing:
    systems = [get_system(s) for s in system_ids()]
    cells = [
        [s.id, s.gpu.id, str(s.gpus_per_node),
         f"{s.intra_node.name} {s.intra_node.bytes_per_s / 1e9:.0f} GB/s",
         f"{s.inter_node.name} {s.inter_node.bytes_per_s / 1e9:.0f} GB/s" if s.inter_node else "—"]
        for s in systems
    ]  # fmt: skip
    columns = ["id", "GPU", "GPUs/node", "intra-node link", "inter-node link"]
    title = "Systems (use as --gpu; links one direction per GPU)"
    return Listing(title, columns, [s.model_dump() for s in systems], cells)


def _optimizations() -> Listing:
    rows: list[dict[str, Any]] = [
        {"name": name, "summary": cls.summary, "citation": cls.citation,
         "params": {k: {"default": p.default, "help": p.help, "bounds": p.bounds_text()}
                    for k, p in cls.params.items()},
         "exclusive_with": [b if a == name else a for a, b, _ in EXCLUSIVE_PAIRS
                            if name in (a, b)]}
        for name, cls in registry().items()
    ]  # fmt: skip
    cells = [
        [r["name"], r["summary"],
         ", ".join(f"{k}={v['default']}" for k, v in r["params"].items()) or "—", r["citation"]]
        for r in rows
    ]  # fmt: skip
    columns = ["name", "what it models", "parameters", "source"]
    return Listing("Optimizations (use --opt NAME[:key=value,...])", columns, rows, cells)


def catalog(kind: str) -> Listing:
    return {"models": _models, "gpus": _gpus, "systems": _systems,
            "optimizations": _optimizations}[kind]()  # fmt: skip
