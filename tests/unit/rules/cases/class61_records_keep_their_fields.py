"""A record (a NamedTuple or a dataclass) holds what it is built with, field by field: a beam
search that builds `Hypothesis(score=scores[j], yseq=torch.cat(...))` per candidate keeps
device tensors in those fields, and reading them on the host per hypothesis per step
(`float(self.score)`, `self.yseq.tolist()`, `hyp.yseq[-1] == eos`) waits for the GPU each
time. The file's own constructions are the evidence: an object is known to be such a record
where it was built here, where a parameter is annotated with the class (`hyp: Hypothesis`,
`hyps: List[Hypothesis]`), or as `self` in the record's methods. A field the file never
gives a GPU value (a length, a name), an object of a plain class (whose constructor may
convert what it is given) and a class defined twice (which one an object is depends on
where it was made) say nothing. (`asdict` is reached through objects whose class the caller
does not show: its reads are hints.)"""

from dataclasses import dataclass
from typing import List, NamedTuple

import torch


class Hypothesis(NamedTuple):
    yseq: torch.Tensor
    score: float = 0.0
    length: int = 0
    name: str = ""

    def asdict(self):
        return {
            "yseq": self.yseq.tolist(),  # hint: GPU001
            "score": float(self.score),  # hint: GPU001
            "length": int(self.length),  # must not: GPU001
            "name": self.name,
        }


@dataclass
class Candidate:
    token: torch.Tensor
    logp: float
    rank: int


class Plain:
    def __init__(self, score):
        self.score = float(score)


class Search(torch.nn.Module):
    def __init__(self, eos):
        super().__init__()
        self.eos = eos

    @staticmethod
    def append(xs, token):
        return torch.cat((xs, token.view(1)))

    def init_hyp(self, x):
        return [Hypothesis(yseq=torch.tensor([0], device=x.device), length=1, name="start")]

    def search(self, running: List[Hypothesis], x: torch.Tensor) -> List[Hypothesis]:
        best = []
        for hyp in running:
            scores = torch.zeros(16, device=x.device) + hyp.score
            top = scores.topk(4)[1]
            for k in range(4):
                best.append(
                    Hypothesis(
                        score=scores[top[k]],
                        yseq=self.append(hyp.yseq, top[k]),
                        length=len(hyp.yseq) + 1,
                    )
                )
        return best[:4]

    def post_process(self, running: List[Hypothesis], ended: List[Hypothesis]):
        remained = []
        for hyp in running:
            if hyp.yseq[-1] == self.eos:  # expect: GPU001
                ended.append(hyp._replace(name="ended"))
            elif hyp.length > 100:  # must not: GPU001
                ended.append(hyp)
            else:
                remained.append(hyp)
        return remained

    def best_score(self, hyp: Hypothesis):
        return hyp.score

    def forward(self, x):
        running = self.init_hyp(x)
        ended = []
        for _ in range(100):
            running = self.search(running, x)
            running = self.post_process(running, ended)
            print([h.asdict() for h in ended])
            if not running:
                break
        return ended

    def expand(self, logits, ranks):
        candidates = []
        logp, tokens = logits.cuda().log_softmax(-1).topk(4)
        for i in range(4):
            candidates.append(Candidate(token=tokens[i : i + 1], logp=logp[i : i + 1], rank=i))
        return candidates

    def prune(self, steps, logits, ranks, cands: List[Candidate], plain: Plain):
        for _ in range(steps):
            kept = []
            for cand in cands:
                if cand.logp > -5.0:  # expect: GPU001
                    kept.append(cand)
                if cand.rank > 2:  # must not: GPU001
                    continue
                if plain.score > 0:  # must not: GPU001
                    continue
            cands = kept
        return cands
