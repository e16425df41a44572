"""Step costs of one replica as the simulation (sim.py) reads them: the StepCosts protocol and
CurveCosts, its implementation on a priced group's curves (curves.py)."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from rooflens.model.planner.curves import Curves
from rooflens.model.predict.pp_schedule import stage_hold_s, stage_share_s


class StepCosts(Protocol):
    """Step costs of one replica. A decode step gives each running sequence one token; under a
    step-structure optimization it is a 1/τ share of an iteration that gives τ tokens and
    feeds the target w rows per sequence (`tokens_per_step`, `rows_per_sequence`)."""

    tokens_per_step: float
    rows_per_sequence: float
    prompt_row_fraction: float  # prompt rows computed per prompt token (1 − prefix-cache hit)

    def decode_s(self, batch: int, kv_tokens: np.ndarray) -> np.ndarray: ...

    def mixed_s(
        self, batch: int, kv_tokens: float, prompt_tokens: float, extra_s: float
    ) -> float: ...

    def prefill_s(self, prompt_tokens: np.ndarray) -> np.ndarray: ...

    def prefill_hold_s(self, prompt_tokens: np.ndarray) -> np.ndarray:
        """How long each prompt's prefill holds the first pipeline stage (all of prefill_s
        without PP)."""
        ...

    def prefill_extra_s(self, prompt_tokens: np.ndarray) -> np.ndarray:
        """A prompt's work outside the body rows (attention, side models), one stage's share
        of it: what a chunked prompt adds to the steps it rides in."""
        ...

    def target_tokens(self, prompt_tokens: np.ndarray) -> np.ndarray: ...


class CurveCosts:
    """StepCosts of a priced group: the same curves the analytical model reads. Prompt lengths
    are the requests'; `target_tokens` maps them to what the target prefills."""

    def __init__(self, c: Curves):
        self.c, self.pp = c, c.group.pp
        self.tokens_per_step, self.rows_per_sequence = c.tokens_per_step, c.rows_per_sequence
        self.prompt_row_fraction = c.prompt_row_fraction

    def _slope(self, batch: float) -> float:
        return float(np.interp(batch, self.c.tokens, self.c.decode_s_per_kv_token))

    def decode_s(self, batch: int, kv_tokens: np.ndarray) -> np.ndarray:
        c = self.c
        at_mean = float(np.interp(batch, c.tokens, c.decode_s))
        return at_mean + self._slope(batch) * (kv_tokens - batch * c.kv_len_mean)

    def mixed_s(self, batch: int, kv_tokens: float, prompt_tokens: float, extra_s: float) -> float:
        """One iteration (τ tokens per running sequence) carrying `prompt_tokens` prompt rows."""
        c = self.c
        rows = batch * self.rows_per_sequence
        base = float(np.interp(rows, c.tokens, c.body_s)) if rows else 0.0
        chunk = float(np.interp(rows + prompt_tokens, c.tokens, c.body_s)) - base
        # decode_s holds the per-iteration host overhead (profile.py); a step of prompt rows
        # only pays it on its own
        own = float(self.decode_s(batch, np.asarray(kv_tokens))) if batch else 0.0
        extra_s += 0.0 if batch else c.step_overhead_s
        return self.tokens_per_step * own + chunk + extra_s

    def prefill_s(self, prompt_tokens: np.ndarray) -> np.ndarray:
        return np.interp(prompt_tokens, self.c.prefill_grid_tokens, self.c.prefill_grid_s)

    def prefill_hold_s(self, prompt_tokens: np.ndarray) -> np.ndarray:
        c = self.c
        hop = np.interp(prompt_tokens, c.prefill_grid_tokens, c.prefill_hop_grid_s)
        return np.asarray(stage_hold_s(self.prefill_s(prompt_tokens), hop, self.pp))

    def prefill_extra_s(self, prompt_tokens: np.ndarray) -> np.ndarray:
        c = self.c
        extra = np.interp(prompt_tokens, c.prefill_grid_tokens, c.prefill_extra_grid_s)
        return np.asarray(stage_share_s(extra, self.pp))

    def target_tokens(self, prompt_tokens: np.ndarray) -> np.ndarray:
        c = self.c
        return np.interp(prompt_tokens, c.prefill_grid_tokens, c.prefill_grid_target_tokens)
