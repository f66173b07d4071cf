#!/usr/bin/python3
"""Distributed data-parallel training of a small classifier on scikit-learn's
digits dataset (1,797 8x8 images, shipped by Debian's python3-sklearn), with
PyTorch's DistributedDataParallel over the gloo backend (CPU).

Muster starts one process per replica and sets MASTER_ADDR, MASTER_PORT,
WORLD_SIZE and RANK, as torchrun would. Every replica trains on its shard of
the training set; gradients are averaged across replicas each step, so all
replicas end with identical weights. Each prints its test accuracy and a
checksum of the weights: the replicas must agree.

With a checkpoint spec (MUSTER_CHECKPOINT_DIR), it uses python/muster_job.py:
replica 0 checkpoints the model, the optimizer and the epoch every
CKPT_EVERY epochs (default 5) and reports progress every epoch; every
replica resumes from MUSTER_RESUME_FROM when the attempt has one; and when
a checkpoint is requested (the checkpoint signal on any replica, or the
server's answer to a progress report) the replicas agree at the end of the
epoch, replica 0 checkpoints it, and all exit 0. Training is deterministic
(seeded initialization and shuffling per epoch), so an interrupted run ends
with the same weights as an uninterrupted one.

Elastic (an elastic spec, replicas {min, max}, run by `torchrun`, with
checkpoint.signal SIGTERM, which torchrun passes on to its workers): the
workers resume from the newest checkpoint of the attempt whenever torchrun
restarts them (replicas came or went), and on a checkpoint request the
replicas agree at the end of the epoch and checkpoint it; those whose own
process got the signal (their replica is given back, or torchrun restarts
them) then exit, the others train on, and torchrun re-forms the group.

Run alone (one process): /usr/bin/python3 examples/ddp_digits.py
"""
import os
import sys
import time

import torch
import torch.distributed as dist
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import muster_job as mj  # noqa: E402


def main():
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    epochs = int(os.environ.get("EPOCHS", "30"))
    every = int(os.environ.get("CKPT_EVERY", "5"))
    pause = float(os.environ.get("EPOCH_SLEEP", "0"))  # to make room for interruptions in tests
    checkpoints = bool(os.environ.get("MUSTER_CHECKPOINT_DIR"))
    elastic = bool(os.environ.get("MUSTER_MIN_REPLICAS"))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    torch.set_num_threads(1)
    torch.manual_seed(1234)
    if checkpoints:
        mj.install_signal_handler()
    if os.environ.get("PID_DIR"):
        with open(os.path.join(os.environ["PID_DIR"], "a%d.r%d" % (mj.attempt, rank)), "w") as f:
            f.write("%d %s\n" % (os.getpid(), os.environ.get("MUSTER_NODE", "")))
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
    start = 0
    resume = mj.latest_checkpoint()[0] if elastic else mj.resume_from()
    if resume:
        state = torch.load(os.path.join(resume, "state.pt"))
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        start = state["epoch"]
        print(f"rank {rank}/{world}: resumed at epoch {start} from {resume}", flush=True)
    loss_fn = torch.nn.CrossEntropyLoss()
    batch = 32
    steps = (len(shard_x) + batch - 1) // batch
    # All replicas must take the same number of steps (DDP averages each one).
    t = torch.tensor([steps])
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    steps = int(t.item())

    def save(epoch):
        if rank == 0:
            path = mj.new_checkpoint_dir(epoch)
            torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": epoch},
                       os.path.join(path, "state.pt"))
            mj.commit_checkpoint(path, epoch)
        dist.barrier()

    for epoch in range(start, epochs):
        g = torch.Generator().manual_seed(epoch * 1000 + rank)
        order = torch.randperm(len(shard_x), generator=g)
        for s in range(steps):
            idx = order[s * batch:(s + 1) * batch]
            opt.zero_grad()
            loss = loss_fn(ddp(shard_x[idx]), shard_y[idx])
            loss.backward()
            opt.step()
        done = epoch + 1
        if rank == 0 and done % 10 == 0:
            print(f"epoch {done}: loss {loss.item():.4f}", flush=True)
        if not checkpoints:
            continue
        stop = mj.report(step=done, loss=loss.item()) if rank == 0 else mj.checkpoint_requested(poll_seconds=1e9)
        flag = torch.tensor([1 if stop else 0])
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item() and done < epochs:
            save(done)
            if elastic and not stop:
                # Another replica leaves: train on; torchrun restarts this
                # worker in the smaller group, from the checkpoint just made.
                print(f"rank {rank}/{world}: checkpointed epoch {done} for a replica that leaves", flush=True)
                time.sleep(pause)
                continue
            print(f"rank {rank}: checkpointed epoch {done} on request; exiting", flush=True)
            dist.destroy_process_group()
            return 0
        if done % every == 0 and done < epochs:
            save(done)
        time.sleep(pause)

    with torch.no_grad():
        accuracy = (model(x_test).argmax(dim=1) == y_test).float().mean().item()
        checksum = sum(p.double().sum().item() for p in model.parameters())
    print(f"rank {rank}/{world}: test accuracy {accuracy:.4f} weights checksum {checksum:.6f}", flush=True)
    dist.destroy_process_group()
    return 0 if accuracy > 0.9 else 1


if __name__ == "__main__":
    sys.exit(main())
