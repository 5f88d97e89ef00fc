"""The CPU fallback of a file that writes `.cuda()` throughout and names no device: the
`.cuda()` that brings the fallback's results back is the branch's own doing, while the
others stay the file's hard-coded devices."""

import torch


def match(cost, mode="gpu"):
    if mode == "cpu":
        cost = cost.cpu()  # must not: GPU001
    best = cost.argmin(1)
    if mode == "cpu":
        best = best.cuda()  # must not: GPU007
    return best


def train(model, loader):
    model = model.cuda()  # expect: GPU007
    for x, y in loader:
        x = x.cuda(non_blocking=True)  # expect: GPU007
        y = y.cuda(non_blocking=True)  # expect: GPU007
        try:
            best = match(model(x))
        except RuntimeError:
            best = match(model(x), "cpu")
        (best - y).sum().backward()
