"""A custom autograd function's static `backward(ctx, *grads)` runs on every backward pass
through a call of its `apply`: once per training step when the forward is in the model. What
it reads of `ctx.saved_tensors` are the tensors its forward saved, on the device of the
forward's inputs, so a host read of them there (`if mask.sum() > 0:`, a boolean-mask gather
`x[mask]`, `.item()`) is a wait per step when the model is on the GPU. The file rarely shows
that device: hints. A module's own method named `backward` is no hook torch runs, and a
backward that reads only what its forward kept as Python numbers (`ctx.scale`) reads
nothing back."""

import torch
from torch import nn


class SoftClamp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        ctx.save_for_backward(x)
        return x.clamp(-scale, scale)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        inside = x.abs() < ctx.scale
        if inside.sum() > 0:  # hint: GPU001
            grad_out = grad_out * inside
        beyond = ~inside
        outside = x[beyond]  # hint: GPU001
        if ctx.scale > 1:  # must not: GPU001
            grad_out = grad_out / ctx.scale
        return grad_out + outside.mean(), None


class StraightThrough(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits):
        ctx.save_for_backward(logits)
        return (logits > 0).float()

    @staticmethod
    def backward(ctx, grad):
        (logits,) = ctx.saved_variables
        largest = logits.abs().max().item()  # hint: GPU001
        return grad / max(largest, 1.0)


class Tracker(nn.Module):
    def __init__(self):
        super().__init__()
        self.total = torch.zeros(())

    def backward(self, loss):
        # called by hand, not by autograd: no per-step hook the file shows
        if self.total.sum() > 0:  # must not: GPU001
            self.total.zero_()
        return loss
