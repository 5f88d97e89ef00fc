"""A static or class method called through its class (`Matcher.best(losses)`) runs with
what the call hands it, as a call through `self` does: a loss wrapper that dispatches to
`Matcher.factorial(losses)` reads those device losses there, once per training step. A
plain method called so (`Matcher.score(matcher, losses, scale)`) takes the instance first,
so positions say nothing of its parameters. A helper run per step that returns early
(`if small: return Matcher.factorial(losses)`) takes that branch on some calls: what the
branch calls runs per call, though the branch's own reads are judged as a way out."""

import torch

DEVICE = torch.device("cuda")


class Matcher:
    @staticmethod
    def best(losses):
        if losses.shape[-1] <= 3:
            return Matcher.factorial(losses)
        return Matcher.greedy(losses)

    @staticmethod
    def factorial(losses):
        total = losses.sum(-1)
        if total.sum() > 1e4:  # expect: GPU001
            print("diverging")
        return total.min(1).values, total.argmin(1)

    @classmethod
    def greedy(cls, losses):
        worst = losses.max()
        print(f"worst pair {worst:.3f}")  # expect: GPU001
        return losses.min(-1).values, losses.argmin(-1)

    def score(self, losses, scale):
        if scale > 1:  # must not: GPU001
            losses = losses / scale
        return losses


def train(model, batches, optimizer, matcher: Matcher):
    model = model.to(DEVICE)
    for x, y in batches:
        out = model(x.to(DEVICE, non_blocking=True))
        pairwise = (out[:, None] - y.to(DEVICE, non_blocking=True)[:, :, None]) ** 2
        loss, _ = Matcher.best(pairwise)
        loss = Matcher.score(matcher, loss, 2.0).mean()
        loss.backward()
        optimizer.step()
