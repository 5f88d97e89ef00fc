"""A module's forward runs once per step of whoever trains or evaluates it, on the GPU once the
user moves the model and data there. A read to the host inside it (`.item()`, `.tolist()`)
waits for the GPU on every call: a flag kept in a buffer (`self.initialized.item()`, read
only to know whether a one-time setup ran), the bounds of the inputs read to check them.
The file of a library's module never shows the device (its user decides), so this is a hint.
The forward is `forward`, a `__call__` that wraps the module call (`super().__call__(...)`,
`Base.__call__(self, ...)`, `self.forward(...)`), or a method of the class one of them calls.
A constructor's read, a `__call__` of its own (an entry run once per generation), a method
the forward does not call, and host values (`len(x)`, NumPy results) are no such cost.

The same holds for a function a loop calls once per step that runs the backward pass itself:
its loss is an autograd tensor on the model's device, whatever the file shows of that device
(a hint, as a loop that runs the backward pass in its own body already says)."""

import numpy as np
import torch

from .base import Module, Strategy  # bases from another file: the file cannot tell what they are


class LazyStrategy(Strategy):
    def __init__(self, points):
        super().__init__()
        self.register_buffer("initialized", torch.tensor(0))
        self.first = points.max().item()  # must not: GPU001

    def _setup(self, x):
        if not self.initialized.item():  # hint: GPU001
            self.initialized.fill_(1)

    def __call__(self, x, prior=False):
        self._setup(x)
        if self.updated.item():  # hint: GPU001
            return Strategy.__call__(self, x, prior=prior)
        return super().__call__(x)

    def summary(self, x):
        return x.mean().item()  # must not: GPU001


class GridKernel(Module):
    def forward(self, x1, x2):
        hi = x1.max(0)[0].tolist()  # hint: GPU001
        sizes = np.asarray([len(x1), len(x2)]).tolist()  # must not: GPU001
        return torch.cdist(x1, x2) * hi[0] * sizes[0]


class Sampler:
    def __call__(self, latents, steps):
        # an entry of its own: once per generation
        top = latents.abs().max().item()  # must not: GPU001
        return latents / top



class TrainingLoop:
    def _forward_pass(self, batch, start, stop):
        loss = self.process_batch(batch, start, stop)
        loss.backward()
        return loss.item()  # hint: GPU001

    def _summary(self, batch):
        return self.process_batch(batch, 0, 1).item()  # must not: GPU001

    def train_epoch(self, batches, sub_batch):
        total = 0.0
        for batch in batches:
            for start in range(0, len(batch), sub_batch):
                total += self._forward_pass(batch, start, start + sub_batch)
            self.optimizer.step()
        return total
