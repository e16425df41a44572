"""Kernel-table prediction for the validator: model/pricing/kernel_table.py is the one kernel-table
predictor (the same operator constructors and pricing as the operator table); this module
keeps the validator's import path."""

from __future__ import annotations

from rooflens.model.pricing.kernel_table import Batch, batches, predict_frame

__all__ = ["Batch", "batches", "predict_frame"]
