"""A test of the type narrows a name in its branch: inside `if isinstance(a, list):` the
name holds a Python list (of tensors, maybe), not a GPU array, whatever the callers pass."""

import torch


def to_tensor(a):
    if isinstance(a, list):
        if a and all(t.is_sparse for t in a):  # must not: GPU001, GPU009
            return torch.stack(a)
        return torch.stack([t.float() for t in a])  # must not: GPU009
    if isinstance(a, (int, float)):
        if a > 0:  # must not: GPU001
            return torch.tensor([a])
    return a


def main():
    x = torch.zeros(8, device="cuda")
    for step in range(100):
        to_tensor(x)
        to_tensor([x, x])
        if x.sum() > 0:  # expect: GPU001
            print(step)
