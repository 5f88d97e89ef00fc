"""A tensor made in host memory by a shape factory and then indexed into a view before the
copy (`torch.zeros(shape)[:, :, None].to(x.device)`, `torch.arange(n)[None, :].cuda()`) is
still made on the host and copied: slicing, `None` and `...` only reshape it, as
`.unsqueeze` would, and the same view of a tensor made with `device=` holds the same values.
An index that picks by a GPU value (a mask, a device index tensor) is no view of the host
tensor: silent; so is a factory given `device=`, and a data factory of values the code
was handed (`torch.tensor(weights)`), which builds on the host whatever it is told. A
constant of numbers written in the code stays what class 74 makes of it (a hint in a
module's forward), viewed or not."""

import torch
from torch import nn


class Field(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, samples, mask, weights):
        base = torch.zeros(samples.shape)[:, :, None].to(mask.device)  # expect: GPU003
        steps = torch.arange(samples.shape[1])[None, :].float().to(samples.device)  # expect: GPU003
        first = torch.ones(samples.shape)[..., 0].to(samples.device)  # expect: GPU003
        made = torch.zeros(samples.shape, device=samples.device)[:, None]  # must not: GPU003
        table = torch.tensor([1.0, 2.0, 3.0])[None].to(samples.device)  # hint: GPU003
        scale = torch.tensor(weights)[None].to(samples.device)  # must not: GPU003
        return (
            self.proj(samples)
            + base.sum()
            + steps.sum()
            + first.sum()
            + made.sum()
            + table.sum() * scale
        )


def pick(values, device):
    index = torch.randint(0, 4, (8,), device=device)
    picked = torch.ones(4, 3)[index].to(device)  # must not: GPU003
    return values + picked
