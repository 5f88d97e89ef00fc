# gpulens profiler demo: `gpulens profile examples/profile_demo.py --cell N`.
# Cells 1 and 2 are plain Python (they run anywhere, with the host backend);
# cell 3 trains a small MLP on the GPU with torch, syncing every step with `.item()`.
import random

STEPS = 200
BATCH = 256

# %% cell 1: settings shared by the cells below
random.seed(0)
features, classes = 784, 10


# %% cell 2: plain-Python batch preparation (host time only: no GPU needed)
def make_batch(size):
    rows = [[random.random() for _ in range(features)] for _ in range(size)]
    labels = [random.randrange(classes) for _ in range(size)]
    return rows, labels


batches = [make_batch(BATCH // 8) for _ in range(4)]
checksum = sum(sum(row) for rows, _ in batches for row in rows)
print(f"prepared {len(batches)} batches, checksum {checksum:.1f}")

# %% cell 3: a launch-bound training loop on the GPU (needs torch and CUDA)
import torch  # noqa: E402

device = torch.device("cuda")
model = torch.nn.Sequential(
    torch.nn.Linear(features, 512), torch.nn.ReLU(), torch.nn.Linear(512, classes)
).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = torch.randn(BATCH, features)
target = torch.randint(0, classes, (BATCH,))
total = 0.0
for step in range(STEPS):
    x, y = data.to(device), target.to(device)
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    total += loss.item()
print(f"mean loss {total / STEPS:.3f}")
