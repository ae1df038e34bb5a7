"""`python -m lab ...`: the command-line face of the lab (see lab/cli/)."""

import sys

if __name__ == "__main__":  # not when a worker process (Dask, spawn) imports this module
    if sys.argv[1:] == ["--version"]:  # answered before the CLI imports every experiment (and torch)
        from lab.runtime.version import version_line

        print(version_line())
        sys.exit(0)
    from lab.cli import main

    sys.exit(main())
