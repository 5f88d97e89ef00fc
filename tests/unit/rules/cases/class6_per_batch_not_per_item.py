"""Loops whose items are whole batches, a batch's fields or a few distinct tensors are not
"one copy per item", and a sampler's loop over its schedule is a loop of model steps."""

import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(16, 16).to(device)


def rotary(x, mask, cos, sin):
    x, mask, cos, sin = (t.to(device) for t in (x, mask, cos, sin))  # must not: GPU002
    for t in (x, mask):
        t.to(device)  # must not: GPU002
    return x, mask, cos, sin


def move_batch(batch):
    return {k: v.to(device) for k, v in batch.items()}  # must not: GPU002


def run_batches(batches):
    outputs = []
    for batch in batches:
        outputs.append(model(batch.to(device)))  # must not: GPU002, GPU011
    for i, micro_batch in enumerate(torch.randn(64, 16).split(8)):
        outputs.append(model(micro_batch.to(device)))  # must not: GPU002, GPU011
    for chunk in torch.chunk(torch.randn(64, 16), 4):
        outputs.append(model(chunk.to(device)))  # must not: GPU002, GPU011
    return outputs


def sample(x, steps):
    sigmas = torch.linspace(1.0, 0.0, steps, device=device)
    for sigma in sigmas:  # must not: GPU009
        x = x + sigma * model(x)
    return x


def per_sample(samples):
    preds = [model(s.to(device)) for s in samples]  # expect: GPU002, GPU011
    values = torch.randn(100, device=device)
    for v in values:  # expect: GPU009
        print(v + 1)  # expect: GPU001
    return preds
