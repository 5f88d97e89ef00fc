"""An ignite `Metric` (a subclass of `ignite.metrics.Metric`, or of any metric of that
package) has its `update(output)` run once per iteration of the engine it is attached to,
on the step's output: the model's outputs and targets, on the model's device, which the file
does not show. It accumulates on `self._device`, the CPU unless the metric was built with
another device: `batch_sum.to(self._device)` there is a copy to the host and a wait, once per
iteration, where the output is on the GPU. What is made on `y.device` of that output, or
returned by a helper handed it, is as much a guess as the output itself: each is a hint.
`reset()` and `compute()` run once per epoch; a class of the same shape that subclasses
nothing of ignite is the class's own, and so is an `update` whose output is annotated as
strings (`Sequence[str]`): a parameter annotated as host values holds no array, whatever a
caller passes."""

from collections.abc import Sequence

import torch
from ignite.metrics import Metric
from ignite.metrics.accuracy import Accuracy


class SumOfErrors(Metric):
    def reset(self):
        self._sum = torch.tensor(0.0, device=self._device)
        self._count = 0

    def update(self, output):
        y_pred, y = output[0].detach(), output[1].detach()
        if y.max() + 1 > self._num_classes:  # hint: GPU001
            raise ValueError("targets out of range")
        errors = torch.abs(y_pred - y.view_as(y_pred))
        self._sum += torch.sum(errors).to(self._device)  # hint: GPU001
        weights = torch.ones(y.shape[0], device=y.device)
        self._sum += (weights * self._scale(errors)).sum().to(self._device)  # hint: GPU001
        self._count += y.shape[0]

    def _scale(self, errors):
        return errors * torch.arange(errors.shape[-1], device=errors.device)

    def compute(self):
        return self._sum.item() / self._count  # must not: GPU001


class TopOneAccuracy(Accuracy):
    def update(self, output):
        y_pred, y = output
        correct = torch.eq(y_pred.argmax(dim=1).to(y), y)
        self._num_correct += correct.sum().to(self._device)  # hint: GPU001


def _distance(ref: str, pred: str) -> int:
    cost = 0
    for i in range(1, len(ref)):
        for j in range(1, len(pred)):
            cost += 0 if ref[i - 1] == pred[j - 1] else 1  # must not: GPU001
    return cost


class WordErrors(Metric):
    def update(self, output: Sequence[str]) -> None:
        y_pred, y = output[0], output[1]
        for p, r in zip(y_pred, y):
            if p != r:  # must not: GPU001
                self._errors += _distance(r, p)


class NotAMetric:
    def update(self, output):
        y_pred, y = output
        self._sum += torch.sum(y_pred - y).to(self._device)  # must not: GPU001
