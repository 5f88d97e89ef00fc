"""A loop over what a collective gathered (`dist.all_gather(tensor_list, t)`, then `for
size, t in zip(sizes, tensor_list)`) runs once per process of the group, after the
collective: a handful of items (one per rank), read once per gather, not per sample."""

import pickle

import torch
import torch.distributed as dist

device = torch.device("cuda")


def all_gather(data):
    buffer = torch.frombuffer(pickle.dumps(data), dtype=torch.uint8).to(device)
    size = torch.tensor([buffer.numel()], device=device)
    sizes = [torch.zeros_like(size) for _ in range(dist.get_world_size())]
    dist.all_gather(sizes, size)
    sizes = [int(s.item()) for s in sizes]
    tensor_list = [torch.empty(max(sizes), dtype=torch.uint8, device=device) for _ in sizes]
    dist.all_gather(tensor_list, buffer)
    gathered = []
    for n, tensor in zip(sizes, tensor_list):
        gathered.append(pickle.loads(tensor.cpu().numpy().tobytes()[:n]))  # must not: GPU001
    return gathered


def per_sample(values):
    values = values.to(device)
    out = []
    for v in values:  # expect: GPU009
        out.append(v.cpu())  # expect: GPU001
    return out
