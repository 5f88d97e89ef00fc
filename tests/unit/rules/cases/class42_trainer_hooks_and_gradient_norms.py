"""A torchrl Trainer calls its hooks (`TrainerHookBase` subclasses) once per collected batch,
handing them the batch, on the collector's device if it has one (which the file does not
show: hints). A gradient norm (`clip_grad_norm_`) is a tensor on the gradients' device:
`float(norm)` per optimizer step waits for the GPU, known where the parameters are a GPU
module's, a guess elsewhere. Metadata (`batch.ndimension()`) is read on the host."""

import torch
from torch import nn
from torchrl.trainers import TrainerHookBase

device = torch.device("cuda")


class CountDone(TrainerHookBase):
    def __init__(self):
        self.count = 0

    def __call__(self, batch):
        if batch.ndimension() == 1:  # must not: GPU001
            self.count += 1
        self.count += batch["next", "done"].sum().item()  # hint: GPU001
        return batch


class ClipHook(TrainerHookBase):
    def __init__(self, optimizer, max_norm):
        self.optimizer = optimizer
        self.max_norm = max_norm

    def __call__(self, batch):
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        norm = nn.utils.clip_grad_norm_(params, self.max_norm)
        return {"grad_norm": float(norm)}  # hint: GPU001


def train(model, loader, optimizer):
    model = model.to(device)
    for x, y in loader:
        loss = (model(x.to(device, non_blocking=True)) - y.to(device, non_blocking=True)).pow(2)
        loss.mean().backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        print(float(norm))  # expect: GPU001
        optimizer.step()


def update(batch, model, optimizer):
    loss = model(batch).sum()
    loss.backward()
    norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.detach() + norm


def train_with_update(model, loader, optimizer):
    for x in loader:
        x = x.to(device, non_blocking=True)
        out = update(x, model, optimizer)
        print(out.item())  # expect: GPU001
