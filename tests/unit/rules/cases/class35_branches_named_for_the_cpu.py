"""A branch whose test names the CPU (`if mode == "cpu":`, `if args.device != "cpu": …
else:`) is where the program moves data to the host on purpose, and back to the GPU after:
a fallback when the device runs out of memory, a CPU-only path. Its copies are the point,
not a wait to remove, and its `.cuda()` undoes the branch's own move."""

import torch

device = torch.device("cuda")


def assign(preds, targets, mode="gpu"):
    if mode == "cpu":
        preds = preds.cpu().float()  # must not: GPU001
        targets = targets.cpu()  # must not: GPU001
    cost = torch.cdist(preds, targets)
    matched = cost.argmin(1)
    if mode == "cpu":
        matched = matched.cuda()  # must not: GPU007
    return matched


def train(loader, model, settings):
    model = model.to(device)
    for images, targets in loader:
        preds = model(images.to(device, non_blocking=True))
        targets = targets.to(device, non_blocking=True)
        try:
            matched = assign(preds, targets)
        except RuntimeError:
            matched = assign(preds, targets, "cpu")
        if settings.device != "cpu":
            loss = (preds - targets[matched]).abs().mean()
        else:
            loss = (preds.cpu() - targets.cpu()[matched]).abs().mean()  # must not: GPU001
        if mode_is_fast(settings) == "fast":
            print(loss.item())  # expect: GPU001
        print(preds.max().item())  # expect: GPU001


def mode_is_fast(settings):
    return settings.mode
