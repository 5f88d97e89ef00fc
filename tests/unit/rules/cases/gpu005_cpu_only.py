from torch.utils.data import DataLoader

loader = DataLoader(range(10), batch_size=2)
for batch in loader:
    print(batch)
