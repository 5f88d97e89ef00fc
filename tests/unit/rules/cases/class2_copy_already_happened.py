"""Batches a framework has already put on the device: moving them again is a no-op, and
`non_blocking=True` on that no-op changes nothing."""

import lightning as L
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader


def accelerate_loop(model, optimizer, dataset):
    accelerator = Accelerator()
    loader = DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for batch in loader:
        batch = batch.to(accelerator.device)  # must not: GPU006, GPU002
        x, y = batch
        x = x.to(accelerator.device)  # must not: GPU006, GPU002
        loss = torch.nn.functional.cross_entropy(model(x), y)  # must not: GPU011
        accelerator.backward(loss)
        optimizer.step()


def fabric_loop(fabric, model, optimizer, train_loader):
    model, optimizer = fabric.setup(model, optimizer)
    train_loader = fabric.setup_dataloaders(train_loader)
    for x, y in train_loader:
        x, y = x.to(fabric.device), y.to(fabric.device)  # must not: GPU006, GPU002
        loss = torch.nn.functional.mse_loss(model(x), y)
        fabric.backward(loss)
        optimizer.step()


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(32, 4)

    def training_step(self, batch, batch_idx):
        x, y = batch
        x = x.to(self.device)  # must not: GPU006, GPU002
        y = y.cuda()  # must not: GPU006, GPU002
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def validation_step(self, batch, batch_idx):
        inputs = {k: v.to(self.device) for k, v in batch.items()}  # must not: GPU006, GPU002
        return self.net(inputs["x"])
