# Leaks at known lines, for python_frames_test.cpp: each command on stdin leaks 1 MiB
# bytearrays at its line (a function, two threads, a generator, a coroutine) and answers
# with tracemalloc's size at each line it leaked from, started in this process: the
# oracle liveheap's /diff?key=line is held to.
import asyncio
import sys
import threading
import tracemalloc

MIB = 1 << 20
kept = []


def leak_in_function(n):
    for _ in range(n):
        kept.append(bytearray(MIB))  # site: function


def leak_in_first_thread(n):
    for _ in range(n):
        kept.append(bytearray(MIB))  # site: first thread


def leak_in_second_thread(n):
    for _ in range(n):
        kept.append(bytearray(MIB))  # site: second thread


def leaking_generator():
    while True:
        kept.append(bytearray(MIB))  # site: generator
        yield


async def leak_in_coroutine(n):
    for _ in range(n):
        kept.append(bytearray(MIB))  # site: coroutine
        await asyncio.sleep(0)


def run_threads(n):
    threads = [threading.Thread(target=leak_in_first_thread, args=(n,)),
               threading.Thread(target=leak_in_second_thread, args=(n,))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def run_generator(n):
    g = leaking_generator()
    for _ in range(n):
        next(g)


COMMANDS = {
    "function": lambda n: leak_in_function(n),
    "threads": run_threads,
    "generator": run_generator,
    "coroutine": lambda n: asyncio.run(leak_in_coroutine(n)),
}


def main():
    tracemalloc.start()
    print("ready", flush=True)
    for line in sys.stdin:
        command, n = line.split()
        before = tracemalloc.take_snapshot()
        COMMANDS[command](int(n))
        after = tracemalloc.take_snapshot()
        # "<line> <bytes>" for each line of this file that grew by a MiB or more, then "done"
        for stat in after.compare_to(before, "lineno"):
            frame = stat.traceback[0]
            if frame.filename == __file__ and stat.size_diff >= MIB:
                print(frame.lineno, stat.size_diff, flush=True)
        print("done", flush=True)


main()
