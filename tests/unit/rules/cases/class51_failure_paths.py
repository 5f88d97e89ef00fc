"""Code that runs only when something fails costs nothing per step: an assert's message is
evaluated only when its test is false, a raise's arguments only when it raises, and a
warning issued under a test that something went wrong only when it did. The test itself
runs every step, and is the site."""

import warnings

import torch

device = torch.device("cuda")


def solve(y, dt, steps):
    y = y.to(device)
    dt = dt.to(device)
    limit = torch.tensor(steps, device=device)
    n = 0
    while n < 100:
        assert n < limit, "too many steps ({} >= {})".format(n, limit)  # hint: GPU001
        assert torch.isfinite(y).all(), f"non-finite state: {y}"  # hint: GPU001
        assert y.sum() != 0, "underflow in dt {}".format(dt.item())  # hint: GPU001
        y = y + dt * y
        n += 1
    return y


def check_each(model, x, steps):
    model = model.to(device)
    x = x.to(device)
    total = 0.0
    for _ in range(steps):
        loss = model(x).mean()
        if loss.isnan().any():  # hint: GPU001
            raise ValueError(f"the loss is NaN: {loss.item()}")  # must not: GPU001
        if not torch.isfinite(loss):  # expect: GPU001
            warnings.warn(f"non-finite loss {loss.item()}")  # must not: GPU001
        total = total + loss
    return total
