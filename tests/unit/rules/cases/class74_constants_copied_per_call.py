"""A constant tensor built from numbers written in the code (`torch.FloatTensor([0.5])`,
`torch.tensor(2.0)`) and then moved to the device (`.to(x.device)`, `.cuda()`) is built in
host memory and copied to the GPU every time the code runs: per step in a training loop; in
a module's forward, once per block per step (a hint: the file does not show the forward
runs per step). A Python number does the same arithmetic without a copy, or a buffer
registered once moves with the module. Said only where it runs per step: a constant moved
once (in `__init__`, before the loop) is no cost, and data that is not a literal (a list of
values, an array) is another rule's matter."""

import math

import torch
from torch import nn

DEVICE = torch.device("cuda")


class GLUBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, 2 * dim)
        self.scale = torch.tensor([0.5]).to(DEVICE)  # must not: GPU003

    def forward(self, x):
        scale = torch.sqrt(torch.FloatTensor([0.5]).to(x.device))  # hint: GPU003
        offset = torch.tensor(-1.0).to(x.device)  # hint: GPU003
        return self.fc(x) * scale * math.sqrt(0.5) + offset


def train(model, loader, optimizer, weights):
    margin = torch.tensor([1.0, 2.0]).to(DEVICE)  # must not: GPU003
    for x, y in loader:
        x = x.to(DEVICE, non_blocking=True)
        w = torch.tensor(weights).to(DEVICE)  # must not: GPU003
        half = torch.FloatTensor([0.5]).to(DEVICE)  # expect: GPU003
        loss = (model(x) - y.to(DEVICE, non_blocking=True)).abs().mean() * w.sum() * half + margin.sum()
        loss.backward()
        optimizer.step()
