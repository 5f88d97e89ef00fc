"""A record class made by a call (`collections.namedtuple("Coefficients", "weights, nodes")`,
`typing.NamedTuple("State", [("t", Tensor), ...])`) keeps what it is built with, field by
field, as a written `class State(NamedTuple)` does: a field built from a GPU tensor holds a
GPU tensor wherever the object goes (a method's attribute, an argument). So a test of one of
its elements in a solver's per-step loop waits for the GPU every stage of every step, while
a field built from host numbers stays on the host."""

import collections
import typing

import torch

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
