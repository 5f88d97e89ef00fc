"""A learner whose training step reports its losses through the package's conversion
helpers (`learn.utils`, another module). `to_float(loss)` is `loss.item()`, one wait per
gradient step, as the direct read would be; `as_array(q)` copies the values back each step.

Sure where the file places the value (`self.scale` is made with `device=device`); a guess
where the value is the loss the step runs its backward pass on (a tensor on the model's
device, a hint). Not a value the step merely holds (`self.temperature`, a float or a tensor
for all this file says), not a call whose other arm keeps the value as it is (the code
converts only in the mode where the value is made on the host), and not a helper that reads
something it computes from its argument (`bool(mask.any())`: a reduction, not a
conversion of what it is handed)."""

import torch

from learn.utils import as_array, first_valid, to_float


class Learner:
    def __init__(self, net, device, on_device_stats=False):
        self.net = net
        self.optim = torch.optim.Adam(net.parameters())
        self.scale = torch.ones(1, device=device)
        self.temperature = 1.0
        self.on_device_stats = on_device_stats

    def update(self, obs, target):
        pred = self.net(obs)
        loss = ((pred - target) ** 2).mean()
        self.optim.zero_grad()
        loss.backward()
        self.optim.step()
        return {
            "loss": to_float(loss),  # hint: GPU001
            "scale": to_float(self.scale),  # expect: GPU001
            "temperature": to_float(self.temperature),  # must not: GPU001
            "pred": as_array(self.scale * 2),  # expect: GPU001
            "kept": self.scale if self.on_device_stats else to_float(self.scale),
            "any": first_valid(self.scale > 0),  # must not: GPU001
        }


def evaluate(learner, batches):
    # once, outside any loop: no finding
    return to_float(learner.scale)
