"""A pure-Python allocation loop for the cost of Python frames: one operation builds and
drops 5,000 bytearrays and 5,000 lists of 520-2,000 B (past pymalloc's 512 B, so that each
is a malloc liveheap sees) from 40 Python frames deep.

    /usr/bin/python3 python_objects.py [--count 10] [--warmup 2]

Prints cpu_ns_per_op=, minflt_per_op=, madvise_per_op= (see py_workload.py).
"""
import py_workload


def build(n):
    kept = []
    for i in range(n):
        kept.append((bytearray(520 + i % 1480), [i] * (66 + i % 180)))
    return len(kept)


def descend(depth, n):
    return build(n) if depth == 0 else descend(depth - 1, n)


def main():
    args = py_workload.parse_args(__doc__)
    py_workload.measure(lambda: descend(40, 5000), "op", args)


if __name__ == "__main__":
    main()
