"""Every test session gets a fresh, private store, so tests never read a developer's cache/."""

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LAYERLAB_CACHE", tempfile.mkdtemp(prefix="layerlab-test-cache-"))
from lab.runtime import configure_threads  # noqa: E402

configure_threads()
