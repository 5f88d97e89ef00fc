"""Loaders a framework prepared stay prepared through the file's helpers and iterators: a
function returning them as a tuple, an iterator that cycles over one, a host tensor that
collects a value per step."""

import torch
from lightning.fabric import Fabric


class CycleIterator:
    def __init__(self, iterable):
        self.iterable = iterable

    def __next__(self):
        return next(iter(self.iterable))


def get_dataloaders(fabric, data):
    train, val = data.train_dataloader(), data.val_dataloader()
    train, val = fabric.setup_dataloaders(train, val)
    return train, val


def validate(model, val_dataloader, max_iters):
    losses = torch.zeros(max_iters)
    for k, batch in enumerate(val_dataloader):
        logits = model(batch["input_ids"])
        losses[k] = torch.nn.functional.cross_entropy(logits, batch["labels"])  # expect: GPU001
    return losses.mean()


def fit(fabric, model, optimizer, train_dataloader, val_dataloader, max_steps):
    iterator = CycleIterator(train_dataloader)
    token_count = 0
    for _ in range(max_steps):
        batch = next(iterator)
        loss = torch.nn.functional.cross_entropy(model(batch["input_ids"]), batch["labels"])
        fabric.backward(loss)
        optimizer.step()
        token_count += batch["input_ids"].ne(0).sum().item()  # expect: GPU001
    validate(model, val_dataloader, 10)
    return token_count


def main(data, model, optimizer):
    fabric = Fabric(accelerator="cuda")
    model, optimizer = fabric.setup(model, optimizer)
    train_dataloader, val_dataloader = get_dataloaders(fabric, data)
    return fit(fabric, model, optimizer, train_dataloader, val_dataloader, 1000)
