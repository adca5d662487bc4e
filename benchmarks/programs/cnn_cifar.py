"""The CIFAR-10 tutorial's small CNN on CIFAR-sized synthetic images (3x32x32, 10 classes), with the training
accuracy counted the tutorial way: `correct += (predicted == labels).sum().item()` every batch."""
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

generator = torch.Generator().manual_seed(0)
images = torch.randn(10000, 3, 32, 32, generator=generator)
targets = torch.randint(0, 10, (10000,), generator=generator)
trainloader = DataLoader(TensorDataset(images, targets), batch_size=128, shuffle=True)
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.pool = nn.MaxPool2d(2, 2)
        self.fc1 = nn.Linear(64 * 8 * 8, 256)
        self.fc2 = nn.Linear(256, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        return self.fc2(F.relu(self.fc1(x)))


net = Net().to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

for epoch in range(2):
    running_loss = 0.0
    correct = 0
    total = 0
    for i, data in enumerate(trainloader, 0):
        inputs, labels = data[0].to(device), data[1].to(device)
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
        _, predicted = torch.max(outputs, 1)
        total += labels.size(0)
        correct += (predicted == labels).sum().item()
        if i % 20 == 19:
            print(f"[{epoch + 1}, {i + 1:5d}] loss: {running_loss / 20:.3f} acc: {100 * correct / total:.1f} %")
            running_loss = 0.0
print("Finished Training")
