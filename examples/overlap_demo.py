# "Measure this fix" demo: `gpulens measure-fix examples/overlap_demo.py --line 33 --rule GPU001`
# (or the code action on the `.item()` below). Each step prepares a batch on the host and then
# gives the GPU about as much work: with `.item()` every step, the host waits for each step's
# GPU work before it prepares the next batch; accumulated on the device, the two overlap.
# Needs torch and CUDA.
import torch

# %% setup: a model whose step takes the GPU about as long as the host takes to prepare a batch
device = torch.device("cuda")
model = torch.nn.Sequential(
    torch.nn.Linear(2048, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 2048)
).to(device)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
target = torch.randn(1024, 2048, device=device)
data = torch.randn(1024, 2048, device=device)
for _ in range(5):  # warm-up: cuBLAS handles, the allocator's pool
    torch.nn.functional.mse_loss(model(data), target).backward()
torch.cuda.synchronize()


def prepare(step):
    return sum(i * i for i in range(20_000 + step))  # host work, as a batch's preparation


# %% the training loop
total = 0.0
for step in range(100):
    seed = prepare(step)
    loss = torch.nn.functional.mse_loss(model(data * (seed % 7 + 1)), target)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    total += loss.item()
print(f"mean loss {total / 100:.4f}")
