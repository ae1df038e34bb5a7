"""The server's one compute engine as the pages reach it: made once per Streamlit process (or found where app/serve.py
made it as the server booted), started with the first page run, and its background warmer.

The engine (lab/runtime/engine/: a 2-thread pool, or Dask worker processes with LAYERLAB_ENGINE=dask) bounds how much
training runs at once; app/jobs.py submits a page's lab calls to it.
"""

from __future__ import annotations

from typing import Optional

import streamlit as st

from lab.classroom import warm
from lab.runtime import engine as engines
from lab.runtime import quick, settings

JobRunner = engines.Engine  # what runner() returns: `submit`, `jobs`, `key`, `ahead` (lab/runtime/engine/)


@st.cache_resource(show_spinner=False)
def _engine() -> JobRunner:
    # The local workers import every page's experiment as they start (in the background, at server start): a
    # visitor's first job on a fresh worker then starts at once instead of after seconds of imports. A server
    # started by app/serve.py (`make app`) made the engine as it booted; this finds that one.
    from lab.catalog import config_modules

    return engines.engine(preload=config_modules())


def start_engine() -> None:
    """Start the server's engine with its first page run (a local cluster comes up in the background), so that
    the first visitor who needs a job does not wait for its workers to start and import the lab."""
    try:
        _engine()
    except ValueError:  # misconfigured: the page that needs a job says so (runner())
        pass


def runs_in_process() -> bool:
    """Whether the server's jobs run in this process (the threads engine), not on worker processes; False when the
    engine is misconfigured (each page says so)."""
    try:
        return _engine().name == "threads"
    except ValueError:
        return False


@st.cache_resource(show_spinner=False)
def background_warmer() -> Optional[warm.Background]:
    """Once per server: warm every page's default view on the engine at BACKGROUND priority (lab/classroom/warm.py);
    None in quick mode, with LAYERLAB_WARM=0, or when the engine is misconfigured (each page then says so)."""
    if quick.quick() or not settings.get("LAYERLAB_WARM"):
        return None
    try:
        eng = _engine()
    except ValueError:
        return None
    return warm.Background(eng, warm.default_views)


def runner() -> JobRunner:
    """The server-wide engine (one per Streamlit process, shared by every session): threads or Dask workers
    (LAYERLAB_ENGINE). An unknown engine stops the page with one clear message; a cluster that cannot be started or
    reached fails each job with a message saying so (lab/runtime/engine/)."""
    try:
        return _engine()
    except ValueError as exc:
        st.error(f"The lab is misconfigured: {exc}")
    st.stop()
    raise AssertionError("unreachable")  # st.stop() raises; this keeps the type checker honest

