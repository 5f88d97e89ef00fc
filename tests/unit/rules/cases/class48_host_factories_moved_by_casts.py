"""A tensor a factory makes on the host, then copies to the GPU by another spelling than
`.to(device)`: `.type_as(t)` and `.type(t.type())` take t's device with its dtype,
`.type(torch.cuda.FloatTensor)` (or a name bound to a CUDA tensor type) the current GPU; and
reshapes or fills between the factory and the copy (`torch.arange(n).unsqueeze(0).repeat(b, 1)
.to(x.device)`, `torch.zeros(1, n).fill_(s)`) compute the same values on either side of it.
The fix passes `device=` and keeps the cast, so the tensor keeps its dtype. A random fill
draws from the GPU's generator there: a quick-fix only. A data factory (`torch.tensor(data)`)
builds on the host whatever `device=` says."""

import torch
import torch.nn.functional as F


class Decoder(torch.nn.Module):
    def forward(self, feats, lengths):
        level = feats[0]
        strides = torch.zeros(1, level.size(1)).fill_(8).type_as(level)  # expect: GPU003
        kernel = torch.ones(4, 1, 3).type(level.type())  # expect: GPU003
        steps = torch.arange(level.size(-1)).unsqueeze(0).repeat(4, 1).to(level.device)  # expect: GPU003
        noise = torch.empty(4, 3).uniform_(-1, 1).type_as(level)  # expect: GPU003  # quick-fix only: GPU003
        ids = torch.tensor([1, 2]).type_as(level)  # must not: GPU003
        scaled = torch.ones(4).mul(2).type_as(level)  # must not: GPU003
        halved = torch.ones(4).type(torch.float16)  # must not: GPU003
        return F.conv1d(level, kernel) * strides + steps + noise + ids + scaled + halved


def evaluate(model, loader, half):
    tensor_type = torch.cuda.HalfTensor if half else torch.cuda.FloatTensor
    for images, _ in loader:
        images = images.type(tensor_type)  # expect: GPU006
        offsets = torch.full((2, 2), 0.5).type(tensor_type)  # expect: GPU003
        model(images + offsets)
