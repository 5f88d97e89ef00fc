"""A list built by mapping an array function over GPU values holds GPU values:
`[F.normalize(z, dim=0) for z in views]` (a multi-view loss's views), `[o.float() for o in
outs]`, `[torch.relu(h) for h in hidden]`. What a loop over that list reads is a read of a GPU
value, as it would be over `views` itself: `torch.trace(cov).item()` per view, per step. Items
mapped to host values stay silent: their sizes (`z.shape[0]`), their host copies
(`z.cpu()`), what a function the file does not show makes of them."""

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn import Module

DEVICE = torch.device("cuda")


class TraceLoss(Module):
    def forward(self, z_views: list[Tensor]) -> Tensor:
        total = torch.zeros(())
        normalized = [F.normalize(z, p=2, dim=0) for z in z_views]
        for z in normalized:
            cov = z.T @ z
            cov = cov / torch.trace(cov).item()  # hint: GPU001
            total = total + torch.linalg.norm(cov)
        sizes = [z.shape[0] for z in z_views]
        for size in sizes:
            total = total + int(size)  # must not: GPU001
        return total


def train(model, loader, optimizer):
    for views in loader:
        outs = [v.to(DEVICE, non_blocking=True) for v in views]
        feats = [torch.relu(o).float() for o in outs]
        for f in feats:
            if f.sum().item() > 0:  # expect: GPU001
                f.mul_(2)
        hosts = [o.detach().cpu() for o in outs]  # expect: GPU001
        for h in hosts:
            print(h.sum().item())  # must not: GPU001
        names = [describe(o) for o in outs]
        for n in names:
            print(float(n))  # must not: GPU001
        loss = sum(model(f).mean() for f in feats)
        loss.backward()
        optimizer.step()


def describe(o):
    return str(o.shape)
