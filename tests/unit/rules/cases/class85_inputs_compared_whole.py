"""`torch.equal(a, b)` and `torch.allclose(a, b)` hand back a Python bool: the comparison runs
on the device and its answer is copied to the host, so the call waits for every kernel queued
before it. Pairwise kernels and attention layers use it to spot symmetric inputs (the same
points on both sides) on every forward; `torch.eq(a, b).all()` tested by an `if` is the same
read. In a loop over GPU values that is a wait per iteration (a warning). In a module's
`forward` or `__call__`, and in the methods of its class it calls, the test runs on every call
of the module, once per step of whoever trains or evaluates it: a wait per step when the
inputs are on the GPU, which the file does not show (a hint). A `__call__` counts where it
wraps the base's call (`super().__call__(...)`, which runs the forward); one of its own is an
object's entry, a pipeline's run once per generation. An assert's test is a hint (a check,
which `python -O` drops). An identity test (`x1 is x2`) or
a flag the caller passes costs nothing; a comparison made once (in a constructor, an
initialisation from data, after the loop) is no cost; host data compared is no GPU read."""

import numpy as np
import torch
from torch import nn

from .base import Kernel  # a base class from another file: the file cannot tell what it is


class ScaledDistanceKernel(Kernel):
    def __init__(self, anchors):
        super().__init__()
        self.same_anchors = torch.equal(anchors, anchors.flip(0))  # must not: GPU001

    def initialize_from_data(self, train_x, train_y):
        if torch.equal(train_x, train_y):  # must not: GPU001
            raise ValueError("inputs and targets are the same tensor")

    def _distance(self, x1, x2):
        symmetric = torch.equal(x1, x2)  # hint: GPU001
        res = torch.cdist(x1, x2)
        if symmetric:
            res = 0.5 * (res + res.transpose(-1, -2))
        return res

    def forward(self, x1, x2, diag=False):
        if diag and torch.allclose(x1, x2):  # hint: GPU001
            return torch.zeros(x1.shape[:-1], dtype=x1.dtype, device=x1.device)
        covar = self._distance(x1, x2).div(-2).exp()
        if x1.shape == x2.shape and torch.eq(x1, x2).all():  # hint: GPU001
            covar = 0.5 * (covar + covar.transpose(-1, -2))
        return covar


class CachedInputsModel(ScaledDistanceKernel):
    def __init__(self, anchors, train_inputs):
        super().__init__(anchors)
        self.train_inputs = train_inputs

    def __call__(self, *inputs):
        # wraps the module call, which runs the forward
        if not all(torch.equal(a, b) for a, b in zip(inputs, self.train_inputs)):  # hint: GPU001
            raise RuntimeError("train on the training inputs")
        return super().__call__(*inputs)


class TextToImage:
    def __call__(self, prompt_ids, truncated_ids):
        # an entry of its own (once per generation, on token ids the tokenizer made)
        if not torch.equal(prompt_ids, truncated_ids):  # must not: GPU001
            print("the prompt was truncated")
        return prompt_ids


class CrossAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, 3 * dim)

    def forward(self, query, key, shared=False):
        if query is key or shared:  # must not: GPU001
            return self.proj(query)
        same_grid = np.array_equal(np.arange(4), np.arange(4))  # must not: GPU001
        return self.proj(query) + self.proj(key) * float(same_grid)


def train(model, loader, optimizer, reference, device=torch.device("cuda")):
    reference = reference.to(device)
    for x, y in loader:
        x = x.to(device, non_blocking=True)
        seen = torch.equal(x, reference)  # expect: GPU001
        if seen:
            continue
        assert not torch.equal(x, x.flip(0))  # hint: GPU001
        loss = (model(x) - y.to(device, non_blocking=True)).pow(2).mean()
        loss.backward()
        optimizer.step()
    return torch.allclose(model(reference), reference)  # must not: GPU001
