import torch

model = Net().cuda()  # expect: GPU007
x = load().cuda()  # expect: GPU007
y = torch.empty(3, device="cuda")  # expect: GPU007
