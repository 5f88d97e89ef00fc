"""A function that is itself one training step (it runs a backward pass and steps an
optimizer, or hands the loss to an optimizer's `step(loss)`) is called once per step by
whoever trains, even where no loop of the file calls it: a host read of a tensor it computed
(`loss.item()`, `.tolist()`, `float(loss)` of the loss it runs its backward pass on) is a
wait per step if that tensor is on the GPU. The file does not show the device (a hint)
unless it moves the data itself (a warning). Reads where no step is taken, reads of host
values (`float()` of anything but that loss), and a step taken inside a loop of the
function's own (that loop is the hot one) are no such thing."""

import numpy as np
import torch
import torch.nn.functional as F

device = torch.device("cuda")


class Alpha:
    def update(self, entropy):
        alpha_loss = -(self.log_alpha * (self.target - entropy)).mean()
        self.optim.zero_grad()
        alpha_loss.backward()
        self.optim.step()
        return alpha_loss.item()  # hint: GPU001


class QLearner:
    def _update_with_batch(self, batch):
        q = self.policy(batch.obs)
        loss = F.mse_loss(q, batch.returns)
        self.optim.step(loss)
        stats = {"loss": loss.item()}  # hint: GPU001
        stats["q"] = q.mean(dim=0).tolist()  # hint: GPU001
        stats["steps"] = len(batch)  # must not: GPU001
        stats["width"] = np.mean(self.widths).item()  # must not: GPU001
        return stats


def learn(model, optimizer, x, y):
    x = x.to(device)
    loss = F.cross_entropy(model(x), y.to(device))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()  # expect: GPU001


class Explainer:
    def train(self, epoch, model, x, target):
        self.optimizer.zero_grad()
        temperature = self.schedule[epoch]
        loss = self.loss(model(x) / temperature, target)
        loss.backward()
        self.optimizer.step()
        self.last = float(temperature)  # must not: GPU001
        return float(loss)  # hint: GPU001


def fit_steps(model, optimizer, batches):
    history = []
    for x, y in batches:
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append(float(loss))  # hint: GPU001
    return history


def evaluate(model, x, y):
    loss = F.cross_entropy(model(x), y)
    return loss.item()  # must not: GPU001


def saliency(model, x):
    x.requires_grad_(True)
    model(x).sum().backward()
    return x.grad.abs().max().item()  # must not: GPU001


def fit(model, optimizer, loader):
    total = 0.0
    for x, y in loader:
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.detach()
    return total.item()  # must not: GPU001
