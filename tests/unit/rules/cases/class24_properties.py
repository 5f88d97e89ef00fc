"""A property is read as an attribute: `self.device`, where the class defines `device` as a
`@property` returning its model's device, is that device (not a method object), so what
is made there is on the GPU; a property returning a GPU tensor is a GPU tensor. A property
returning a host value stays a host value, and a method that is no property is still a
method."""

import functools

import torch
from torch import nn


class Diffusion(nn.Module):
    def __init__(self, model, steps):
        super().__init__()
        self.model = model
        self.steps = steps

    @property
    def device(self):
        return next(self.model.parameters()).device

    @functools.cached_property
    def schedule(self):
        return torch.linspace(1.0, 0.0, self.steps + 1, device=self.device)

    @property
    def num_steps(self):
        return len(self.steps_list)

    def sample_step(self, x, time, time_next):
        x = self.model(x, time)
        if time_next == 0:  # hint: GPU001
            return x
        return x + torch.randn_like(x)

    @torch.no_grad()
    def sample(self, shape):
        x = torch.randn(shape, device=self.device)
        times = torch.linspace(1.0, 0.0, self.steps + 1, device=self.device)
        for i in range(self.steps):
            x = self.sample_step(x, times[i], times[i + 1])
            print(f"{times[i].item():.3f}")  # expect: GPU001
        return x

    def sample_cached(self, x):
        for i in range(self.steps):
            sigma = self.schedule[i].item()  # expect: GPU001
            x = self.model(x, sigma)
            if self.num_steps > 3:  # must not: GPU001
                x = x * 2
        return x


class Plain:
    def device(self):
        return "cpu"

    def run(self, xs):
        for x in xs:
            t = torch.zeros(3, device=self.device)  # must not: GPU001
            print(t.sum().item())  # must not: GPU001


class Wrapper:
    def __init__(self, state):
        self.state = state

    @property
    def device(self):
        return self.state.device

    def prepare(self, model, pattern):
        # the model moved to the property's device is a module, not an array
        model = model.to(self.device)
        for name, module in model.named_modules():
            if pattern.fullmatch(name):  # must not: GPU001
                module.to(self.device)
        # a few modules, picked from the model's own: no per-item copies
        for metric in (m for m in model.modules() if hasattr(m, "update")):
            metric.to(self.device)  # must not: GPU002
        return model


class Sampler(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    @property
    def device(self):
        return next(self.net.parameters()).device

    def sample(self, shape, steps):
        sigmas = torch.linspace(80.0, 0.0, steps, device=self.device)
        x = torch.randn(shape, device=self.device)
        for sigma, sigma_next in zip(sigmas[:-1], sigmas[1:]):
            sigma, sigma_next = map(lambda t: t.item(), (sigma, sigma_next))  # expect: GPU001
            x = self.net(x, sigma)
            if sigma_next != 0:  # must not: GPU001
                x = x * sigma_next
        return x
