"""Which engines serve on which GPUs (hardware/profiles.py ENGINE_VENDORS, ENGINE_MIN_CC):
TensorRT-LLM's "Supported Hardware" page lists NVIDIA Blackwell, Hopper, Ada Lovelace and Ampere
parts only, while vLLM and SGLang ship ROCm builds for AMD Instinct GPUs too. A scenario that
pairs an engine with a GPU it does not run on is refused in one line that names the engines
that do, on every face: the scenario, `kernels predict`, the planner and the dashboard."""

from __future__ import annotations

import pytest

from rooflens.cli import main
from rooflens.hardware.engines import ENGINES, engine_refusal
from rooflens.hardware.errors import FieldError
from rooflens.hardware.presets import get_gpu, gpu_ids
from rooflens.model.predict.api import make_scenario

# The presets TensorRT-LLM does not run on, read off their datasheets: the AMD MI300X, and the
# V100 (Volta, compute capability 7.0: below the Ampere generation the page starts at).
NOT_TRTLLM = {"mi300x", "v100-sxm-32gb"}


@pytest.mark.parametrize("gpu", gpu_ids())
def test_tensorrt_llm_runs_on_the_nvidia_generations_it_lists(gpu: str) -> None:
    spec = get_gpu(gpu)
    assert (engine_refusal("trtllm", spec) is not None) == (gpu in NOT_TRTLLM)
    assert engine_refusal("vllm", spec) is None and engine_refusal("sglang", spec) is None
    if gpu not in NOT_TRTLLM:  # the premise, from the spec: an NVIDIA part of Ampere or newer
        assert spec.vendor == "nvidia" and float(spec.compute_capability or 0) >= 8.0


@pytest.mark.parametrize("gpu, why", [
    ("mi300x", "TensorRT-LLM runs on NVIDIA hardware only, and mi300x is AMD hardware"),
    ("v100-sxm-32gb", "TensorRT-LLM runs on compute capability 8.0 and newer, and "
                      "v100-sxm-32gb has 7.0"),
])  # fmt: skip
def test_a_scenario_pairing_tensorrt_llm_with_such_a_gpu_is_refused(gpu: str, why: str) -> None:
    with pytest.raises(FieldError) as info:
        make_scenario("llama-3-8b", gpu, engine="trtllm")
    assert info.value.field == "engine"
    others = "(vLLM and SGLang run there)"
    assert str(info.value) == f"invalid scenario: --engine trtllm: {why} {others}"
    assert info.value.worded("Engine").startswith(f"invalid scenario: “Engine” = trtllm: {why}")
    for engine in ENGINES[:2]:  # the engines it names do run there
        assert make_scenario("llama-3-8b", gpu, engine=engine).engine == engine


def test_every_cli_face_refuses_it_in_one_line(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    def _cli(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    table = tmp_path / "k.csv"
    table.write_text("op,m,n,k,dtype\ngemm,16,4096,4096,bf16\n")
    runs = {
        "predict": _cli("predict", "--model", "llama-3-8b", "--gpu", "mi300x", "--engine",
                        "trtllm"),
        "kernels": _cli("kernels", "predict", "--gpu", "mi300x", "--engine", "trtllm",
                        str(table)),
        "plan": _cli("plan", "--model", "llama-3-8b", "--gpus", "mi300x", "--rate", "2",
                     "--engine", "trtllm"),
    }  # fmt: skip
    for face, (code, out, err) in runs.items():
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and not out, (face, err)
        assert "TensorRT-LLM runs on NVIDIA hardware only" in lines[0], face
        assert "(vLLM and SGLang run there)" in lines[0], face
    # the planner skips the pair and plans the rest when other engines are searched
    code, out, err = _cli("plan", "--model", "llama-3-8b", "--gpus", "mi300x", "--rate", "2",
                          "--json")  # fmt: skip
    assert code == 0 and '"trtllm"' not in out and '"vllm"' in out, err
