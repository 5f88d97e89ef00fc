"""Sorting, or picking the best, by a key that gives a GPU value compares the keys on the
host: `sorted(hyps, key=lambda h: h.score)` over records whose score is a device scalar calls
the tensors' `<` for each comparison, and each one copies a bool back and waits for the GPU.
In a beam search that prunes its hypotheses every decoding step, that is a wait per
comparison per step. A list the function fills with records of the file
(`best.append(Hypothesis(...))`, kept as such by `best = sorted(best, ...)[:k]`) holds those
records, so a key reading their fields is known. Keys that are host values (a length, a
float the record was built with, a field the file only gives host values), a sort run once
after the loop, a list the function also fills with something else, and a sort every N steps
say nothing."""

from dataclasses import dataclass
from typing import NamedTuple

import torch

DEVICE = torch.device("cuda")


class Hypothesis(NamedTuple):
    yseq: torch.Tensor
    score: torch.Tensor
    length: int = 0


@dataclass
class Scored:
    token: int
    logp: float


class Search(torch.nn.Module):
    def __init__(self, beam):
        super().__init__()
        self.beam = beam

    def search(self, running, x, step):
        best = []
        for hyp in running:
            scores = torch.zeros(16, device=x.device).log_softmax(-1) + hyp.score
            top = scores.topk(self.beam)[1]
            for k in range(self.beam):  # expect: GPU009
                best.append(
                    Hypothesis(
                        yseq=torch.cat((hyp.yseq, top[k : k + 1])),
                        score=scores[top[k]],
                        length=hyp.length + 1,
                    )
                )
            best = sorted(best, key=lambda h: h.score, reverse=True)[: self.beam]  # expect: GPU001
            by_length = sorted(best, key=lambda h: h.length)  # must not: GPU001
            print(len(by_length))
        self.top = max(best, key=lambda h: h.score)  # expect: GPU001
        if step % 10 == 0:
            print(sorted(best, key=lambda h: h.score))  # must not: GPU001
        return best

    def forward(self, x):
        running = [Hypothesis(yseq=torch.zeros(1, device=x.device), score=x.sum())]
        ended = []
        for step in range(100):
            running = self.search(running, x, step)
            ended.append(self.top)
        return sorted(ended, key=lambda h: h.score)  # must not: GPU001

    def host_scores(self, x, steps):
        for _ in range(steps):
            logp = x.to(DEVICE).log_softmax(-1)
            kept = []
            for token in range(4):
                kept.append(Scored(token=token, logp=float(logp[token])))  # expect: GPU001
            kept.sort(key=lambda s: s.logp)  # must not: GPU001
            print(kept[0])

    def mixed(self, x, others, steps):
        for _ in range(steps):
            pool = list(others)
            pool.append(Hypothesis(yseq=x.to(DEVICE), score=x.to(DEVICE).sum()))
            print(sorted(pool, key=lambda h: h.score))  # must not: GPU001


def rerank(model, loader):
    for batch in loader:
        scores = model(batch.to(DEVICE, non_blocking=True)).sum(-1).to(DEVICE)
        order = sorted(range(len(scores)), key=lambda i: scores[i])  # expect: GPU001
        print(order)
