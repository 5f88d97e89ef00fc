"""Fixes that would change what the program does are offered as quick-fixes only (with a
note of what changes), or not at all; findings whose advice would break the program are not
made."""

import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class OnDevice(Dataset):
    """Keeps its samples on the GPU: a loader over it cannot pin them or use workers."""

    def __init__(self, n):
        self.data = torch.randn(n, 8).to(device)  # expect: GPU003

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        return self.data[index]


class Stream(IterableDataset):
    """Yields every record; does not split them between worker processes."""

    def __iter__(self):
        for index in range(1000):
            yield torch.full((8,), float(index))


class Records(Dataset):
    def __len__(self):
        return 100

    def __getitem__(self, index):
        return torch.full((8,), float(index))


cuda_items = DataLoader(OnDevice(100), batch_size=16)  # must not: GPU005
streamed = DataLoader(Stream(), batch_size=16, pin_memory=True)  # expect: GPU005
records = DataLoader(Records(), batch_size=16, num_workers=2)  # expect: GPU005
unknown = DataLoader(load_dataset(), batch_size=16, num_workers=2)  # quick-fix only: GPU005  # expect: GPU005
tensors = DataLoader(TensorDataset(torch.randn(64, 8)), batch_size=16, num_workers=2)  # expect: GPU005
workers = DataLoader(Records(), batch_size=16, pin_memory=True)  # quick-fix only: GPU005  # expect: GPU005

noise = torch.randn(16, 8).to(device)  # quick-fix only: GPU003  # expect: GPU003
grid = torch.linspace(0, 1, 50).to(device)  # quick-fix only: GPU003  # expect: GPU003
leaf = torch.zeros(8, requires_grad=True).to(device)  # quick-fix only: GPU003  # expect: GPU003
zeros = torch.zeros(16, 8).to(device)  # expect: GPU003
steps = torch.arange(16).to(device)  # expect: GPU003
model = torch.nn.Linear(8, 8).cuda()  # expect: GPU007


def build(device):
    return torch.nn.Linear(8, 8).cuda()  # quick-fix only: GPU007  # expect: GPU007


def train(loader, optimizer):
    total = 0  # an int: summed on the device it would come back a float
    for x in loader:
        loss = model(x.to(device, non_blocking=True)).sum()
        loss.backward()
        optimizer.step()
        total += loss.item()  # quick-fix only: GPU001  # expect: GPU001
    return total


def logged(loader):
    total = 0.0
    for step, x in enumerate(loader):
        loss = model(x.to(device, non_blocking=True)).sum()
        total += loss.item()  # expect: GPU001
        if step % 10 == 0:
            print(total / (step + 1))
    return total
