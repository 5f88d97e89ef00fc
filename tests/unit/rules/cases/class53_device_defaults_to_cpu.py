"""A device that defaults to the CPU is no evidence of a GPU: a metric that keeps its state
on `self._device`, which its constructor's `device="cpu"` sets (or hands to the base class
that stores it), computes on the CPU unless a caller says otherwise. Its name alone does
not make it a GPU device."""

import torch

from somewhere import Metric


def gather(tensors, device):
    return torch.cat(tensors) if tensors else torch.empty(0, device=device)


class Gathered:
    def __init__(self, num_classes, device="cpu"):
        self._device = device
        self._num_classes = num_classes
        self._scores = []

    def compute(self):
        scores = gather(self._scores, self._device)
        for cls in range(self._num_classes):
            if scores[cls].sum() == 0:  # must not: GPU001
                continue
        return scores


class Accumulator:
    def __init__(self, num_classes, device=torch.device("cpu")):
        self._device = torch.device(device)
        self._num_classes = num_classes

    def compute(self, scores):
        scores = scores.to(self._device)
        out = torch.zeros(self._num_classes, device=self._device)
        for cls in range(self._num_classes):
            if scores[cls].sum() == 0:  # must not: GPU001
                continue
            out[cls] = scores[cls].mean()  # must not: GPU009
        return out


class AveragePrecision(Metric):
    def __init__(self, num_classes, device: str | torch.device = "cpu"):
        super().__init__(device=device)
        self._num_classes = num_classes

    def compute(self, labels):
        labels = labels.to(self._device)
        out = torch.zeros(self._num_classes, device=self._device)
        for cls in range(self._num_classes):
            if sum(labels == cls) == 0:  # must not: GPU001
                continue
            out[cls] = 1.0  # must not: GPU009
        return out


def scale(values, steps, device="cpu"):
    values = values.to(device)
    for _ in range(steps):
        print(values.max().item())  # must not: GPU001
    return values


class OnTheGpu:
    def __init__(self, num_classes, device="cuda"):
        self._device = torch.device(device)
        self._num_classes = num_classes
        self._scores = []

    def compute(self):
        scores = gather(self._scores, self._device)
        for cls in range(self._num_classes):
            if scores[cls].sum() == 0:  # expect: GPU001
                continue
        return scores
