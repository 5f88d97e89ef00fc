"""What a test proves of a name holds where the test does. Under `isinstance(x, dict)` the
name holds a dict: iterating it (`for k in x`, `sorted(x)`, `x.keys()`) gives its keys, the
names of the entries, never a GPU value (its entries, `x[k]`, stay what they were). Where
`isinstance(x, float)` (or int, bool, str) holds, x is a Python number or text; and so it is
on the path that skips `if not isinstance(x, float): ...`. A branch that ends in `raise` or
`return` never reaches the code after the `if`: what it binds there is not what the name
holds after it. So a value read with `.item()` on every path that goes on is a Python number
from there on: comparing it, formatting it, adding it to a history waits for nothing."""

import warnings

import torch

device = torch.device("cuda")


def log_outputs(model, loader, history):
    model = model.to(device)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        losses = model(x, y)
        if isinstance(losses, dict):
            for name in sorted(losses):
                value = losses[name]
                if value.dim() > 0:
                    warnings.warn(f"skipping {name}: {type(value)}")  # must not: GPU001
                    continue
                history.append(f"{name}={value.item():.4f}")  # expect: GPU001
            for key in losses.keys():
                print(f"logged {key}")  # must not: GPU001
        else:
            print(f"loss {losses}")  # expect: GPU001


def track_best(model, loader, threshold):
    model = model.to(device)
    best = None
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = model(x, y)
        if not isinstance(loss, float):
            if isinstance(loss, torch.Tensor):
                loss = loss.item()  # expect: GPU001
            else:
                raise TypeError(f"unexpected loss {type(loss).__name__}")
        if best is None or loss < best:  # must not: GPU001
            best = loss
        if loss > threshold * best:  # must not: GPU001
            break
    return best


def smoothed(model, loader, history):
    model = model.to(device)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = model(x, y)
        if isinstance(loss, float):
            history.append(f"{loss:.4f}")  # must not: GPU001
        if not isinstance(loss, torch.Tensor):
            continue
        history.append(f"{loss:.4f}")  # expect: GPU001
