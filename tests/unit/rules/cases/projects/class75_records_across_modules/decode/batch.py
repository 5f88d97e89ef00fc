"""A batched beam search over the records `hypothesis.py` builds: each step reads their
device fields on the host. A field built only with host values, a plain class, a record
class this file defines itself under the same name, and a name the file rebinds say nothing."""

from typing import List, NamedTuple

import torch

from .hypothesis import Hypothesis, Plain, Span, expand


class Local(NamedTuple):
    score: float


def batchfy(hyps: List[Hypothesis]):
    return torch.tensor([h.score for h in hyps])  # expect: GPU001


def lengths(hyps: List[Hypothesis]):
    return torch.tensor([h.length for h in hyps])  # must not: GPU001


def ends(spans: List[Span]):
    return torch.tensor([s.end for s in spans])  # must not: GPU001


def plain_scores(plains: List[Plain]):
    return torch.tensor([p.score for p in plains])  # must not: GPU001


def local_scores(items: List[Local]):
    return torch.tensor([x.score for x in items])  # must not: GPU001


def search(start: Hypothesis, logits, steps, plains, spans, items):
    running = [start]
    for _ in range(steps):
        running = [h for hyp in running for h in expand(hyp, logits)][:4]
        best = batchfy(running)
        print(best, lengths(running), ends(spans), plain_scores(plains), local_scores(items))
        for hyp in running:
            if hyp.length > 10:  # must not: GPU001
                return hyp
    return running[0]
