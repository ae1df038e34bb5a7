"""`python -m lab ...`: the command-line face of the lab (see lab/cli.py)."""

import sys

from lab.cli import main

if __name__ == "__main__":  # not when a worker process (Dask, spawn) imports this module
    sys.exit(main())
