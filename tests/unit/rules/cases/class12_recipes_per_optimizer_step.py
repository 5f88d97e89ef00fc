"""A recipe moves each batch in place (`batch_to_device(batch, self._device)`) and reads its
running loss once per optimizer step, under `if (idx + 1) % grad_accum_steps == 0`: that
branch runs on every optimizer step, not now and then."""

import torch

from torchtune import training, utils

from .data import move_to_device


class Recipe:
    def __init__(self, cfg):
        self._device = utils.get_device(cfg.device)
        self._gradient_accumulation_steps = cfg.gradient_accumulation_steps
        self._log_every_n_steps = cfg.log_every_n_steps

    def train(self):
        running_loss = 0
        num_tokens = 0
        for epoch in range(self.total_epochs):
            for idx, batch in enumerate(self._dataloader):
                utils.batch_to_device(batch, self._device)
                current_num_tokens = (batch["labels"] != -100).sum()
                num_tokens += current_num_tokens
                current_loss = self._loss_step(batch) * current_num_tokens
                running_loss += current_loss
                current_loss.backward()
                if (idx + 1) % self._gradient_accumulation_steps == 0:
                    training.scale_grads(self._model, 1 / num_tokens)
                    self._optimizer.step()
                    self._optimizer.zero_grad(set_to_none=True)
                    loss_to_log = running_loss.item() / num_tokens  # expect: GPU001
                    if self.global_step % self._log_every_n_steps == 0:
                        print(num_tokens.item())  # must not: GPU001
                    running_loss = 0
                    num_tokens = 0
        return loss_to_log

    def distill(self):
        running = 0
        for idx, batch in enumerate(self._dataloader):
            batch = {k: v.to(self._device) for k, v in batch.items()}  # expect: GPU006
            loss = self._loss_step(batch)
            running += loss
            loss.backward()
            if (idx + 1) % self._gradient_accumulation_steps == 0:
                self._optimizer.step()
                print(running.item())  # expect: GPU001
                running = 0

    def evaluate(self, loader):
        for batch in loader:
            move_to_device(batch, "cpu")
            labels = batch["labels"]
            if labels.sum() > 0:  # must not: GPU001
                print("labeled")


class Encoder(torch.nn.Module):
    def encode(self, sentences, device, batch_size=32):
        return _encode(self, sentences, device, batch_size)


def _encode(owner, sentences, device, batch_size):
    embeddings = []
    for start in range(0, len(sentences), batch_size):
        features = owner.tokenize(sentences[start : start + batch_size])
        features = utils.batch_to_device(features, device)
        out = owner(features)
        for token_emb, attention in zip(out["token_embeddings"], out["attention_mask"]):
            last = len(attention) - 1
            while last > 0 and attention[last].item() == 0:  # hint: GPU001
                last -= 1
            embeddings.append(token_emb[: last + 1])
    return embeddings
