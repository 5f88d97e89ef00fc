"""Values kept in one place and read back in another, per step.

A custom autograd function's static `backward(ctx, *grads)` runs on every backward pass
through a call of its `apply`: once per training step when the forward is in the model. What
it reads of `ctx.saved_tensors` are the tensors its forward saved, on the device of the
forward's inputs, so a host read of them there (`if mask.sum() > 0:`, a boolean-mask gather
`x[mask]`, `.item()`) is a wait per step when the model is on the GPU. The file rarely shows
that device: hints. A module's own method named `backward` is no hook torch runs, and a
backward that reads only what its forward kept as Python numbers (`ctx.scale`) reads
nothing back.

A record class made by a call (`collections.namedtuple("Coefficients", "weights, nodes")`,
`typing.NamedTuple("State", [("t", Tensor), ...])`) keeps what it is built with, field by
field, as a written `class State(NamedTuple)` does: a field built from a GPU tensor holds a
GPU tensor wherever the object goes (a method's attribute, an argument). So iterating one
of its fields in a solver's per-step loop, and testing its elements, waits for the GPU every
stage of every step, while a field built from host numbers stays on the host."""

import collections
import typing

import torch
from torch import nn

Coefficients = collections.namedtuple("Coefficients", "weights, nodes, order")
State = typing.NamedTuple("State", [("t", torch.Tensor), ("y", torch.Tensor)])


def _stage_sum(f, y, t, dt, coefficients):
    total = torch.zeros_like(y)
    for weight in coefficients.weights:  # expect: GPU009
        if weight == 0.0:  # expect: GPU001
            continue
        total = total + weight * f(t, y)
    for node in coefficients.order:  # must not: GPU009
        if node == 0:  # must not: GPU001
            continue
        total = total + node * dt
    return y + dt * total


class Integrator:
    def __init__(self, f, device):
        self.f = f
        self.coefficients = Coefficients(
            weights=torch.tensor([0.5, 0.0, 0.5], device=device),
            nodes=torch.tensor([0.0, 1.0], device=device),
            order=[0, 1, 2],
        )
        self.state = State(t=torch.zeros((), device=device), y=torch.ones(3, device=device))

    def run(self, steps, dt):
        state = self.state
        for _ in range(steps):
            y = _stage_sum(self.f, state.y, state.t, dt, coefficients=self.coefficients)
            state = State(t=state.t + dt, y=y)
            if state.t > 0.5:  # expect: GPU001
                dt = dt / 2
        return state


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
