"""A segmentation metric's `update`, once per batch: its tensors are on the model's device by
the framework's convention (a guess), handed to `matching.py`."""

import torch
from torchmetrics import Metric

from .matching import match_segments


class SegmentQuality(Metric):
    def __init__(self):
        super().__init__()
        self.add_state("matched", default=torch.tensor(0.0), dist_reduce_fx="sum")

    def update(self, preds, target):
        for pred, true in zip(preds, target):
            self.matched += match_segments(pred, true)
