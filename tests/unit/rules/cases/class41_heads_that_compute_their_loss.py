"""A module whose `forward` computes the training loss with a method of its own (a detection
head's `return self.get_losses(...)` in training) is called once per training step, like a
loss class: what its forward computes from its inputs is on the model's device if the model
is on one (which the file does not show), so a per-element loop over it is a hint."""

import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, channels, classes):
        super().__init__()
        self.pred = nn.Conv2d(channels, classes, 1)

    def forward(self, features, targets=None):
        outputs = self.pred(features).flatten(2)
        if self.training:
            return self.get_losses(outputs, targets)
        return outputs

    def get_losses(self, outputs, targets):
        losses = []
        for image in range(outputs.shape[0]):
            losses.append(self.assign(outputs[image], 4))
        return torch.stack(losses).mean()

    def assign(self, cost, count):
        matched = torch.zeros_like(cost)
        for row in range(count):
            _, picked = torch.topk(cost[row], k=3)
            matched[row, picked] = 1  # hint: GPU009
        return matched.sum()


class Block(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3)

    def forward(self, x):
        rows = []
        for row in range(4):
            rows.append(x[row].relu())
        return torch.stack(rows)
