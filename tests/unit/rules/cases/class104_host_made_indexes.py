"""A tensor of positions made in host memory (`torch.arange(n)`, `torch.randperm(n)`,
`torch.randint(...)` without `device=`) that indexes a GPU tensor is copied to the GPU by
the indexing itself: a host fill and a blocking host-to-device copy every time it runs, as
`torch.arange(n).cuda()` would be, but nowhere written. In per-step code (a loop, a
module's forward) that is a copy per step; `device=` makes the index where it is used.
Reported at the factory, also where the index is named first and reshaped on the host
(`perm = torch.arange(n).view(k, m).t().reshape(-1)`). A GPU index beside it proves the
indexed tensor is on the GPU (a CPU tensor cannot take GPU indices). Not reported: an
index made once outside any loop, one made with `device=`, one whose name is rebound by
something else (a loop), and indexing a host tensor or a list."""

import torch
from torch import nn


class Interleave(nn.Module):
    def forward(self, x1, x2):
        n, d = x1.shape[-2:]
        k = torch.zeros(n * (d + 1), n * (d + 1), device=x1.device, dtype=x1.dtype)
        k = k + torch.cdist(x1, x2).sum()
        perm = torch.arange(n * (d + 1)).view(d + 1, n).t().reshape(-1)  # expect: GPU003
        near = torch.arange(n * (d + 1), device=x1.device)  # must not: GPU003
        return k[..., perm, :] + k[near]


def pick_targets(all_scores, batches, device):
    picked = []
    for i, batch in enumerate(batches):
        targets = batch.to(device)
        scores = all_scores[i]  # (of unknown device: `targets` shows it)
        rows = torch.arange(targets.shape[0])  # expect: GPU003
        picked.append(scores[rows, targets])
    return picked


def shuffled(data, steps, batch_size, device):
    data = data.to(device)
    table = torch.zeros(100, 3)
    for _ in range(steps):
        order = torch.randperm(data.shape[0])[:batch_size]  # expect: GPU003
        chunk = data[order]
        rows = torch.randint(0, 100, (batch_size,))  # must not: GPU003
        host_rows = table[rows]
        yield chunk, host_rows
    once = torch.arange(data.shape[0])  # must not: GPU003
    yield data[once], None


def rebound(data, steps, device):
    data = data.to(device)
    index = torch.arange(4)
    for step in range(steps):
        index = index + step  # (bound again: no longer only a host factory's)
        yield data[index]  # must not: GPU003
