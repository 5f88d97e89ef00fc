import torch
import torch.nn as nn
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 10)).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def train_one_epoch(loader):
    total = 0.0
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()  # expect: GPU001
        if step % 100 == 0:
            print(f"step {step}: {loss.item():.4f}")
        if step == 0:
            first = loss.item()
    return total, first


def evaluate(loader):
    correct = 0
    model.eval()
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            pred = model(x).argmax(dim=1)
            correct += int((pred == y).sum())  # expect: GPU001
    return correct


def early_stop(x, y):
    best = float("inf")
    for epoch in range(100):
        loss = criterion(model(x), y)
        if loss < best:  # expect: GPU001
            best = loss
        if loss.item() < 1e-3:  # hint: GPU001
            break
        torch.cuda.synchronize()  # expect: GPU001
        print(loss)  # expect: GPU001
        losses = [l.item() for l in loss.split(1)]  # expect: GPU001


def read_once(x, y):
    loss = criterion(model(x), y)
    print(loss.item())
    for _ in range(3):
        found = loss.item()
        break
    return found


def host_only(values):
    # no GPU value anywhere: nothing to report
    total = 0
    for v in values:
        total += v.item()
        print(float(v))
    return total


def train_step(x, y):
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()  # expect: GPU001


def epoch(loader):
    total = 0.0
    for x, y in loader:
        total += train_step(x.to(device, non_blocking=True), y.to(device, non_blocking=True))
    return total


def fit(loader):
    for _ in range(10):
        history = run_epoch(loader)
    return history


def run_epoch(loader):
    total = torch.zeros((), device=device)
    for x, y in loader:
        total += criterion(model(x.to(device, non_blocking=True)), y.to(device, non_blocking=True)).detach()
    return total.item()
