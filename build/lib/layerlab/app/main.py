"""Entry point: `streamlit run app/main.py`. Puts the repository root on the path and runs the app's shell.

Why the guard: Streamlit runs this file as the module `__main__`, and a Dask worker process started (or restarted
by its nanny) while it runs is spawned by multiprocessing, which re-imports the parent's `__main__` file in the
child as `__mp_main__`. Without the guard every worker would build the whole app in bare mode and start an engine
of its own (measured: a failing LocalCluster inside each worker). A worker needs nothing from this file.
"""

import sys
from pathlib import Path

if __name__ != "__mp_main__":
    ROOT = Path(__file__).resolve().parents[1]
    if str(ROOT) not in sys.path:  # streamlit puts app/ on the path, not the repo root where lab/ lives
        sys.path.insert(0, str(ROOT))
    from app.shell import run

    run()
