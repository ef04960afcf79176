"""``python -m tinytensor [--json]``: the preflight report (backend, extension, CuPy, driver, GPUs)."""

from __future__ import annotations

import argparse
import json
import sys

from .diagnostics.probe import collect
from .diagnostics.report import render


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tinytensor", description="tinytensor preflight diagnostics")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args(argv)
    facts = collect()
    if args.json:
        json.dump(facts, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
    else:
        print(render(facts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
