import torch

device = torch.device("cuda")
samples = [[1.0, 2.0], [3.0, 4.0]]

batch = torch.stack([torch.tensor(s).to(device) for s in samples])  # expect: GPU002
rows = [torch.tensor(s, device=device) for s in samples]  # expect: GPU002

gpu_rows = []
for s in samples:
    gpu_rows.append(torch.as_tensor(s).cuda())  # expect: GPU002, GPU007

once = torch.tensor(samples).to(device)


def per_batch(loader):
    for x, y in loader:
        x = x.to(device, non_blocking=True)
        batch = {k: v.to(device, non_blocking=True) for k, v in y.items()}
