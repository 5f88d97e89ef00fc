"""Records a beam search builds with device values, read by another module of the package
(`batch.py`): what this module builds each field with travels with the class."""

from dataclasses import dataclass
from typing import List, NamedTuple

import torch


class Hypothesis(NamedTuple):
    yseq: torch.Tensor
    score: float = 0.0
    length: int = 0


@dataclass
class Span:
    start: int
    end: int


class Plain:
    def __init__(self, score):
        self.score = float(score)


def expand(hyp: Hypothesis, logits: torch.Tensor) -> List[Hypothesis]:
    scores = logits.cuda().log_softmax(-1) + hyp.score
    top = scores.topk(4)[1]
    return [
        Hypothesis(
            yseq=torch.cat((hyp.yseq, top[k : k + 1])),
            score=scores[top[k]],
            length=hyp.length + 1,
        )
        for k in range(4)
    ]


def span_of(hyp: Hypothesis) -> Span:
    return Span(start=0, end=hyp.length)
