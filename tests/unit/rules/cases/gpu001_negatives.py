import numpy as np

data = np.random.rand(1000)
total = 0.0
for i in range(len(data)):
    total += data[i].item()
    print(float(data[i]))


class Meter:
    def __init__(self):
        self.sum = 0.0

    def update(self, value):
        self.sum += value.item()


def steps(model, loader):
    for x in loader:
        out = x.cpu()
        print(out.item())
