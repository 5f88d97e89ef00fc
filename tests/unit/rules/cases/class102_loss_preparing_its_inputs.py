"""A loss class often has methods that shape what a training loop hands it before the loss
is computed: pick the positive and negative scores out of a dense label matrix, then
`return self(pos, neg)`. Such a method runs as often as the loss's forward, once per
training step, on the step's tensors: its `nonzero()` and boolean-mask picks each wait
for the GPU to count the result. The file does not show the device the loop's tensors are
on, so these are hints, on the required inputs only (an optional filter or weight may
never come). A method of the loss that does not end in a call of the loss itself (a
summary, a description) is not a step, nor is such a method of a class that is no loss."""

import torch
from torch import nn


class PairMarginLoss(nn.Module):
    def __init__(self, margin=1.0):
        super().__init__()
        self.margin = margin

    def forward(self, pos, neg):
        return torch.relu(self.margin + neg - pos).mean()

    def from_label_matrix(self, scores, labels, weights=None):
        rows = (labels > 0).nonzero()[:, 0]  # hint: GPU001
        negatives = scores[rows][labels[rows] == 0]  # hint: GPU001
        positives = scores[labels > 0]  # hint: GPU001
        if weights is not None:
            keep = weights[weights > 0]  # must not: GPU001
            positives = positives * keep.mean()
        return self(positives, negatives)

    def describe(self, scores, labels):
        picked = scores[labels > 0]  # must not: GPU001
        return f"{picked.numel()} positives"


class Scorer(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, 1)

    def forward(self, x):
        return self.proj(x)

    def score_positives(self, x, labels):
        return self(x[labels > 0])  # must not: GPU001
