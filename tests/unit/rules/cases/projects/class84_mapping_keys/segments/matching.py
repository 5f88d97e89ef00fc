"""Segments matched per sample through dicts from host keys (ids copied once with `tolist`)
to device pixel counts. Iterating such a dict, or a set of its keys, hands out the host keys:
comparing them costs nothing; the counts it maps them to are still on the device, and each
comparison of those waits for the GPU (hints: the device is the caller's guess)."""

from typing import cast

import torch
from torch import Tensor


def areas(ids: Tensor) -> dict[int, Tensor]:
    keys, counts = torch.unique(ids, return_counts=True)  # hint: GPU001
    return dict(zip(keys.tolist(), counts))  # hint: GPU001


def unmatched(pred_areas: dict[int, Tensor], matched: set[int]):
    for key in set(pred_areas) - matched:  # must not: GPU009
        if pred_areas[key] > 10:  # hint: GPU001
            yield key


def overlap(key: int, pred_areas, true_areas) -> Tensor:
    if key == 0:  # must not: GPU001
        raise ValueError("void segment")
    return pred_areas[key] / true_areas[key]


def match_segments(pred: Tensor, true: Tensor) -> Tensor:
    pred_areas = cast(dict[int, Tensor], areas(pred))
    true_areas = cast(dict[int, Tensor], areas(true))
    matched = set()
    total = torch.zeros((), device=pred.device)
    for key in pred_areas:  # must not: GPU009
        if key < 0:  # must not: GPU001
            continue
        if key in true_areas and overlap(key, pred_areas, true_areas) > 0.5:  # hint: GPU001
            matched.add(key)
            total += 1
    for key in unmatched(pred_areas, matched):
        total -= 1
    return total
