"""`python -m lab ...`: the command-line face of the lab (see lab/cli.py)."""

import sys

from .cli import main

sys.exit(main())
