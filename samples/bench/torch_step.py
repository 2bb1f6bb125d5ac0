"""The PyTorch workload of the overhead benchmark: one operation is one training
step of Conv1d(16, 16, 3) on a batch of 8x16x2000 and Linear(1024, 1024) on 64x1024:
forward, backward, an SGD step. One intra-op thread, so that CPU time is the step's.

    /usr/bin/python3 torch_step.py [--count 20] [--warmup 3]

Prints cpu_ns_per_step=, minflt_per_step=, madvise_per_step= (see py_workload.py).
"""
import py_workload


def main():
    args = py_workload.parse_args(__doc__)
    try:
        import torch
    except ImportError as e:
        py_workload.skip(f"python3-torch not installed ({e})")
        return
    torch.manual_seed(11)
    torch.set_num_threads(1)
    conv = torch.nn.Conv1d(16, 16, 3)
    linear = torch.nn.Linear(1024, 1024)
    optimizer = torch.optim.SGD(list(conv.parameters()) + list(linear.parameters()), lr=1e-3)
    signal = torch.randn(8, 16, 2000)
    features = torch.randn(64, 1024)

    def step():
        optimizer.zero_grad()
        loss = conv(signal).square().mean() + linear(features).square().mean()
        loss.backward()
        optimizer.step()

    py_workload.measure(step, "step", args)


if __name__ == "__main__":
    main()
