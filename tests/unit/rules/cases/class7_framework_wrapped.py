"""Models, optimizers and loaders a framework prepared are on the device, and so is what
is computed from them: their training loops sync when they read a value every step."""

import lightning as L
import torch
from accelerate import Accelerator
from lightning.fabric import Fabric
from torch.utils.data import DataLoader
from transformers import AutoModelForSequenceClassification, Trainer


def accelerate_main(dataset, epochs):
    accelerator = Accelerator()
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    loader = DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=True)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for epoch in range(epochs):
        for step, batch in enumerate(loader):
            outputs = model(**batch)
            loss = outputs.loss
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            running = loss.item()  # expect: GPU001
            correct = (outputs.logits.argmax(-1) == batch["labels"]).sum()
            print(float(correct))  # expect: GPU001
            if step % 100 == 0:
                accelerator.print(f"loss {loss.item():.3f}")  # must not: GPU001
    return running


class Runner:
    def __init__(self, model, loader):
        self.fabric = Fabric(accelerator="cuda")
        self.model = self.fabric.setup_module(model)
        self.loader = self.fabric.setup_dataloaders(loader)

    def fit(self, optimizer):
        for x, y in self.loader:
            loss = torch.nn.functional.cross_entropy(self.model(x), y)
            self.fabric.backward(loss)
            optimizer.step()
            print(f"{loss:.4f}")  # expect: GPU001


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(32, 4)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss.item())  # expect: GPU001
        return loss

    def validation_step(self, batch, batch_idx):
        logits = self.net(batch["x"])
        accuracy = (logits.argmax(-1) == batch["y"]).float().mean()
        if accuracy > 0.99:  # expect: GPU001
            print("nearly perfect")
        return accuracy

    def on_train_epoch_end(self):
        print(self.trainer.callback_metrics["train_loss"].item())  # must not: GPU001


class WeightedTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
        outputs = model(**inputs)
        weight = inputs["weights"].sum().item()  # expect: GPU001
        loss = outputs.loss * weight
        return (loss, outputs) if return_outputs else loss
