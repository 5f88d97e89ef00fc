"""A tensor built from a comprehension of GPU values (`torch.tensor([h.score for h in
hyps])`) is built on the host as one built from a list written out: each item is read into
a Python number (a wait each), then the result is copied back or stays on the host. The
items are judged where the comprehension binds its names. Items that are host values
(lengths, Python numbers), a comprehension handed to `torch.stack`, a list of `torch.equal`
results (Python bools, the wait theirs) and a build outside any loop say nothing."""

from typing import List, NamedTuple

import torch

DEVICE = torch.device("cuda")


class Hyp(NamedTuple):
    score: torch.Tensor
    length: int


def expand(x, hyps: List[Hyp]):
    scores = torch.randn(len(hyps), device=x.device)
    return [Hyp(score=scores[i], length=h.length + 1) for i, h in enumerate(hyps)]


def scores_of(hyps: List[Hyp], device):
    return torch.tensor([h.score for h in hyps], device=device)  # expect: GPU001


def lengths_of(hyps: List[Hyp]):
    return torch.tensor([h.length for h in hyps])  # must not: GPU001


def stacked(hyps: List[Hyp]):
    return torch.stack([h.score for h in hyps])  # must not: GPU001


def same(hyps: List[Hyp]):
    # torch.equal waits and returns a Python bool: the list holds host values already, and
    # the finding is the comparisons' own wait per item (class85), not the build's
    return torch.tensor([torch.equal(h.score, hyps[0].score) for h in hyps])  # expect: GPU001


def decode(model, x, hyps, steps, ids: List[int]):
    x = x.to(DEVICE)
    kept = []
    for _ in range(steps):
        hyps = expand(model(x), hyps)
        best = scores_of(hyps, x.device).argmax()
        lengths = lengths_of(hyps)
        together = stacked(hyps)
        print(same(hyps))
        picked = torch.tensor([i + 1 for i in ids], device=x.device)  # must not: GPU001
        kept.append((best, lengths, together, picked))
    return kept


def once(hyps: List[Hyp], x):
    return torch.tensor([h.score for h in expand(x.to(DEVICE), hyps)])  # must not: GPU001
