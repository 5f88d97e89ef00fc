"""A small MNIST-style training script with the classic GPU pitfalls.

Run `gpulens check examples/train_pitfalls.py` to see them, `--fix` to repair the safe ones;
`train_fixed.py` is the same script written the way the GPU likes it.
"""

import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

images = torch.randn(4096, 784)
labels = torch.randint(0, 10, (4096,))
loader = DataLoader(TensorDataset(images, labels), batch_size=256, shuffle=True)

model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 10)).cuda()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def train_one_epoch() -> float:
    total = 0.0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = criterion(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / len(loader)


start = time.perf_counter()
for epoch in range(3):
    noise = torch.randn(256, 784).to(device)
    mean_loss = train_one_epoch()
    print(f"epoch {epoch}: loss {mean_loss:.3f}")
logits = model(noise)
print(f"3 epochs + a forward pass: {time.perf_counter() - start:.2f} s")
