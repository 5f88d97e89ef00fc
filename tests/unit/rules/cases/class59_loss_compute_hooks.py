"""A loss class that inherits its `forward` from a base loss (a library's, or one of another
file) implements the hook that forward calls once per training step: `compute_loss` (or
`_compute_loss`), handed what the model produced. Its inputs are on the model's device by a
guess only, and so is what it makes on their device (`device=embeddings.device`): what it
reads of them on the host is at most a hint."""

import torch
from torch import nn

from metric_losses import BaseMetricLossFunction, GenericPairLoss


class HistogramAPLoss(BaseMetricLossFunction):
    def __init__(self, num_bins=10, **kwargs):
        super().__init__(**kwargs)
        self.num_bins = int(num_bins)

    def compute_loss(self, embeddings, labels, indices_tuple, ref_emb, ref_labels):
        dtype, device = embeddings.dtype, embeddings.device
        n = labels.size(0)
        same = torch.zeros(n, n, dtype=dtype, device=device)
        same[labels.unsqueeze(0) == labels.unsqueeze(1)] = 1
        positives = torch.sum(same, dim=1)
        safe = positives > 0
        if torch.sum(safe) == 0:  # hint: GPU001
            return self.zero_losses()
        if n > self.num_bins:  # must not: GPU001
            same = same[:, : self.num_bins]
        if embeddings.shape[0] != ref_emb.shape[0]:  # must not: GPU001
            raise ValueError("ref_emb must match")
        return {"loss": {"losses": 1 - positives[safe], "indices": None}}

    def get_default_distance(self):
        return {"power": 2}


class ContrastiveLoss(GenericPairLoss):
    def __init__(self, temperature=0.1, **kwargs):
        super().__init__(mat_based_loss=True, **kwargs)
        self.temperature = temperature

    def _compute_loss(self, mat, pos_mask, neg_mask):
        if pos_mask.bool().any() and neg_mask.bool().any():  # hint: GPU001, GPU001
            mat = mat / self.temperature
            return {"loss": {"losses": -(mat * pos_mask).sum(dim=1)}}
        return self.zero_losses()


class LossLogger:
    """Not a loss: nothing says when its `compute_loss` runs."""

    def compute_loss(self, embeddings, labels):
        if labels.sum() > 0:  # must not: GPU001
            return embeddings.mean()
        return None


class DetectorWithLoss(nn.Module):
    """Its own forward calls `compute_loss`: that method is walked as the call, with what the
    forward hands it (here on the GPU for sure), not as a hook on guessed inputs."""

    def forward(self, images):
        scores = torch.rand(images.shape[0], 4, device="cuda")
        return self.compute_loss(scores)

    def compute_loss(self, scores):
        self.largest = scores.max().item()  # expect: GPU001
        return scores.sum()
