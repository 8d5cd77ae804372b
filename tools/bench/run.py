#!/usr/bin/python3
"""make bench: every benchmark, each measuring its contenders side by side
in one run and printing the ratio.  `run.py NAME...` runs some of them."""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

BENCHES = ["bench_generate", "bench_rebase", "bench_check", "bench_six", "bench_closures",
           "bench_pagecache", "bench_ci", "bench_mainjob", "bench_editloop"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("names", nargs="*", help=f"benchmarks to run (default: all of {', '.join(BENCHES)})")
    p.add_argument("-r", "--repeat", type=int, default=3, help="runs per measurement (median)")
    args = p.parse_args()
    failed = 0
    for name in args.names or BENCHES:
        mod = importlib.import_module(name if name.startswith("bench_") else f"bench_{name}")
        print(f"== {mod.__doc__.strip().splitlines()[0]}")
        failed += 0 if mod.run(args.repeat) else 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
