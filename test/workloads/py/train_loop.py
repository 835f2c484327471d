"""train_loop [--rounds N] [--workers W] [--train N] [--test N] [--seed S]: a plain PyTorch
training script with a DataLoader, the other real shape of a round besides a federated client.

Each round trains one epoch on a stand-in of CIFAR-10 (random 3x32x32 images with labels, made
once: no dataset is downloaded), evaluates on a held-out set, and saves a checkpoint with
torch.save to a temporary file, as training scripts do between epochs. The DataLoaders start W
worker processes each epoch (fork), as torchvision's examples do, so the main process waits for
its batches between bursts of its own. It prints "start T" before the first round and
"boundary R T" after each checkpoint (T: CLOCK_MONOTONIC microseconds), the truth of
test/traces/README.md. Needs python3-torch only."""
import argparse
import os
import sys
import tempfile
import time

import torch
from torch import nn


def now_us():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000


class Net(nn.Module):
    """hello-pt's SimpleNetwork: the CIFAR-10 tutorial's small CNN."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


def dataset(n, generator):
    images = torch.rand((n, 3, 32, 32), generator=generator) * 2 - 1
    labels = torch.randint(0, 10, (n,), generator=generator)
    return torch.utils.data.TensorDataset(images, labels)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--train", type=int, default=4000)
    parser.add_argument("--test", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(args.seed)
    train_loader = torch.utils.data.DataLoader(dataset(args.train, generator), batch_size=16,
                                               shuffle=True, num_workers=args.workers)
    test_loader = torch.utils.data.DataLoader(dataset(args.test, generator), batch_size=16,
                                              num_workers=args.workers)
    model = Net()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    checkpoint = os.path.join(tempfile.mkdtemp(prefix="train_loop."), "model.pt")
    print("start %d" % now_us(), flush=True)
    for r in range(1, args.rounds + 1):
        model.train()
        for images, labels in train_loader:
            optimizer.zero_grad()
            loss_fn(model(images), labels).backward()
            optimizer.step()
        model.eval()
        correct = 0
        with torch.no_grad():
            for images, labels in test_loader:
                correct += (model(images).argmax(1) == labels).sum().item()
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "round": r, "accuracy": correct / args.test}, checkpoint)
        print("boundary %d %d" % (r, now_us()), flush=True)
    os.remove(checkpoint)
    os.rmdir(os.path.dirname(checkpoint))
    return 0


if __name__ == "__main__":
    sys.exit(main())
