"""A Trainer subclass's `compute_loss(self, model, inputs, …)` runs once per training step with
the batch on the device, whichever module of the project the Trainer base class comes from;
so do the helpers it calls. Metric reads there are per-step syncs."""

import torch

from .base import _BaseTrainer
from .data_utils import is_conversational
from .utils import selective_log_softmax


class RewardTrainer(_BaseTrainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        mode = "train" if self.model.training else "eval"
        outputs = model(**inputs)
        chosen, rejected = torch.chunk(outputs.logits.squeeze(-1), chunks=2)
        loss = -torch.nn.functional.logsigmoid(chosen - rejected).mean()
        if mode == "train":
            tokens = self.accelerator.gather_for_metrics(inputs["attention_mask"].sum())
            self._total_tokens += tokens.sum().item()  # expect: GPU001
        self._metrics[mode]["margin"].append((chosen - rejected).mean().item())  # expect: GPU001
        entropy = outputs.entropy.mean()
        self._metrics[mode]["entropy"].append(entropy.item())  # expect: GPU001
        if inputs.get("labels") is not None:  # must not: GPU001
            self._metrics[mode]["labeled"].append(1)
        return (loss, outputs) if return_outputs else loss


class PreferenceTrainer(_BaseTrainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        return self._compute_loss(model, inputs, return_outputs)

    def _compute_loss(self, model, inputs, return_outputs):
        # (a loop of its own does not make it the per-epoch level: a training step calls it)
        kwargs = {k: v for k, v in inputs.items() if k != "labels"}
        logits = model(**kwargs).logits
        logps = selective_log_softmax(logits, inputs["labels"])
        self._metrics["logps"].append(logps.mean().item())  # expect: GPU001
        return logps.sum()


class Callbacks:
    """No Trainer base, no hook signature: nothing is known of what these receive."""

    def compute_loss(self, model, inputs):
        return model(inputs).loss.item()  # must not: GPU001


class PairTrainer(_BaseTrainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        chosen = {}
        for k in inputs:
            if k.startswith("chosen"):  # must not: GPU001
                chosen[k] = inputs[k]
        if is_conversational({"prompt": inputs["prompt_ids"][0]}):  # must not: GPU001
            chosen["chat"] = True
        return model(**chosen).loss


class VisionTrainer(_BaseTrainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        extra = {k: v for k, v in inputs.items() if k.startswith("pixel")}
        outputs = model(inputs["input_ids"], **(extra or {}))  # must not: GPU001
        return outputs.loss
