# "Measure this fix" demo (needs torch and CUDA): the code action on the `.item()` below, or
#     gpulens measure-fix examples/overlap_demo.py --line 69 --rule GPU001
#
# Each training step prepares a batch on the host (Python work, as a data loader without
# workers does), then gives the GPU one step of work. With `.item()` every step, the host waits
# for that step's GPU work before it prepares the next batch: a step costs the host's time plus
# the GPU's. With the loss accumulated on the device, the host prepares the next batch while
# the GPU runs the last step: a step costs about the longer of the two. So the fix saves the
# shorter of the two, at most half the cell when they are equal: the setup makes them equal on
# the machine it runs on, rather than guessing one CPU's Python speed against one GPU's.
import time

import torch

# %% setup: the model, a warm-up, and the host's work per step sized to the GPU's
device = torch.device("cuda")
# wide enough that a step's GPU work (forward, backward and update of 2 x 2048 x 8192 weights
# on a batch of 1024: about 170 GFLOP, ~3 ms on an H200 in float32) is several times the
# ~0.5 ms the host takes to launch it, so the GPU's time is work, not launch overhead
model = torch.nn.Sequential(
    torch.nn.Linear(2048, 8192), torch.nn.ReLU(), torch.nn.Linear(8192, 2048)
).to(device)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
target = torch.randn(1024, 2048, device=device)
data = torch.randn(1024, 2048, device=device)


def prepare(items):
    return sum(i * i for i in range(items))  # host work, as a batch's preparation


def host_seconds(items):
    began = time.perf_counter()
    prepare(items)
    return time.perf_counter() - began


def queue_steps(count):
    for _ in range(count):
        loss = torch.nn.functional.mse_loss(model(data), target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


# the GPU's time per step: 20 steps queued back to back, after a second of steps that warms
# cuBLAS's handles, the allocator's pool and the optimizer's kernels, and brings the GPU's
# clocks up from idle (a fresh process finds them low: the steps timed, and the loop, would
# run at a clock still climbing)
warm_until = time.perf_counter() + 1.0
while time.perf_counter() < warm_until:
    queue_steps(5)
    torch.cuda.synchronize()
began = time.perf_counter()
queue_steps(20)
torch.cuda.synchronize()
gpu_step_s = (time.perf_counter() - began) / 20
# the host's work per step: as many items as take that long (the fastest of 3 timings)
items = int(100_000 * gpu_step_s / min(host_seconds(100_000) for _ in range(3)))

# %% the training loop
total = 0.0
for step in range(100):
    seed = prepare(items + step)
    loss = torch.nn.functional.mse_loss(model(data * (1 + seed % 7 / 10)), target)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    total += loss.item()
print(f"mean loss {total / 100:.4f}")
