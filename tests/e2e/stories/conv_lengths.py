# The PyTorch founding story: a Conv1d fed inputs of ever new lengths. Each new shape makes
# oneDNN build a convolution primitive, which PyTorch's ideep keeps in an LRU cache of
# LRU_CACHE_CAPACITY entries (1024 by default): the heap grows per new length until the
# cache is full, then stays. Driven through files in argv[1]: once ready (torch imported,
# one warm-up length run) it writes "ready"; for k = 1, 2, ... it waits for "go<k>" (the
# number of new lengths to run), runs them and writes "done<k>".
import os
import sys
import time

import torch

control = sys.argv[1]
torch.set_num_threads(1)
conv = torch.nn.Conv1d(16, 16, 3)


def run(first, count):
    with torch.no_grad():
        for length in range(first, first + count):
            conv(torch.randn(8, 16, length))


def touch(name):
    with open(os.path.join(control, name), "w") as f:
        f.write("1")


run(100, 1)
touch("ready")
next_length, step = 101, 1
while True:
    go = os.path.join(control, "go%d" % step)
    while not os.path.exists(go):
        time.sleep(0.01)
    with open(go) as f:
        count = int(f.read())
    run(next_length, count)
    next_length += count
    touch("done%d" % step)
    step += 1
