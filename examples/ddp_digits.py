#!/usr/bin/python3
"""Distributed data-parallel training of a small classifier on scikit-learn's
digits dataset (1,797 8x8 images, shipped by Debian's python3-sklearn), with
PyTorch's DistributedDataParallel over the gloo backend (CPU).

Muster starts one process per replica and sets MASTER_ADDR, MASTER_PORT,
WORLD_SIZE and RANK, as torchrun would. Every replica trains on its shard of
the training set; gradients are averaged across replicas each step, so all
replicas end with identical weights. Each prints its test accuracy and a
checksum of the weights: the replicas must agree.

Run alone (one process): /usr/bin/python3 examples/ddp_digits.py
"""
import os
import sys

import torch
import torch.distributed as dist
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split


def main():
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    epochs = int(os.environ.get("EPOCHS", "30"))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    torch.set_num_threads(1)
    torch.manual_seed(1234)
    dist.init_process_group("gloo", rank=rank, world_size=world)

    x, y = load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(x / 16.0, y, test_size=0.25, random_state=0, stratify=y)
    x_train = torch.tensor(x_train, dtype=torch.float32)
    y_train = torch.tensor(y_train)
    x_test = torch.tensor(x_test, dtype=torch.float32)
    y_test = torch.tensor(y_test)
    # This replica's shard: every world-th sample.
    shard_x, shard_y = x_train[rank::world], y_train[rank::world]

    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    batch = 32
    steps = (len(shard_x) + batch - 1) // batch
    # All replicas must take the same number of steps (DDP averages each one).
    t = torch.tensor([steps])
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    steps = int(t.item())
    for epoch in range(epochs):
        g = torch.Generator().manual_seed(epoch * 1000 + rank)
        order = torch.randperm(len(shard_x), generator=g)
        for s in range(steps):
            idx = order[s * batch:(s + 1) * batch]
            opt.zero_grad()
            loss = loss_fn(ddp(shard_x[idx]), shard_y[idx])
            loss.backward()
            opt.step()
        if rank == 0 and (epoch + 1) % 10 == 0:
            print(f"epoch {epoch + 1}: loss {loss.item():.4f}", flush=True)

    with torch.no_grad():
        accuracy = (model(x_test).argmax(dim=1) == y_test).float().mean().item()
        checksum = sum(p.double().sum().item() for p in model.parameters())
    print(f"rank {rank}/{world}: test accuracy {accuracy:.4f} weights checksum {checksum:.6f}", flush=True)
    dist.destroy_process_group()
    return 0 if accuracy > 0.9 else 1


if __name__ == "__main__":
    sys.exit(main())
