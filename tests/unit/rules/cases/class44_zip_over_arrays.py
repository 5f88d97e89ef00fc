"""`zip` walks the arrays it is given side by side: `for value, token in zip(*scores.topk(k))`
or `zip(values, ids)` of GPU arrays hands out their elements one at a time, and reading each
(`float(value)`) waits for the GPU, as iterating one of them would (a beam search expanding
each candidate). `zip` over lists, over chunks (`torch.split`), over a container of modules,
or a row at a time with whole-row operations only (to bound memory) is no element-wise loop."""

import torch
import torch.nn.functional as F

device = torch.device("cuda")


class Beam:
    def expand(self, scores, ids):
        top = scores.topk(4)[1]
        return top, ids[top]

    def search(self, steps, vocab):
        ids = torch.arange(vocab, device=device)
        hyps = [([], 0.0)]
        for _ in range(steps):
            scores = torch.randn(vocab, device=device)
            best = []
            for token, local in zip(*self.expand(scores, ids)):  # expect: GPU009
                best.append((int(token), local))  # expect: GPU001
            values, tokens = scores.topk(4)
            for value, token in zip(values, tokens):  # expect: GPU009
                if value > 0:  # expect: GPU001
                    best.append((value, token))
            pair = torch.max(scores.view(2, -1), dim=-1)
            for value, token in zip(*pair):  # expect: GPU009
                best.append((value.item(), token))  # expect: GPU001
            hyps = best
        return hyps


def shapes(tensors, names):
    sizes = [t.shape for t in tensors]
    for name, size in zip(names, sizes):  # must not: GPU009
        print(name, size)
    for a, b in zip(tensors, tensors[1:]):  # must not: GPU009
        print(a.shape == b.shape)


class Experts(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.experts = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(8))

    def forward(self, x, logits, labels, sizes):
        x = x.to(device)
        masks = (x > 0).to(device)
        y = torch.zeros_like(x)
        for mask, expert in zip(masks, self.experts):  # must not: GPU009
            y = y + expert(x * mask)
        rows = []
        for row, label in zip(logits.to(device), labels.to(device)):  # must not: GPU009
            rows.append(F.log_softmax(row, dim=-1).gather(-1, label))
        for part, target in zip(torch.split(y, sizes), torch.split(x, sizes)):  # must not: GPU009
            if target.sum() > 0:  # expect: GPU001
                rows.append(part)
        return y, rows
