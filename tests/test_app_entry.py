"""app/main.py under the name a spawned worker process gives it: nothing of the app may run there."""

import subprocess
import sys

from .apptest_util import ROOT


def test_a_spawned_worker_importing_the_entry_point_builds_nothing():
    # multiprocessing's spawn re-imports the parent's __main__ file as __mp_main__ in every Dask worker it starts.
    code = ("import runpy, sys; runpy.run_path('app/main.py', run_name='__mp_main__'); "
            "print(sorted(m for m in ('app.shell', 'streamlit', 'lab.runtime.engine') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"
