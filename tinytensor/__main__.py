"""``python -m tinytensor [--json]``: the preflight report (``tinytensor.cuda.preflight``)."""

from __future__ import annotations

import sys

from .cuda.preflight import main

if __name__ == "__main__":
    sys.exit(main())
