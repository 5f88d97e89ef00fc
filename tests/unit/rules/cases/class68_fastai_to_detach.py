"""fastai's `to_detach(b)` and a learner's `learn.to_detach(b)` detach what they are handed
and copy it to the CPU (`cpu=True` by default): in a batch event or a metric's `accumulate`,
that is a copy that waits for the GPU once per batch (a hint: the step's tensors are on the
learner's device, which the file does not show), and what it returns is on the host, so
reading it later waits for nothing; nor does `cpu=False`, which keeps it on the device. The
names may come from `from fastai.vision.all import *`. The Recorder's `smooth_loss` is kept on
the CPU (it averages `to_detach(loss)`), and a function named for a batch's size
(`find_bs(yb)`) returns a Python int, whatever it is handed."""

import torch
from fastai.vision.all import *


class GatherPreds(Callback):
    def before_validate(self):
        self.preds, self.losses = [], []

    def after_batch(self):
        preds = self.learn.to_detach(self.pred)  # hint: GPU001
        self.preds.append(preds)
        self.top = preds.argmax(dim=1).tolist()  # must not: GPU001
        bs = find_bs(self.yb)
        whole = self.loss.numel() == bs  # must not: GPU001
        loss = self.loss if whole else self.loss.view(bs, -1).mean(1)  # must not: GPU001
        self.losses.append(to_detach(loss, cpu=False))  # must not: GPU001

    def after_validate(self):
        self.all = to_detach(torch.cat(self.preds))  # must not: GPU001


class ProgressComment(Callback):
    def after_batch(self):
        if hasattr(self, "smooth_loss"):
            self.comment = f"{self.smooth_loss.item():.4f}"  # must not: GPU001


class AvgLossLike(Metric):
    def reset(self):
        self.total, self.count = 0.0, 0

    def accumulate(self, learn):
        bs = find_bs(learn.yb)
        self.total += learn.to_detach(learn.loss.mean()) * bs  # hint: GPU001
        self.count += bs


class SmoothLossLike(Metric):
    def __init__(self, beta=0.98):
        self.beta, self.val = beta, torch.tensor(0.0)

    def accumulate(self, learn):
        self.val = torch.lerp(to_detach(learn.loss.mean()), self.val, self.beta)  # hint: GPU001
