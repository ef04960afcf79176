"""DataLoader start-up at scale: the first batch of a large map-style dataset, tinytensor against
PyTorch, as ratios from one run.

    python benchmarks/bench_loader.py [--samples 100000000] [--workers 0,2] [--json out.json]

The dataset is N samples that hold nothing (sample i is i), batch_size 1: what is measured is the
loader's own cost of starting an epoch: drawing the order (shuffle=True) or not, starting the
worker processes and handing them batches. For each contender, number of workers and shuffle,
one fresh process builds the loader and times `next(iter(loader))`; it reports that time and its
peak resident memory above what it held before the epoch started (after its imports), and, with
workers, the largest worker's peak resident memory. Fresh processes: a peak is a process's
lifetime maximum, and neither side then finds the other's memory or threads.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import resource
import subprocess
import sys
import time


class Numbers:
    """Sample i is i (module level: spawned workers pickle it)."""

    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> int:
        return i


def _status_mib(field: str) -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_peak() -> None:
    # VmHWM, not ru_maxrss: the latter keeps the peak of the process this one was forked from.
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # peak resident memory := current (Linux 4.0+)


def child(contender: str, samples: int, workers: int, shuffle: bool) -> dict:
    """One measurement, in this (fresh) process."""
    if contender == "torch":
        import torch
        from torch.utils.data import DataLoader

        torch.manual_seed(0)
    else:
        import tinytensor as tt
        from tinytensor.data import DataLoader

        tt.manual_seed(0)
    loader = DataLoader(Numbers(samples), batch_size=1, shuffle=shuffle, num_workers=workers)
    _reset_peak()
    before = _status_mib("VmRSS")
    start = time.perf_counter()
    epoch = iter(loader)
    batch = next(epoch)
    seconds = time.perf_counter() - start
    peak = _status_mib("VmHWM")
    assert int(batch[0]) in range(samples)
    del epoch, batch  # stops the workers, so that their peak is read below
    gc.collect()
    time.sleep(0.2)
    workers_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024 if workers else 0.0  # KiB on Linux
    return {"seconds": seconds, "added_mib": max(0.0, peak - before), "worker_peak_mib": workers_peak}


def measure(contender: str, samples: int, workers: int, shuffle: bool, timeout: float) -> dict | None:
    argv = [sys.executable, __file__, "--child", contender, "--samples", str(samples), "--workers", str(workers)]
    if shuffle:
        argv.append("--shuffle")
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"over {timeout:.0f} s"}
    if done.returncode:
        tail = (done.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": f"exit {done.returncode}: {tail}"}
    result: dict = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="DataLoader first batch: tinytensor against PyTorch")
    parser.add_argument("--samples", type=int, default=10**7, help="dataset size (default 10**7)")
    parser.add_argument("--workers", default="0,2", help="numbers of worker processes, comma-separated")
    parser.add_argument("--timeout", type=float, default=600, help="seconds one measurement may take")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--shuffle", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        workers = int(args.workers)
        print(json.dumps(child(args.child, args.samples, workers, args.shuffle)))
        return 0

    # Not imported here: each contender is measured in a process of its own.
    contenders = ["tinytensor", "torch"] if importlib.util.find_spec("torch") else ["tinytensor"]
    if len(contenders) == 1:
        print("PyTorch is not installed: ratios against it are left out")
    print(f"first batch of a {args.samples:,}-sample map-style dataset, batch_size=1 (cpu count {os.cpu_count()})")
    print(
        f"{'workers':>7} {'shuffle':>7} {'contender':>10} {'seconds':>8} {'+MiB':>8} {'worker MiB':>10}"
        f" {'time tt/torch':>13} {'mem tt/torch':>12}"
    )
    rows = []
    for workers in [int(w) for w in args.workers.split(",")]:
        for shuffle in (False, True):
            found = {name: measure(name, args.samples, workers, shuffle, args.timeout) for name in contenders}
            for name, r in found.items():
                assert r is not None
                rows.append({"contender": name, "workers": workers, "shuffle": shuffle, "samples": args.samples, **r})
                if "error" in r:
                    print(f"{workers:>7} {shuffle!s:>7} {name:>10} {r['error']}")
                    continue
                ratios = ""
                theirs = found.get("torch")
                if name == "tinytensor" and theirs and "error" not in theirs:
                    time_ratio = r["seconds"] / theirs["seconds"]
                    mem_ratio = (r["added_mib"] + 1) / (theirs["added_mib"] + 1)  # +1 MiB: no division by ~0
                    ratios = f" {time_ratio:13.2f} {mem_ratio:12.2f}"
                print(
                    f"{workers:>7} {shuffle!s:>7} {name:>10} {r['seconds']:8.3f} {r['added_mib']:8.0f}"
                    f" {r['worker_peak_mib']:10.0f}{ratios}"
                )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
