import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(1020, 500)  # expect: GPU010, GPU010
        self.fc2 = nn.Linear(512, 10)
        self.conv = nn.Conv2d(3, 64, 3)


model = Net().cuda()
with torch.autocast("cuda", dtype=torch.bfloat16):
    out = model(torch.randn(8, 1020, device="cuda"))
