# Cells for the end-to-end test: plain Python, so the profiler's host backend runs them
# anywhere, with or without a GPU or torch.
import math

# %% cell 1: settings
N = 60_000

# %% cell 2: one hot line, one cheap line
total = 0.0
for i in range(N):
    total += math.sqrt(i) * math.sin(i)
label = f"total={total:.3f}"
print(label)
