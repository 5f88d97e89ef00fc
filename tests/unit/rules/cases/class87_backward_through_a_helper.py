"""A training loop whose backward pass is a helper of the file (`self._backward(loss)`, a
method that subclasses or plugins may override, whose body is `loss.backward()`) is a
training loop all the same: the loss it reads each step (`total += loss.item()`) is an
autograd tensor on the model's device, and reading it waits for the step's kernels. The
file does not show that device (the model is handed in), so the read is a hint, as it is
where the loop calls `loss.backward()` itself. Only a helper named for the backward pass is
read; one so named that only logs or counts, and a loop that calls no such helper, say
nothing."""

import torch


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.seen = 0

    def _backward(self, loss):
        """Kept apart so that a subclass can scale or clip."""
        loss.backward()

    def _count(self, loss):
        self.seen += 1
        return loss

    def _after_backward(self, loss):
        self.seen += 1

    def train_epoch(self, loader):
        running = 0.0
        for batch in loader:
            self.optimizer.zero_grad()
            loss = self.model.forward_loss(batch)
            running += loss.item()  # hint: GPU001
            self._backward(loss)
            self.optimizer.step()
        return running

    def evaluate(self, loader):
        total = 0.0
        with torch.no_grad():
            for batch in loader:
                loss = self.model.forward_loss(batch)
                total += self._count(loss).item()  # must not: GPU001
                self._after_backward(loss)
        return total


def run_backward(loss, retain=False):
    loss.backward(retain_graph=retain)


def fit(model, batches, optimizer):
    history = []
    for inputs, targets in batches:
        loss = model.loss(inputs, targets)
        run_backward(loss)
        optimizer.step()
        history.append(loss.item())  # hint: GPU001
    return history
