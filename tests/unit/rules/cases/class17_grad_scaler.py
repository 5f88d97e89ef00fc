"""`GradScaler.get_scale()` reads the scale from the device: once per training step, that is
a sync per step (the usual way to tell whether the optimizer step was skipped)."""

import torch


def train(model, loader, optimizer, scheduler, use_amp):
    device = torch.device("cuda")
    model = model.to(device)
    if use_amp:
        scaler = torch.cuda.amp.GradScaler()
    else:
        scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        scale_before = scaler.get_scale()  # expect: GPU001
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        if scaler.get_scale() == scale_before:  # expect: GPU001
            scheduler.step()
    print(scaler.get_scale())  # must not: GPU001
