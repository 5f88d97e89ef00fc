"""A Lightning Callback's batch hooks run once per batch, with what the step returned and the
batch already on the device: a host copy there (or in a helper they call) is a wait per step,
however the package re-exports `Callback`. A hook of the same name with other parameters is
the class's own method; epoch hooks run once per epoch. `not outputs` of the step's dict
tests that it is empty; a sync just before a clock read is the timing's barrier."""

import time

import torch
from mypackage.compat import Callback


class StatsCallback(Callback):
    def _stats(self, outputs, started):
        return dict(
            true=outputs["true"].detach().cpu(),  # expect: GPU001
            loss=float(outputs["loss"]),  # expect: GPU001
            elapsed=time.time() - started,
        )

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.rows.append(self._stats(outputs, self.started))

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if not outputs:  # must not: GPU001
            return
        # the barrier that makes the clock read true
        torch.cuda.synchronize()  # must not: GPU001
        self.elapsed = time.perf_counter() - self.started

    def on_train_epoch_end(self, trainer, pl_module):
        self.total = sum(r["loss"] for r in self.rows)


class Recorder(Callback):
    def on_train_batch_end(self, outputs):
        return outputs["loss"].cpu()  # must not: GPU001
