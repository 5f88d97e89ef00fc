"""A GPU value used where Python needs an int waits for the GPU: a slice's bound
(`x[:, : lengths.max()]`), a factory's size (`torch.zeros(b, n)` with `n = counts.max()`),
a random draw's bound (`torch.randint(0, hi, ...)`), `range(n)`. The 0-d tensor is turned
into an int through `__index__`, a copy to the host after all queued work, every step; a
length per item (`for i, n in enumerate(lengths)`) waits once per item. Only values the
function computes count: a size handed in as a parameter, or a batch's field, is as often a
Python int taken from a shape (`logits_to_keep`, `gradient_steps`). A bound read once on
the host (`.item()`, `.tolist()`) is a host int: nothing more to report there."""

import torch
from torch import nn


def train(model: nn.Module, loader, optimizer, steps_per_batch, keep):
    device = torch.device("cuda")
    model = model.to(device)
    for text, lengths in loader:
        text = text.to(device, non_blocking=True)
        lengths = lengths.to(device, non_blocking=True)
        text = text[:, : lengths.max()]  # expect: GPU001
        counts = (text != 0).sum(1)
        pad = torch.zeros(text.shape[0], counts.max(), device=text.device)  # expect: GPU001
        longest = counts.max()
        shift = torch.randint(0, longest, (text.shape[0],), device=text.device)  # expect: GPU001
        rows = [text[i, :n] for i, n in enumerate(counts)]  # expect: GPU001
        width = int(lengths.max())  # expect: GPU001
        mask = torch.ones(text.shape[0], width, device=text.device)  # must not: GPU001
        for _ in range(steps_per_batch):  # must not: GPU001
            loss = model(text[:, -keep:], pad, shift, mask, rows).mean()  # must not: GPU001
            loss.backward()
            optimizer.step()


class Mixer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, target, voices):
        # what a module's forward is handed is on the GPU by a guess only: a hint
        active = (target.sum(dim=1) != 0).sum(dim=1)
        out = []
        for i in range(target.shape[0]):  # hint: GPU009
            padding = target.shape[2] - active[i]
            extra = torch.zeros((target.shape[1], padding), device=target.device)  # hint: GPU001
            out.append(torch.cat((target[i], extra), dim=1))
        return self.proj(torch.stack(out)), voices[: len(out)]  # must not: GPU001
