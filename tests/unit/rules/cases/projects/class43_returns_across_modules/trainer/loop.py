"""The loop: every value it reads is made by a function of `helpers`."""

from . import helpers
from .helpers import Evaluator, make_model, maybe_on_device


def train(loader, width, optimizer):
    model = make_model(width)
    judge = Evaluator()
    for batch in loader:
        probs = helpers.scores(model, batch)
        if probs.max() > 0.99:  # expect: GPU001
            print("confident")
        print(judge.margin(probs).mean().item())  # expect: GPU001
        loss = probs.sum()
        loss.backward()
        optimizer.step()


def maybe(batches):
    for batch in batches:
        moved = maybe_on_device(batch, False)
        print(moved.sum().item())  # must not: GPU001
