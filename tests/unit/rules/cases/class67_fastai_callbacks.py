"""fastai's `Learner` runs a `Callback`'s batch events (`before_batch`, `after_pred`,
`after_loss`, `before_backward`, `after_backward`, `before_step`, `after_step`,
`after_batch`) once per batch, through `self('after_batch')`. The events take no arguments:
they read the step's tensors through the learner (`self.learn.loss`, `self.pred`,
`self.yb`, `self.x`: a callback looks up on its learner what it does not hold), in the event
or in a method it calls. A `Metric`'s `accumulate(learn)` runs once per batch as well (the
Recorder's `after_batch` calls it) and reads them from the learner it is handed. Those
tensors are on the learner's device, which the file does not show: every finding is a hint.
The epoch's and the fit's events (`after_epoch`, `before_fit`, `after_validate`) run rarely;
a method of another shape (an `after_batch` that takes arguments) is no fastai event, nor is
an `after_batch` of a class that is no fastai callback; sizes and shapes are no reads."""

import torch
from fastai.callback.core import Callback
from fastai.learner import Metric


class StopOnNaN(Callback):
    order = -9

    def after_batch(self):
        if torch.isinf(self.loss).any():  # hint: GPU001
            raise RuntimeError("loss is infinite")


class LossLogger(Callback):
    def before_fit(self):
        self.losses = []

    def after_batch(self):
        if self.training:
            self.losses.append(self.learn.loss.item())  # hint: GPU001
            self.seen = self.xb[0].shape[0] + len(self.yb)  # must not: GPU001

    def after_epoch(self):
        print(self.learn.loss.item())  # must not: GPU001

    def after_fit(self):
        self.final = self.loss.item()  # must not: GPU001

    def summary(self):
        return self.pred.mean().item()  # must not: GPU001


class Switcher(Callback):
    def __init__(self, threshold=None):
        self.threshold = threshold

    def after_batch(self):
        if not self.training:
            return
        if self.threshold is None or self.loss < self.threshold:  # hint: GPU001
            self.switch()

    def switch(self):
        self.learn.model.requires_grad_(False)


class PredictionWatcher(Callback):
    def after_pred(self):
        self.record(self.pred)

    def record(self, pred):
        self.top = pred.argmax(dim=1).tolist()  # hint: GPU001
        self.labels = self.y.tolist()  # hint: GPU001


class DiceLike(Metric):
    def reset(self):
        self.inter, self.union = 0, 0

    def accumulate(self, learn):
        pred = learn.pred.argmax(dim=1)
        self.inter += (pred * learn.y).float().sum().item()  # hint: GPU001
        self.union += len(learn.yb)  # must not: GPU001

    @property
    def value(self):
        return 2.0 * self.inter / self.union if self.union > 0 else None


class NotAnEvent(Callback):
    def after_batch(self, outputs):
        return outputs.loss.item()  # must not: GPU001


class PlainHooks:
    def after_batch(self):
        return self.loss.item()  # must not: GPU001
