"""A boolean mask made as one rather than by a comparison: a factory given `dtype=torch.bool`
(`torch.eye(n, dtype=torch.bool, device=d)`, `torch.ones(..., dtype=torch.bool)`), a cast to
bool (`x.bool()`, `x.to(torch.bool)`), and a name bound to one of them. Gathering with it
(`sim[~diag_mask]`) sizes its result by how many elements the mask keeps, so the host waits
for the GPU to count them, as it does for `x[x > 0]`. Where another binding of the name comes
from a function the file does not show (`diag_mask = dist.eye_rank(n)` on a distributed
branch), the gather is a hint: the mask the file does show says what the name holds. An
integer index, or a cast to another dtype, gathers without a wait."""

import torch

device = torch.device("cuda")


def contrastive(model, loader, temperature):
    for x0, x1 in loader:
        out0 = model(x0.to(device, non_blocking=True))
        out1 = model(x1.to(device, non_blocking=True))
        n = out0.shape[0]
        diag_mask = torch.eye(n, device=device, dtype=torch.bool)
        sim = out0 @ out1.T / temperature
        positive = sim[diag_mask]  # expect: GPU001
        negative = sim[~diag_mask].view(n, -1)  # must not: GPU001
        keep = torch.ones(n, n, dtype=torch.bool, device=device).triu(1)
        upper = sim[keep]  # expect: GPU001
        order = torch.eye(n, device=device, dtype=torch.long).argmax(1)
        picked = sim[order]  # must not: GPU001
        (negative.logsumexp(1) - positive + upper.mean() + picked.mean()).mean().backward()


def selected(model, loader):
    for x, y in loader:
        scores = model(x.to(device, non_blocking=True))
        valid = y.to(device, non_blocking=True).bool()
        top = scores[valid]  # expect: GPU001
        weights = y.to(device, non_blocking=True).float()
        scaled = scores[weights.long()]  # must not: GPU001
        (top.sum() + scaled.sum()).backward()


def distributed(model, loader, world, gather_eye):
    for x in loader:
        out = model(x.to(device, non_blocking=True))
        n = out.shape[0]
        if world > 1:
            mask = gather_eye(n, device=device)
        else:
            mask = torch.eye(n, device=device, dtype=torch.bool)
        sim = out @ out.T
        rest = sim[~mask]  # hint: GPU001
        again = out[~mask[0]]  # must not: GPU001
        (rest.sum() + again.sum()).backward()


def indices(model, loader, pick):
    for x in loader:
        out = model(x.to(device, non_blocking=True))
        rows = pick(out.shape[0])
        chosen = out[rows]  # must not: GPU001
        chosen.sum().backward()
