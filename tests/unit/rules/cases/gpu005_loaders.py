import torch
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda")
dataset = TensorDataset(torch.randn(100, 3), torch.randint(0, 2, (100,)))

train = DataLoader(dataset, batch_size=32, shuffle=True)  # expect: GPU005, GPU005
pinned = DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=True)
serial = DataLoader(dataset, batch_size=32, pin_memory=True, num_workers=0)  # expect: GPU005
single = DataLoader(dataset, batch_size=1, num_workers=2, pin_memory=True)  # expect: GPU011

on_gpu = TensorDataset(torch.randn(100, 3, device=device))
direct = DataLoader(on_gpu, batch_size=32)

for x, y in train:
    x = x.to(device)  # expect: GPU006
    y = y.cuda(non_blocking=True)  # expect: GPU007
