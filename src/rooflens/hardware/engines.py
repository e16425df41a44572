"""The serving engines a `calibrated` price is fitted for (hardware/calibration/ holds each one's
terms), their names as every face prints them, and the hardware each one runs on."""

from __future__ import annotations

from rooflens.hardware.spec import GPUSpec

ENGINES = ("vllm", "sglang", "trtllm")  # the serving engines a calibrated price is fitted for
# their names as every face prints them (the launch settings of model/analysis/launch.py too)
ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
DEFAULT_ENGINE = "vllm"
# Where each engine runs (GPUSpec.vendor): TensorRT-LLM builds for NVIDIA GPUs only, Ampere
# (compute capability 8.0) and newer ("Supported Hardware", nvidia.github.io/TensorRT-LLM:
# Blackwell, Hopper, Ada Lovelace, Ampere); vLLM and SGLang also ship AMD ROCm, Intel XPU and
# CPU builds (docs.vllm.ai "Installation"; docs.sglang.io "Hardware Platforms").
ENGINE_VENDORS = {"vllm": ("nvidia", "amd", "intel", "cpu"),
                  "sglang": ("nvidia", "amd", "intel", "cpu"), "trtllm": ("nvidia",)}  # fmt: skip
ENGINE_MIN_CC = {"trtllm": 8.0}  # least CUDA compute capability, where an engine states one


def engine_refusal(engine: str, gpu: GPUSpec) -> str | None:
    """Why `engine` cannot serve on `gpu` (ENGINE_VENDORS, ENGINE_MIN_CC), naming the engines
    that can; None where it can. A FieldError template (`{subject}` names the engine), in no
    one face's words."""
    cc = float(gpu.compute_capability) if gpu.compute_capability else None
    least = ENGINE_MIN_CC.get(engine)
    if gpu.vendor in ENGINE_VENDORS.get(engine, (gpu.vendor,)) and not (
        least and cc is not None and cc < least
    ):
        return None
    name, vendors = ENGINE_NAMES.get(engine, engine), ENGINE_VENDORS.get(engine, ())
    if gpu.vendor in vendors:  # too old a part of a vendor it supports
        why = (f"{name} runs on compute capability {least} and newer, and {gpu.id} has "
               f"{gpu.compute_capability}")  # fmt: skip
    else:
        words = {"nvidia": "NVIDIA", "amd": "AMD", "intel": "Intel", "cpu": "CPU"}
        where = ", ".join(words[v] for v in vendors)
        part = words.get(gpu.vendor, "another vendor's")
        why = f"{name} runs on {where} hardware only, and {gpu.id} is {part} hardware"
    others = [ENGINE_NAMES[e] for e in ENGINES if e != engine and engine_refusal(e, gpu) is None]
    return f"{{subject}}: {why}" + (f" ({' and '.join(others)} run there)" if others else "")
