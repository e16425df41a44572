"""The prediction `validate e2e` compares against (validate/e2e/predict.py): its device time is
the pipeline's own TTFT and TPOT for the same scenario (a second route through
model/predict/api.py's
`run`), the host term on top is model/pricing/host.py's, and the memory check refuses what does not
fit
while naming a depth that does."""

from __future__ import annotations

import pytest

from rooflens.hardware.errors import RooflensError
from rooflens.model.ops.table import decode_ops
from rooflens.model.predict.api import make_scenario, run
from rooflens.model.pricing.host import HOST_OP, host_time_s
from rooflens.model.specs.presets import get_model
from rooflens.validate.e2e.predict import (
    RunSetup,
    check_memory,
    memory_needed_bytes,
    predict_phase,
    prefill_chunks,
)


def _setup(model: str, overlapped: bool = True, per_launch_s: float = 8e-6) -> RunSetup:
    return RunSetup(get_model(model), "h100-sxm", "calibrated", "bf16", per_launch_s, overlapped)


@pytest.mark.parametrize(("batch", "context", "steps"), [(1, 1024, [1]), (5, 4096, [2, 2, 1])])
def test_device_time_is_the_pipelines_ttft_and_tpot(batch, context, steps):
    setup = _setup("llama-3-8b")
    assert prefill_chunks(batch, context) == steps  # whole prompts, ≤ 8192 tokens a step

    def predicted(b: int):  # output_len = 2: one prefill, one decode step over context + 1
        sc = make_scenario(
            "llama-3-8b",
            "h100-sxm",
            batch=b,
            prompt_len=context,
            output_len=2,
            profile="calibrated",
        )
        return run(sc)

    prefill = predict_phase(setup, "prefill", batch, context, graphed=False)
    decode = predict_phase(setup, "decode", batch, context, graphed=True)
    ttft = sum(predicted(b).ttft_s for b in steps)
    for phase, expected in ((prefill, ttft), (decode, predicted(batch).tpot_s)):
        device = sum(s for name, s in phase.ops.items() if name != HOST_OP)
        assert device == pytest.approx(expected, rel=1e-9)
        assert phase.total_s == pytest.approx(device + phase.ops[HOST_OP])


def test_eager_decode_at_batch_1_is_host_bound_and_a_graph_is_not():
    sc = make_scenario("llama-3-8b", "h100-sxm", batch=1, prompt_len=1024, output_len=2)
    slow_host = _setup("llama-3-8b", per_launch_s=60e-6)  # Python-launched kernels
    eager = predict_phase(slow_host, "decode", 1, 1024, graphed=False)
    device = eager.total_s - eager.ops[HOST_OP]
    host = host_time_s(decode_ops(sc, 1025.0), 60e-6)
    # host-bound at 60 µs a launch, the 32 split attention calls run unsplit: their combine
    # launches cost the host more than they save the GPU (model/pricing/host.py)
    host -= 32 * 60e-6
    assert eager.ops[HOST_OP] == pytest.approx(host - device) and host > device
    assert predict_phase(slow_host, "decode", 1, 1024, graphed=True).ops[HOST_OP] == 0.0
    cpu = _setup("llama-3-8b", overlapped=False, per_launch_s=10e-6)
    # not overlapped, every launch adds to the step: the 32 combines cost 0.32 ms of host time,
    # more than unsplit attention adds to the GPU's, so the step runs it unsplit
    assert predict_phase(cpu, "decode", 1, 1024, graphed=False).ops[HOST_OP] == pytest.approx(
        host_time_s(decode_ops(sc, 1025.0), 10e-6) - 32 * 10e-6
    )


def test_memory_check_refuses_with_a_depth_that_fits():
    setup = _setup("llama-3-70b")
    free = 40e9
    with pytest.raises(RooflensError, match=r"needs .* GB .* use --layers (\d+)") as err:
        check_memory(setup, batch=8, context=4096, layers=80, free_bytes=free, where="this GPU")
    layers = int(str(err.value).rsplit("--layers ", 1)[1])
    assert memory_needed_bytes(setup, 8, 4096, layers, 1.5 * 2**30) <= free
    assert memory_needed_bytes(setup, 8, 4096, 2 * layers, 1.5 * 2**30) > free
    # fewer layers never need more memory
    assert memory_needed_bytes(setup, 8, 4096, 1, 0.0) < memory_needed_bytes(setup, 8, 4096, 2, 0.0)
