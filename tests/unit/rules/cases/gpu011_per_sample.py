import torch

device = torch.device("cuda")
model = torch.nn.Linear(16, 4).to(device)
samples = [torch.randn(16) for _ in range(100)]

preds = [model(s.unsqueeze(0).to(device)) for s in samples]  # expect: GPU002, GPU011
h = torch.zeros(4, device=device)
cell = torch.nn.RNNCell(16, 4).to(device)
for t in range(10):
    h = cell(samples[t].to(device), h)  # expect: GPU002
