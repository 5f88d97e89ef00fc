"""A factory's host tensor held in a name, reshaped or combined with numbers over a few
statements, and copied to the GPU lines later: `mask = 1.0 - torch.eye(n)`, `mask =
mask.unsqueeze(0).repeat(b, 1, 1)`, then `mask.to(x.device)`. The finding sits on the
factory, where `device=` belongs. The fix passes `device=` there and keeps the move (a no-op
then), so it is safe only where the device is known at the factory's line, nothing between
uses the tensor on the host, and no later read of the name sees the moved tensor where it
saw the host one; elsewhere the finding says what to change and offers no fix."""

import torch
import torch.nn.functional as F


def ranking_loss(embeddings, labels, temperature):
    n = embeddings.size(0)
    mask = 1.0 - torch.eye(n)  # expect: GPU003
    mask = mask.unsqueeze(dim=0).repeat(n, 1, 1)
    sims = embeddings @ embeddings.t()
    diff = sims.unsqueeze(1) - sims.unsqueeze(2)
    return (F.sigmoid(diff / temperature) * mask.to(diff.device)).sum()


def clustering_loss(embedding, target, weights=None):
    batch, bins, frames = target.shape
    if weights is None:
        weights = torch.ones(batch, bins * frames, 1)  # expect: GPU003
    weights = weights.float()
    if len(weights.shape) == 3:
        weights = weights.view(batch, bins * frames, 1)
    weights = weights.to(target.device)
    return (embedding * weights).sum()


def noisy(x):
    noise = torch.randn(x.shape)  # expect: GPU003  # quick-fix only: GPU003
    noise = noise * 0.1
    return x + noise.to(x.device)


def read_between(x):
    grid = torch.arange(x.size(0))  # must not: GPU003
    grid = grid.unsqueeze(0)
    print(grid.numpy())
    return x + grid.to(x.device)


def combined_with_host_data(x, host_weights):
    scale = torch.ones(x.size(0))  # must not: GPU003
    scale = scale * host_weights
    return x * scale.to(x.device)


def divided(x):
    ramp = torch.arange(x.size(0)) / 3  # must not: GPU003
    ramp = ramp.unsqueeze(0)
    return x + ramp.to(x.device)


def read_after(x):
    ones = torch.ones(x.size(0))  # expect: GPU003
    ones = ones.unsqueeze(0)
    y = x + ones.to(x.device)
    return y, ones.numpy()
