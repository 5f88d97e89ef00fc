import torch

model = Net().cuda()
x = load().cuda()
