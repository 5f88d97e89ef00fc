"""A branch for another backend never runs on a CUDA GPU: `x.device.type == "mps"`,
`!= "cuda"`, `== "cpu"`, `not torch.cuda.is_available()` hold only off CUDA, so nothing
there waits for one. And `.cuda()` under `if torch.cuda.is_available():` is where the
program chooses the GPU: that branch runs only where CUDA is, which is its point."""

import torch

device = torch.device("cuda")


def integrate(precision, steps):
    precision = precision.to(device)
    out = []
    for _ in range(steps):
        if precision.device.type == "mps":
            host = precision.cpu()  # must not: GPU001
            out.append(host.cummax(dim=-1).values.to(precision.device))
        else:
            out.append(precision.cummax(dim=-1).values)
        if precision.device.type != "cuda":
            out.append(precision.cpu())  # must not: GPU001
        if not torch.cuda.is_available():
            out.append(precision.cpu())  # must not: GPU001
        out.append(precision.sum().item())  # expect: GPU001
    return out


def profile(model, batch):
    if torch.cuda.is_available():
        model = model.cuda()  # must not: GPU007
        batch = batch.cuda()  # must not: GPU007
    return model(batch)


def run(model, batch):
    model = model.cuda()  # expect: GPU007
    batch = batch.to("cuda")  # expect: GPU007
    x = torch.zeros(3, device="cuda")  # expect: GPU007
    return model(batch) + x
