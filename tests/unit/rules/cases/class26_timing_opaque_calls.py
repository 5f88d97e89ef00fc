"""A clock read after a call of code the file does not show (`super().training_step(...)`,
a function of another module) handed GPU data: that code may wait for its own work before
it returns (a training step that logs its loss does), so nothing proves work is still
queued: no GPU004. A model's forward, a torch operation or a function of the file that
queues work are still timed as launches."""

import time

import torch
from transformers import Trainer

from mypackage.steps import run_step


class TimedTrainer(Trainer):
    def training_step(self, model, inputs, num_items_in_batch):
        time_before = time.perf_counter()
        output = super().training_step(model, inputs, num_items_in_batch)
        time_after = time.perf_counter()  # must not: GPU004
        self.step_time += time_after - time_before
        return output


def timed(model, x: torch.Tensor, device):
    x = x.to(device)
    start = time.perf_counter()
    result = run_step(x)
    after_step = time.perf_counter()  # must not: GPU004
    y = model(x)
    elapsed = time.perf_counter() - start  # expect: GPU004
    z = torch.matmul(x, x)
    again = time.perf_counter()  # expect: GPU004
    return result, after_step, y, elapsed, z, again
