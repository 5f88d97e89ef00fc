"""A metric's `update` runs once per batch (the framework's convention: its tensors are on
the model's device, which the file does not show) and hands them to a hook of its own,
`self._accumulate(...)`, which each kind of metric overrides. On an object of a subclass
the call runs the subclass's override, once per batch too: what it reads on the host is a
wait per batch, whether the subclass sits in this file or in another module that imports
the base. A subclass that overrides `update` itself does not run the base's; a method
the base never calls per batch is no step's. A subclass with a constructor of its own may
build the object otherwise (its data kept on the host, another device): the call still runs
its override per batch, but what the base passes is not known for it."""

import torch
from torchmetrics import Metric


class Counted(Metric):
    def __init__(self):
        super().__init__()
        self.add_state("total", default=torch.tensor(0.0), dist_reduce_fx="sum")

    def update(self, preds, target):
        preds, target = preds.detach(), target.detach()
        self._accumulate(preds, target)

    def _accumulate(self, preds, target):
        if (target < 0).any():  # hint: GPU001
            raise ValueError("negative labels")
        self.total += (preds == target).sum()

    def compute(self):
        return self.total


class Squared(Counted):
    def _accumulate(self, preds, target):
        if (preds > 1).any():  # hint: GPU001
            raise ValueError("scores above one")
        self.total += ((preds - target) ** 2).sum()


class Direct(Counted):
    def update(self, preds, target):
        self.total += (preds - target).abs().sum()

    def _accumulate(self, preds, target):
        if (preds > 1).any():  # must not: GPU001
            raise ValueError("never run by update")
        self.total += preds.sum()


class Offloaded(Counted):
    def __init__(self):
        super().__init__()
        self.on_host = True

    def _accumulate(self, preds, target):
        if (preds > 1).any():  # must not: GPU001
            raise ValueError("scores above one")
        self.total += preds.sum()
