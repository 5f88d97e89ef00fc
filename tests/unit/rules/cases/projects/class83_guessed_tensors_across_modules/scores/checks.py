"""Validation helpers a metric's `update` calls on every batch: each `if` on a reduction of
a device tensor copies one value to the host and waits for the GPU, once per batch. The
parameters annotated as one tensor receive the caller's guess (hints: neither file proves
the device); a parameter annotated as a list, or not annotated, says nothing of what the
callee reads, and iterating a tensor in chunks is no element-wise loop (not known for one
array here)."""

from typing import List

import torch
from torch import Tensor


def check_binary(preds: Tensor, target: torch.Tensor) -> None:
    if target.max() > 1:  # hint: GPU001
        raise ValueError("target must be binary")
    if not preds.is_floating_point():
        if torch.any((preds != 0) & (preds != 1)):  # hint: GPU001
            raise ValueError("label preds must be binary")


def check_labels(tensors: List[Tensor]) -> None:
    for t in tensors:
        if t.max() > 1:  # must not: GPU001
            raise ValueError("labels out of range")


def check_pairs(preds, target) -> None:
    if (preds < 0).any():  # must not: GPU001
        raise ValueError("negative scores")


def row_sums(preds: Tensor) -> Tensor:
    return torch.stack([chunk.sum() for chunk in preds.split(64)])  # must not: GPU009
