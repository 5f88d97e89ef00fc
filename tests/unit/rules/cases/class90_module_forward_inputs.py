"""A module's `forward` runs once per call of the model, and a model is called once per
training or evaluation step: a host read of what the forward computes from its inputs
(`if mask.any():`, `.item()`, `.tolist()`, a mask's gather) is a wait per step when the
model is on the GPU. The file rarely shows that device, so these are hints ("if the value is
on the GPU"). Only the inputs the forward uses as tensors count (`x.shape`, `torch.f(x)`):
sizes and flags it is handed (`h, w`, `training=False`) stay unknown, and its helpers are
not told the guess. The classes are the file's `nn.Module` subclasses, subclasses of a base
from the package's own modules (`from .base import Kernel`), and autograd functions' static
`forward(ctx, ...)`. Code after `try: return ...` runs only when the try failed (an
out-of-memory retry): no per-step cost."""

import torch
from torch import nn

from .base import Kernel


class Field(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, mask, lengths, h, w, training=False):
        if mask.any():  # hint: GPU001
            x = self.proj(x)
        longest = lengths.max().item()  # hint: GPU001
        if h > w:  # must not: GPU001
            x = x.transpose(1, 2)
        if training:  # must not: GPU001
            x = x * 2
        scale = torch.ones(x.shape[0], device=x.device)
        for step in range(longest):
            if scale.sum() > step:  # hint: GPU001
                break
        return x.view(x.size(0), h * w, -1), self.summary(x)

    def summary(self, x):
        return float(x.mean())  # must not: GPU001


class RBF(Kernel):
    def forward(self, x1, x2, diag=False):
        if diag:
            if not (x1.shape == x2.shape and torch.eq(x1, x2).all()):  # hint: GPU001
                raise RuntimeError("the diagonal needs x1 == x2")
            return torch.ones(x1.shape[0], device=x1.device)
        if x1.size() == x2.size() and torch.eq(x1, x2).all():  # hint: GPU001
            return torch.zeros(x1.shape[0], x2.shape[0], device=x1.device)
        return torch.cdist(x1, x2)


class LogCDF(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z):
        near = z.abs() < 1e-3
        if near.sum() > 0:  # hint: GPU001
            z = torch.where(near, z + 1e-3, z)
        ctx.save_for_backward(z)
        return z.log()


class Assigner(nn.Module):
    def forward(self, scores, boxes):
        try:
            return self.assign(scores, boxes)
        except RuntimeError:
            pass
        # retried one image at a time, only after an out-of-memory error
        counts = boxes.sum(-1).tolist()  # must not: GPU001
        return [self.assign(scores[i], boxes[i, :n]) for i, n in enumerate(counts)]

    def assign(self, scores, boxes):
        return scores @ boxes.T
