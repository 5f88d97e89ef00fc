"""A subclass of the base metric in another module: the base's `update`, which it inherits,
runs its override of `_accumulate` once per batch, with the batch's tensors (kept as the
guess they are where the override's parameters say they take tensors, as any call from
another module)."""

from torch import Tensor

from .base import Counted


class Spread(Counted):
    def _accumulate(self, preds: Tensor, target: Tensor):
        if (preds.std() > 10).item():  # hint: GPU001
            raise ValueError("too spread")
        self.total += preds.std()

    def describe(self, preds):
        if (preds > 0).all():  # must not: GPU001
            return "positive"
        return "mixed"
