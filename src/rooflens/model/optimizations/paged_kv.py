"""`paged-kv:block=B[,samples=N]` and `contiguous-kv[:max_len=M]`: how KV-cache memory is
reserved per request, and so how many requests fit at once.

Mechanism (Kwon et al. 2023, "Efficient Memory Management for LLM Serving with PagedAttention",
§3 and §4). Systems before vLLM reserve one contiguous KV region per request sized for the
longest sequence it may reach (Orca, FasterTransformer, HF static caches): a request holding t
tokens occupies M slots, so only t/M of KV memory holds real state (vLLM measured 20.4–38.2 %).
Paging allocates fixed blocks of b tokens on demand: at most one partly filled block per
sequence, waste < b tokens (vLLM: under 4 %). Parallel samples of one prompt share its blocks
(copy-on-write on the last, partly filled one) and the prompt is prefilled once.

Formulas, per sequence holding t tokens of which P are the prompt, b the block, n samples:
    contiguous:  held = M (the reservation, M = the model's max context unless given)
    paged:       held = ⌊P/b⌋·b / n + ⌈(t − ⌊P/b⌋·b) / b⌉·b       (n = 1: ⌈t/b⌉·b)
    prefill with sharing: every per-token quantity × ⌈B/n⌉/B (weights read once either way)
The default table holds exactly t tokens (paging with no rounding); paged-kv:block=1,samples=1
is the identity. Max batch follows from held tokens (model/predict/memory.py), so does throughput.

Limits: external fragmentation of contiguous allocators and vLLM's reservation of KV blocks for
sequences still to be scheduled are not modelled; with a sliding window shared prompt blocks are
assumed to stay resident; sharing applies to the prompt only (beam search shares more).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from rooflens.hardware.errors import RooflensError
from rooflens.model.ops.op import Num, Op
from rooflens.model.optimizations.base import Optimization, Param
from rooflens.model.predict.steps import Step

if TYPE_CHECKING:
    from rooflens.model.predict.scenario import Scenario


def paged_tokens(tokens: Num, prompt: float, block: int, samples: int) -> Num:
    """KV slots a sequence holds under paging with prompt sharing among `samples` sequences."""
    t = np.asarray(tokens, dtype=np.float64)
    shared = np.minimum(np.floor(prompt / block) * block, t)
    own = np.ceil((t - shared) / block) * block
    out = shared / samples + own
    return float(out) if np.ndim(out) == 0 else out


def kv_window_tokens(sc: Scenario) -> int:
    """Positions a sequence can ever hold: the window (+ sinks) if any, else 0 (unbounded)."""
    return sc.applied.kv_window_tokens or sc.model.sliding_window


class PagedKV(Optimization):
    name = "paged-kv"
    summary = "paged KV blocks: at most one partly filled block per sequence; prefix sharing"
    citation = "Kwon et al. 2023, vLLM/PagedAttention (SOSP'23) §4"
    order = 70  # KV layout: after every table transform (scales the prefill linearly)
    params: ClassVar[dict[str, Param]] = {
        "block": Param(int, 16, "tokens per KV block (vLLM default 16)", lo=1),
        "samples": Param(int, 1, "parallel samples per prompt sharing its KV blocks", lo=1),
    }

    def group(self, sc: Scenario) -> int:
        """Sequences sharing one prompt: `samples`, at most the batch."""
        return min(self["samples"], sc.workload.batch)

    def kv_tokens_per_sequence(self, tokens: Num, sc: Scenario) -> Num:
        prompt = float(sc.workload.prompt_len)
        return paged_tokens(tokens, prompt, self["block"], self.group(sc))

    def ops(self, ops: list[Op], sc: Scenario, step: Step) -> list[Op]:
        """The shared prompt is prefilled once per group: ⌈B/n⌉ of the B sequences."""
        if self["samples"] == 1 or step.phase != "prefill":
            return ops
        B = np.asarray(step.B, dtype=np.float64)
        f = np.ceil(B / np.minimum(self["samples"], B)) / B
        return [
            op.scaled(flops=f, act_bytes=f, kv_bytes=f, comm_bytes=f, live_bytes=f, vector_flops=f)
            for op in ops
        ]


class ContiguousKV(Optimization):
    name = "contiguous-kv"
    summary = "switch paging off: each request reserves KV for the maximum length up front"
    citation = "Kwon et al. 2023, vLLM (SOSP'23) §3: 20.4-38.2% of KV memory holds tokens"
    order = 70  # KV layout
    switches_off: ClassVar[str] = "paged KV cache"
    params: ClassVar[dict[str, Param]] = {
        "max_len": Param(int, 0, "tokens reserved per request (0 = the model's max context)", lo=0),
    }

    def reserved_tokens(self, sc: Scenario) -> int:
        reserve = self["max_len"] or sc.model.max_context
        if reserve < sc.context_tokens:
            raise RooflensError(
                f"--opt contiguous-kv: max_len={reserve} is shorter than the sequence "
                f"({sc.context_tokens} positions); raise max_len"
            )
        window = kv_window_tokens(sc)
        return min(reserve, window) if window else reserve

    def kv_tokens_per_sequence(self, tokens: Num, sc: Scenario) -> Num:
        # a sequence that holds nothing (no KV cache) reserves nothing
        out = np.where(np.asarray(tokens) > 0, float(self.reserved_tokens(sc)), 0.0)
        return float(out) if np.ndim(out) == 0 else out
