"""A trainer class has its own `train()` (the entry point a user calls), and a method that
puts the model it holds in training mode with `self.model.train()`. That call is the
model's method, not the trainer's: read as a call of the trainer's `train`, it closed a
false cycle (`train` runs the epoch, the epoch "calls" `train`), and the cycle broken at
the last definition walked the per-batch step before the epoch loop that calls it, so the
step never learned that it runs once per batch. Its `loss.item()` after the backward pass
waits for the step's kernels on every batch (a hint: the file does not show the model's
device). A call of the trainer's own method (`self.train()`) or of a module function of
that name is still a call, and a read outside any loop stays silent."""

import torch


def evaluate(model, batches):
    model.eval()
    with torch.no_grad():
        return [model(batch) for batch in batches]


class Trainer:
    def __init__(self, model, optimizer, loader):
        self.model = model
        self.optimizer = optimizer
        self.loader = loader
        self.history = []

    def train(self, epochs):
        for _ in range(epochs):
            self.history.append(self._run_epoch())
        return self.summary()

    def summary(self):
        best = torch.stack(self.history).min()
        return best.item()  # must not: GPU001

    def _run_epoch(self):
        self.model.train()
        total = torch.zeros(())
        for batch in self.loader:
            self.optimizer.zero_grad()
            total += self._step(batch)
            self.optimizer.step()
        self.model.eval()
        return total

    def _step(self, batch):
        loss = self.model(batch)
        loss.backward()
        if not torch.isfinite(loss):  # hint: GPU001
            raise FloatingPointError("loss is not finite")
        return loss.item()  # hint: GPU001


def fit(model, batches, optimizer, limit=1e4):
    """The same checks in a plain loop, each a wait per batch."""
    seen = 0
    for inputs, targets in batches:
        optimizer.zero_grad()
        loss = model(inputs, targets)
        if torch.isnan(loss).any():  # hint: GPU001
            continue
        loss.backward()
        optimizer.step()
        if loss is None:  # must not: GPU001
            break
        if loss > limit:  # hint: GPU001
            break
        seen += 1
    return seen


def fit_logged(model, batches, optimizer):
    """A loss the loop rebinds to a host number tests nothing on the device."""
    best = None
    for inputs, targets in batches:
        optimizer.zero_grad()
        loss = model(inputs, targets)
        loss.backward()
        optimizer.step()
        loss = float(loss)  # hint: GPU001
        if best is None or loss < best:  # must not: GPU001
            best = loss
    return best
