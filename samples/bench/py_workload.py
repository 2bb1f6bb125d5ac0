"""Measures one operation of a Python workload for the overhead benchmark.

Runs `op` `warmup` times (imports done, heaps grown), then `count` times, and prints the
median CPU time of one operation (`cpu_ns_per_<unit>=`, time.process_time_ns: the whole
process's CPU time, all threads), and per operation the minor page faults
(`minflt_per_<unit>=`, getrusage) and madvise calls (`madvise_per_<unit>=`, from the
benchmark's preloaded counter, libbench_madvise_counter.so; "nan" when it is not preloaded).
Not linked to liveheap: the driver runs it bare and under LD_PRELOAD.
"""
import argparse
import ctypes
import resource
import statistics
import time


def parse_args(description):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--count", type=int, default=10, help="operations measured")
    parser.add_argument("--warmup", type=int, default=2, help="operations run first, not measured")
    args = parser.parse_args()
    if args.count < 1 or args.warmup < 0:
        parser.error("--count must be >= 1 and --warmup >= 0")
    return args


def madvise_calls():
    counter = getattr(ctypes.CDLL(None), "liveheap_bench_madvise_calls", None)
    if counter is None:
        return float("nan")
    counter.restype = ctypes.c_long
    return counter()


def measure(op, unit, args):
    for _ in range(args.warmup):
        op()
    cpu = []
    faults_before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    madvise_before = madvise_calls()
    for _ in range(args.count):
        begin = time.process_time_ns()
        op()
        cpu.append(time.process_time_ns() - begin)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults_before
    print(f"cpu_ns_per_{unit}={statistics.median(cpu):.0f}")
    print(f"minflt_per_{unit}={faults / args.count:.2f}")
    print(f"madvise_per_{unit}={(madvise_calls() - madvise_before) / args.count:.2f}")


def skip(why):
    """The line the driver prints as the row when the workload cannot run here."""
    print(f"skipped: {why}")
