"""A loss class's `__call__` / `forward` / `loss` runs once per training step, on what the model
produced; so do the helpers it calls. Its inputs are on the model's device by a guess only
(the file does not show the model), so what it reads of them is at most a hint."""

import torch
from torch import nn


class DetectionLoss:
    def __init__(self, model):
        self.device = next(model.parameters()).device
        self.bce = nn.BCEWithLogitsLoss(reduction="none")

    def __call__(self, preds, batch):
        return self.loss(preds, batch)

    def loss(self, preds, batch):
        loss = torch.zeros(3, device=self.device)
        fg_mask = preds["scores"] > 0.5
        if fg_mask.sum():  # hint: GPU001
            loss[0] = self.box_loss(preds["boxes"], batch["boxes"], fg_mask)
        loss[1] = self.bce(preds["scores"], batch["labels"]).mean()
        if preds["scores"].shape[0] > 4:  # must not: GPU001
            loss[2] = 1.0
        return loss.sum(), loss.detach()

    def box_loss(self, pred, target, mask):
        if mask.any():  # hint: GPU001
            return (pred[mask] - target[mask]).abs().mean()
        return pred.sum() * 0


class RankingLoss(nn.Module):
    def forward(self, scores, labels, temperature=1.0):
        mask = labels != -1
        if not torch.any(mask):  # hint: GPU001
            return scores.sum() * 0
        if temperature > 1:  # must not: GPU001
            scores = scores / temperature
        return -(scores[mask].log_softmax(-1)).mean()


class Metrics:
    """Not a loss: nothing says when it runs."""

    def update(self, preds, target):
        if preds.sum() > 0:  # must not: GPU001
            self.count = 1


class KeypointLoss(DetectionLoss):
    """Entry methods come first in a class, their helpers after: the helpers are still walked
    knowing that the entry calls them once per step."""

    def loss(self, preds, batch):
        total = super().loss(preds, batch)[0]
        fg_mask = preds["scores"] > 0.5
        if fg_mask.sum():  # hint: GPU001
            total = total + self.keypoint_loss(fg_mask, preds["kpts"], batch["kpts"])
        return total

    def keypoint_loss(self, masks, pred, target):
        if masks.any():  # hint: GPU001
            return (pred[masks] - target[masks]).abs().mean()
        return pred.sum() * 0
