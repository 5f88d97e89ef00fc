"""A metric's `update` runs once per batch of whoever evaluates with it (the framework's
convention: its tensors are on the model's device, which this file does not show). It hands
them to the validation helpers of another module, `checks.py`: the guess travels with them,
as a guess."""

import torch
from torchmetrics import Metric

from .checks import check_binary, check_labels, check_pairs, row_sums


class BinaryCounts(Metric):
    def __init__(self):
        super().__init__()
        self.add_state("hits", default=torch.tensor(0), dist_reduce_fx="sum")

    def update(self, preds, target):
        check_binary(preds, target)
        check_labels([preds, target])
        check_pairs(preds, target)
        self.hits += row_sums(preds).sum()
