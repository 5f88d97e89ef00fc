"""Lightning calls `training_step(self, batch, batch_idx)` once per batch, with the batch
already on the model's device. A method of that name and signature is written for that loop
wherever it stands: in a mixin a LightningModule is built from, or in an object the module's
own step hands the batch to (`return self.task.training_step(batch, batch_idx)`). Its batch
is on the GPU only if the model is, which the file does not show: every finding is a hint. A
method of the same name with other parameters (a transformers Trainer's `training_step(model,
inputs)` of a class not known as one, an `evaluate(batch)`) is the class's own. A boolean mask
bound with an annotation (`keep: torch.Tensor = counts <= n`) is as much a mask as one bound
without: indexing with it waits for the GPU to count the kept rows. What a step runs only
for its first batch (`if batch_idx == 0:`, or after `if ... or batch_idx > 0: return`) runs
once per epoch, and what follows `if step % 100 != 0: continue` once per hundred steps; a
test whose names only sound occasional (`if not valid: return`) guards nothing after it."""

import torch
import torch.nn.functional as F


class ClassificationTask:
    """Holds the data and the loss; the model's steps call these."""

    def __init__(self, model, max_labels=3):
        self.model = model
        self.max_labels = max_labels

    def common_step(self, batch, batch_idx, stage):
        x, y = batch["x"], batch["y"]
        loss = F.cross_entropy(self.model(x), y)
        if torch.isnan(loss):  # hint: GPU001
            return None
        self.model.log(f"{stage}/loss", loss)
        return loss

    def training_step(self, batch, batch_idx):
        return self.common_step(batch, batch_idx, "train")

    def validation_step(self, batch, batch_idx):
        x, y = batch["x"], batch["y"]
        scores = self.model(x)
        known: torch.Tensor = y != -1
        scores = scores[known]  # hint: GPU001
        return F.cross_entropy(scores, y[known])


class PlottingMixin:
    def validation_step(self, batch, batch_idx):
        x, y = batch
        scores = self.model(x)
        if batch_idx == 0:
            self.first = scores.cpu()  # must not: GPU001
        if self.current_epoch % 10 != 0 or batch_idx > 0:
            return scores.mean()
        self.plot(x.cpu().numpy(), scores.cpu().numpy())  # must not: GPU001
        return scores.mean()

    def test_step(self, batch, batch_idx):
        x, valid = batch
        if not valid:
            return None
        return self.model(x).sum().item()  # hint: GPU001


def train(model, loader, optimizer):
    model.cuda()
    for step, (x, y) in enumerate(loader):
        loss = model(x.cuda(non_blocking=True)).sum()
        loss.backward()
        optimizer.step()
        if step % 100 != 0:
            continue
        print(loss.item())  # must not: GPU001


class FilteringMixin:
    def training_step(self, batch, batch_idx: int):
        x, target = batch
        counts: torch.Tensor = target.sum(dim=1)
        keep: torch.Tensor = counts <= self.max_labels
        if not keep.any():  # hint: GPU001
            return None
        return F.binary_cross_entropy(self.model(x[keep]), target[keep])


class Trainer:
    def training_step(self, model, inputs):
        loss = model(**inputs).loss
        print(loss.item())  # must not: GPU001
        return loss

    def evaluate(self, batch, batch_idx):
        return self.model(batch).item()  # must not: GPU001


def summary(task, batch):
    loss = task.validation_step(batch, 0)
    return float(loss)  # must not: GPU001
