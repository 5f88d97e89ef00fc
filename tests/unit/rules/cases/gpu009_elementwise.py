import torch

x = torch.randn(1000, device="cuda")
y = torch.empty_like(x)
for i in range(len(x)):
    y[i] = x[i] * 2 + 1  # expect: GPU009
    y[i] += 1

for v in x:  # expect: GPU009
    pass

model = torch.nn.Linear(4, 4).cuda()
for p in model.parameters():
    p.requires_grad_(False)
