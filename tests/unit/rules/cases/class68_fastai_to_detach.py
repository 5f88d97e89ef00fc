"""fastai's `to_detach(b)` and a learner's `learn.to_detach(b)` detach what they are handed
and copy it to the CPU (`cpu=True` by default): in a batch event or a metric's `accumulate`,
that is a copy that waits for the GPU once per batch (a hint: the step's tensors are on the
learner's device, which the file does not show), and what it returns is on the host, so
reading it later waits for nothing; nor does `cpu=False`, which keeps it on the device. The
names may come from `from fastai.vision.all import *`, which also hands out torch (and numpy,
torch.nn, torch.nn.functional) under their usual names. The Recorder's `smooth_loss` is kept on
the CPU (it averages `to_detach(loss)`), a learner's `get_preds(...)` gathers every batch with
`to_detach` (its results are on the host), and a function named for a batch's size
(`find_bs(yb)`) returns a Python int, whatever it is handed."""

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


class Shuffle(Callback):
    def before_batch(self):
        order = torch.randperm(self.y.size(0)).to(self.x.device)  # expect: GPU003  # quick-fix only: GPU003
        self.learn.xb = (self.x[order],)


def next_words(learn, text, n):
    idxs = learn.dls.test_dl([text]).items[0].to(learn.dls.device)
    for _ in range(n):
        preds, _ = learn.get_preds(dl=[(idxs[None],)])
        res = preds[0][-1]
        if (res >= 0.1).float().sum() == 0:  # must not: GPU001
            break
        idx = torch.multinomial(res, 1).item()  # must not: GPU001
        idxs = torch.cat([idxs, idxs.new([idx])])
    return idxs
