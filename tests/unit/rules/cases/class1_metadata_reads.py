"""Metadata, identity and type checks never wait for the GPU, and a module's parts are
whole tensors or names, not the elements of an array."""

import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)).to(device)


def exists(value):
    return value is not None


def default(value, fallback):
    return value if exists(value) else fallback


def is_half(t):
    return t.dtype in (torch.float16, torch.bfloat16) and t.ndim > 1


def train(loader, mask=None):
    for step, (x, y) in enumerate(loader):
        x = x.to(device, non_blocking=True)
        out = model(x)
        if out is not None:  # must not: GPU001
            pass
        if isinstance(out, tuple):  # must not: GPU001
            out = out[0]
        if hasattr(out, "logits"):  # must not: GPU001
            out = out.logits
        if len(out) > 4:  # must not: GPU001
            pass
        if exists(mask):  # must not: GPU001
            pass
        if is_half(out):  # must not: GPU001
            pass
        if out.shape[0] > 2 and out.dtype == torch.float16:  # must not: GPU001
            pass
        if out.device.type == "cuda" and out.is_cuda and out.requires_grad:  # must not: GPU001
            pass
        if out.ndim == 2 or out.numel() > 10 or out.size(0) > 1:  # must not: GPU001
            pass
        width = int(out.shape[-1])  # must not: GPU001
        print(f"step {step}: shape {tuple(out.shape)}, dtype {out.dtype}")  # must not: GPU001
        for name, p in model.named_parameters():  # must not: GPU009
            if "bias" in name:  # must not: GPU001
                p.requires_grad_(False)
        for p in model.parameters():  # must not: GPU009
            if p.grad is None:  # must not: GPU001
                continue
        for m in model.modules():  # must not: GPU009
            if isinstance(m, nn.Linear):  # must not: GPU001
                pass
        for child in model.children():  # must not: GPU009
            pass
        for name, child in model.named_children():  # must not: GPU009
            if name.startswith("0"):  # must not: GPU001
                pass
        for key, tensor in model.state_dict().items():  # must not: GPU009
            if key.endswith("weight"):  # must not: GPU001
                pass
        for b in model.buffers():  # must not: GPU009
            pass
        loss = nn.functional.cross_entropy(out, y.to(device, non_blocking=True))
        print(loss.item(), width, default(mask, 0))  # expect: GPU001


def fine_tune(net, loader):
    net = net.to(device)
    for x in loader:
        out = net(x.to(device, non_blocking=True))
        if exists(out):  # must not: GPU001
            pass
        for name, p in net.named_parameters():  # must not: GPU009
            if "norm" in name:  # must not: GPU001
                p.requires_grad_(False)
        for p in net.parameters():  # must not: GPU009
            pass
        for m in net.modules():  # must not: GPU009
            pass
