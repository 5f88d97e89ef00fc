"""`train_pitfalls.py`, written the way the GPU likes it: gpulens finds nothing here."""

import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

images = torch.randn(4096, 784)
labels = torch.randint(0, 10, (4096,))
loader = DataLoader(
    TensorDataset(images, labels), batch_size=256, shuffle=True, num_workers=2, pin_memory=True
)

model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 10)).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def train_one_epoch() -> float:
    total = torch.zeros((), device=device)
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = criterion(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        total += loss.detach()
        if step % 50 == 0:
            print(f"step {step}: loss {loss.item():.3f}")
    return total.item() / len(loader)


if __name__ == "__main__":
    start = time.perf_counter()
    for epoch in range(3):
        noise = torch.randn(256, 784, device=device)
        mean_loss = train_one_epoch()
        print(f"epoch {epoch}: loss {mean_loss:.3f}")
    logits = model(noise)
    if device.type == "cuda":
        torch.cuda.synchronize()
    print(f"3 epochs + a forward pass: {time.perf_counter() - start:.2f} s")
