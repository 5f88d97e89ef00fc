"""A factory that takes a shape, cast on the host and then copied (`torch.ones(n).float()
.to(x.device)`, `torch.arange(n).type(dtype).to(dev)`), is made in host memory only to be
copied: the GPU can make it in place and cast it there, with the same values. A data factory
(`torch.tensor(data)`) builds on the host whatever `device=` says."""

import torch


class WassersteinLoss(torch.nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.classes = classes

    def forward(self, logits, target):
        flat = target.view(target.size(0), -1)
        alpha = torch.ones((flat.size(0), self.classes)).float().to(flat.device)  # expect: GPU003
        pad = torch.zeros((1, flat.size(0))).int().to(flat.device)  # expect: GPU003
        grid = torch.arange(self.classes).type(logits.dtype).to(logits.device)  # expect: GPU003
        label = torch.tensor([1.0]).float().to(logits.device)  # must not: GPU003
        scaled = torch.ones(4).mul(2).to(logits.device)  # must not: GPU003
        return (logits * alpha.sum() + pad.sum() + grid.sum() + label + scaled).mean()
