"""GPU009 is about loops that handle a GPU array one element per iteration. Two loops look
like that and are not: a write whose index lists positions held in arrays the loop hands out
(`mask[pairs[:, 0], pairs[:, 1]] = True` scatters every pair at once: one operation per
batch), and a loop over what `torch.split` / `chunk` return (a tuple of whole chunks, often a
handful: `c, y, x = (i.flatten() for i in torch.split(idx, 1, dim=-1))`). An index that
picks one position per iteration (`out[i]`, `out[idx[j]]`) is still an element write."""

import torch

device = torch.device("cuda")


def dense_masks(batches, n):
    scores = None
    for target, (pairs, filters) in batches.items():
        pairs = pairs.to(device, non_blocking=True)
        filters = filters.to(device, non_blocking=True)
        scores = torch.zeros(n, n, device=device)
        mask = torch.zeros_like(scores, dtype=torch.bool)
        mask[filters[:, 0], filters[:, 1]] = True  # must not: GPU009
        scores[pairs[:, 0], pairs[:, 1]] = 1.0  # must not: GPU009
    return scores


def per_row(x, rows):
    x = x.to(device)
    out = torch.zeros(len(rows), device=device)
    for i in range(len(rows)):
        out[i] = x[rows[i]].sum()  # expect: GPU009
    return out


def columns(indices, steps):
    indices = indices.to(device)
    out = []
    for _ in range(steps):
        c, y, x = (i.flatten() for i in torch.split(indices, 1, dim=-1))  # must not: GPU009
        out.append(c + y + x)
        for part in indices.chunk(4):  # must not: GPU009
            out.append(part * 2)
    return out
