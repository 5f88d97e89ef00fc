import torch

scratch = torch.empty(8).cuda()  # expect: GPU003
