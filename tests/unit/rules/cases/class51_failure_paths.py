"""Code that runs only when something fails costs nothing per step: an assert's message is
evaluated only when its test is false, a raise's arguments only when it raises (in whatever
branch or handler it stands), and a warning issued under a test that something went wrong
only when it did. The test itself runs every step, and is the site."""

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


def unproject(kinds, coords):
    kinds = kinds.to(device)
    out = []
    for kind in kinds:  # expect: GPU009
        if kind == 0:  # expect: GPU001
            out.append(coords * 2)
        elif kind == 1:  # expect: GPU001
            out.append(coords * 3)
        else:  # a raise in the last branch of a chain: its message is built once, if ever
            raise ValueError(f"camera type {kind} not supported")  # must not: GPU001
    return out


def step_all(model, x, steps):
    model = model.to(device)
    x = x.to(device)
    for _ in range(steps):
        loss = model(x).mean()
        try:
            loss.backward()
        except RuntimeError as error:
            raise RuntimeError(f"backward failed at {loss.item()}") from error  # must not: GPU001
