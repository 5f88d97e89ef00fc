"""A loop whose every pass does a whole batch's work is a sequence of steps, not an element
loop: it runs a network per pass (autoregressive sampling, one variable per pass), a module
of a container per feature, or a density of a list per proposal, and writes what that step
computed into a column (`out[:, k]`): one small launch beside that work. Vectorizing the
write gains nothing; the passes are few (one per variable, feature or proposal) and each
depends on the step before or on a model of its own. A loop that only copies or combines
columns (`out[:, k] = src[:, k] * 2`, `phi[:, k, j] = prev[:, 1, k]`) still launches one
small kernel per column where one operation would do: a finding."""

import torch
from torch import nn

device = torch.device("cuda")


class Sampler(nn.Module):
    def __init__(self, dim, n):
        super().__init__()
        self.net = nn.Linear(dim, dim * n)
        self.embeds = nn.ModuleList(nn.Embedding(8, 4) for _ in range(dim))
        self.dim = dim

    def sample(self, context):
        samples = torch.zeros(64, self.dim, device=context.device)
        for i in range(self.dim):
            logits = self.net(samples).view(64, self.dim, -1)
            samples[:, i] = logits[:, i].argmax(-1)  # must not: GPU009
        return samples

    def encode(self, x):
        out = torch.zeros(x.shape[0], self.dim * 4, device=x.device)
        for k in range(self.dim):
            code = self.embeds[k](x[..., k].long())
            out[..., k * 4 + torch.arange(4, device=x.device)] = code  # must not: GPU009
        return out


def proposal_log_probs(theta, proposals):
    theta = theta.to(device)
    logs = torch.zeros(theta.shape[0], len(proposals), device=theta.device)
    for k, density in enumerate(proposals):
        logs[:, k] = density.log_prob(theta)  # must not: GPU009
    return logs


def columns(src):
    src = src.to(device)
    out = torch.empty_like(src)
    for k in range(src.shape[1]):
        out[:, k] = src[:, k] * 2  # expect: GPU009
    return out


def prefix_scores(prev, pos):
    prev = prev.to(device)
    phi = torch.zeros(prev.shape[0], prev.shape[2], 8, device=prev.device)
    for k in range(prev.shape[2]):
        phi[:, k, pos] = prev[:, 1, k]  # expect: GPU009
    return phi
