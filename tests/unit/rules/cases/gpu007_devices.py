import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

model = MyNet().cuda()  # expect: GPU007
x = load().to("cuda")  # expect: GPU007
y = torch.empty(3, device="cuda")  # expect: GPU007
z = model(x.to(device))
w = x.cuda(1)
