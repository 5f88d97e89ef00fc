"""A tensor built from a list of GPU values (`torch.tensor([x], device=xs.device)` where x is
a token id picked on the device, `torch.tensor([loss_a, loss_b])`) is built on the host:
`torch.tensor` reads every element into a Python number (a copy back and a wait each), then
copies the result to its device. In a beam search that appends a token per candidate per
step, that is a wait per candidate per step; `x.view(1)`, `torch.stack` or `torch.cat` keep
it on the device. Elements that are host numbers (a length, a Python int, a `.shape` read)
say nothing, nor does a list built once outside the loop, nor `torch.stack` of the same, nor
a value past `if isinstance(x, torch.Tensor): return ...` (no tensor there)."""

import torch

DEVICE = torch.device("cuda")


class Search:
    def __init__(self, beam, eos):
        self.beam = beam
        self.eos = eos

    def append_token(self, xs, x):
        x = torch.tensor([x], dtype=xs.dtype, device=xs.device)  # expect: GPU001
        return torch.cat((xs, x))

    def append_id(self, xs, x):
        return torch.cat((xs, torch.tensor([int(x)], device=xs.device)))  # must not: GPU001

    def search(self, yseq, logits, steps):
        for _ in range(steps):
            scores = logits.to(DEVICE).log_softmax(-1)
            ids = scores.topk(self.beam)[1]
            yseq = self.append_token(yseq, ids[0])
            yseq = self.append_id(yseq, len(yseq))
            stacked = torch.stack([scores.max(), scores.min()])  # must not: GPU001
            print(stacked.shape)
        return yseq


def to_batched(x, device=None):
    if isinstance(x, torch.Tensor):
        return x.unsqueeze(0)
    return torch.tensor([x], device=device)  # must not: GPU001


def train(model, loader, criterion):
    first = torch.zeros(2, device=DEVICE)
    both = torch.tensor([first.shape[0], len(first)])  # must not: GPU001
    print(both)
    for x, y in loader:
        out = model(x.to(DEVICE, non_blocking=True)).to(DEVICE)
        loss_a = criterion(out, y).to(DEVICE)
        loss_b = out.abs().mean()
        pair = torch.tensor([loss_a, loss_b])  # expect: GPU001
        sizes = torch.tensor([out.shape[0], out.shape[1]], device=DEVICE)  # must not: GPU001
        (pair.sum() + sizes.sum() + to_batched(loss_b, DEVICE).sum()).backward()
