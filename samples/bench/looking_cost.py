#!/usr/bin/env python3
"""What asking costs the processes that are looked at: the resident memory each process of
a program gains over REPORTS reports, beside what its tracker's own tables gained, and the
symbolizer process's memory (where the debug information is read, once for all of them).

Rows: a gunicorn app of WORKERS workers drawing a matplotlib figure per request (the seed
story, Debian's python3-flask, gunicorn and python3-matplotlib) under the preload library in
sampled mode, asked GET /diff?pid=all; and the sample Beast server (leaky_server, which links
liveheap), asked GET /diff. With --baseline-preload, the gunicorn row runs again under that
library (another build, e.g. the previous release), measured in the same run.

  looking_cost.py --preload LIB --server LEAKY_SERVER [--baseline-preload LIB]
                  [--workers 4] [--reports 20]
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

PYTHON = "/usr/bin/python3"  # Debian's, with its packages

APP = '''
import io
from flask import Flask
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
app = Flask(__name__)
@app.route("/figure")
def figure():
    fig = plt.figure(figsize=(6, 4))  # never closed: the seed story's leak
    fig.gca().plot(range(100))
    fig.savefig(io.BytesIO(), format="png")
    return "ok"
'''


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path, timeout=120):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
        return r.read()


def post(port, path):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method="POST", data=b"")
    with urllib.request.urlopen(req, timeout=120) as r:
        return r.read()


def wait_for(port, path, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            return get(port, path, timeout=5)
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"nothing answered {path} on port {port} within {seconds} s")


def resident(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def descendants(root):
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return sorted(out)


def tracker_memory(port, pid=None):
    query = "/debug/memory/stats?format=json" + (f"&pid={pid}" if pid else "")
    try:
        return json.loads(get(port, query))["tracker_memory"]
    except (OSError, ValueError, KeyError):
        return None


def measure(name, port, pids, report_path, reports, per_pid):
    """Per process: RSS and tracker memory before and after `reports` reports."""
    before = {p: (resident(p), tracker_memory(port, p if per_pid else None)) for p in pids}
    started = time.time()
    for _ in range(reports):
        get(port, report_path)
    seconds = time.time() - started
    after = {p: (resident(p), tracker_memory(port, p if per_pid else None)) for p in pids}
    stats = json.loads(get(port, "/debug/memory/stats?format=json"))
    symbolizer = stats.get("symbolizer", {}).get("process", {}).get("rss_bytes")
    rows = []
    for p in pids:
        (r0, t0), (r1, t1) = before[p], after[p]
        if r0 is None or r1 is None:
            continue
        rows.append((p, (r1 - r0) / 2**20, None if t0 is None or t1 is None else (t1 - t0) / 2**20, r1 / 2**20))
    print(f"\n{name}: {reports} x GET {report_path} ({seconds:.1f} s)")
    print(f"{'pid':>8} {'rss after':>10} {'rss grown':>10} {'tracker grown':>14} {'other grown':>12}")
    for pid, grown, tracker, rss in rows:
        other = "" if tracker is None else f"{grown - tracker:9.2f} MiB"
        tracker_text = "" if tracker is None else f"{tracker:10.2f} MiB"
        print(f"{pid:>8} {rss:7.1f} MiB {grown:6.2f} MiB {tracker_text:>14} {other:>12}")
    if symbolizer is not None:
        print(f"symbolizer process: {symbolizer / 2**20:.1f} MiB resident (shared by every process of the user)")
    elif "problem" in stats.get("symbolizer", {}):
        print(f"symbolizer: {stats['symbolizer']['problem']}")
    else:
        print("symbolizer: in the process (this build has no symbolizer process)")


def gunicorn_row(preload, workers, reports, label):
    if subprocess.call([PYTHON, "-c", "import flask, gunicorn, matplotlib"],
                       stderr=subprocess.DEVNULL) != 0:
        print(f"\n{label}: skipped: needs python3-flask, gunicorn and python3-matplotlib")
        return
    work = tempfile.mkdtemp(prefix="liveheap-looking-")
    try:
        with open(os.path.join(work, "figure_app.py"), "w") as f:
            f.write(APP)
        app_port, port = free_port(), free_port()
        env = dict(os.environ, LD_PRELOAD=preload, LIVEHEAP_ADDR=f"127.0.0.1:{port}",
                   LIVEHEAP_MODE="sampled", XDG_RUNTIME_DIR=work, MPLCONFIGDIR=os.path.join(work, "mpl"),
                   MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1")
        server = subprocess.Popen([PYTHON, "-m", "gunicorn", "-w", str(workers), "-b",
                                   f"127.0.0.1:{app_port}", "--chdir", work, "figure_app:app"],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(app_port, "/figure")
            for _ in range(8 * workers):
                get(app_port, "/figure")
            deadline = time.time() + 30
            while time.time() < deadline:
                listed = json.loads(get(port, "/debug/memory/processes?format=json"))
                if len(listed.get("processes", [])) >= workers + 1:
                    break
                time.sleep(0.5)
            post(port, "/debug/memory/baseline?pid=all")
            measure(label, port, descendants(server.pid), "/debug/memory/diff?pid=all&limit=20", reports, True)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def beast_row(server_path, reports):
    port = free_port()
    server = subprocess.Popen([server_path, "--host", "127.0.0.1", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(port, "/ok")
        post(port, "/debug/memory/baseline")
        for path in ("/client", "/figure", "/convert?rows=2000") * 5:
            get(port, path)
        measure("sample Beast server (leaky_server, linked)", port, [server.pid], "/debug/memory/diff?limit=20",
                reports, False)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preload", required=True)
    parser.add_argument("--server", required=True)
    parser.add_argument("--baseline-preload")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--reports", type=int, default=20)
    args = parser.parse_args()
    gunicorn_row(args.preload, args.workers, args.reports,
                 f"gunicorn -w {args.workers}, figure app, sampled, this build")
    if args.baseline_preload:
        gunicorn_row(args.baseline_preload, args.workers, args.reports,
                     f"gunicorn -w {args.workers}, figure app, sampled, {args.baseline_preload}")
    beast_row(args.server, args.reports)


if __name__ == "__main__":
    main()
