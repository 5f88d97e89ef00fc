import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

noise = torch.randn(64, 128).to(device)  # expect: GPU003
mask = torch.zeros(64, dtype=torch.bool).cuda()  # expect: GPU003
scratch = torch.empty(8).cuda()  # expect: GPU003
ids = torch.tensor([1, 2, 3]).to(device)  # must not: GPU003
ok = torch.randn(64, 128, device=device)

weights = torch.ones(10)
weights = weights.to(device)  # expect: GPU003

data = load()
from_data = torch.tensor(data).to(device)
half = torch.ones(3).to(torch.float16)

table = torch.zeros(4, 4)
table[:, 0] = 1
table = table.to(device)
