"""An index tensor made in host memory (`torch.arange(n)`, `torch.randperm(n)`, without
`device=`) that picks from a GPU tensor is copied to the GPU before the pick runs, every
time the line runs: the host allocation, fill and transfer of `torch.arange(n).to(device)`
with the copy unwritten. Per-step code only (a loop, a module's forward): made once per
call, it is one small copy. Reported at the factory, where `device=` goes, whether the index
is made in the subscript (`scores[torch.arange(b), labels]`) or a few lines above it
(`perm = torch.arange(n).view(k, m).t().reshape(-1)` … `x[..., perm]`). A pick from a
tensor the file shows on the GPU is a warning; from a module's forward input, whose
device is only guessed, a hint. An index made on the device, a pick from a host tensor,
or an index of GPU values costs no copy."""

import torch
from torch import nn

DEVICE = torch.device("cuda")


def true_scores(model, batches):
    model = model.to(DEVICE)
    picked = []
    for x, labels in batches:
        scores = model(x.to(DEVICE))
        labels = labels.to(DEVICE)
        picked.append(scores[torch.arange(scores.shape[0]), labels])  # expect: GPU003
        on_device = torch.arange(scores.shape[0], device=scores.device)
        picked.append(scores[on_device, labels])  # must not: GPU003
        host = torch.zeros(4, 4)
        picked.append(host[torch.arange(4), torch.arange(4)])  # must not: GPU003
        picked.append(scores[labels])  # must not: GPU003
    return picked


def shuffled_blocks(n, d, steps):
    kernel = torch.zeros(n * (d + 1), n * (d + 1), device=DEVICE)
    for _ in range(steps):
        order = torch.arange(n * (d + 1)).view(d + 1, n).t().reshape(-1)  # expect: GPU003
        yield kernel[..., order, :]
    once = torch.arange(n * (d + 1))  # must not: GPU003  (once per call: one small copy)
    yield kernel[once]


class Reorder(nn.Module):
    def forward(self, x):
        rows = x[torch.randperm(x.shape[0])]  # hint: GPU003
        return rows.sum()
