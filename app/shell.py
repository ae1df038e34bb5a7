"""The app's shell: page config, start-up work (engine, warming, UMAP) and the navigation; `run()` is called by
app/main.py on every script run."""

from pathlib import Path

# plotly imports pandas lazily, from whichever thread draws a figure first; two sessions doing that at once have
# crashed a page with "partially initialized module 'pandas'". Import it here, once, before any page runs.
import pandas  # noqa: F401
import streamlit as st

from app import a11y, clear_cache, collector, controls, jobs, page_admission, server_engine
from lab.catalog import descriptors
from lab.classroom import retention
from lab.ops.embed import warm_umap_in_background
from lab.runtime import logs, quick, settings
from lab.runtime.threads import configure_threads

ROOT = Path(__file__).resolve().parents[1]


@st.cache_resource(show_spinner=False)
def _warm_umap_once() -> bool:
    """UMAP compiles its kernels on first use (~10 s of a core): once per server, in the background, at start-up,
    where UMAP runs. On the Dask engine it runs on the workers, and compiling it here as well would only take a core
    at the server's priority from a newcomer's first training (server_engine.runs_in_process)."""
    if not quick.quick() and server_engine.runs_in_process():  # UI smoke tests never show UMAP results: spare their CPU
        warm_umap_in_background()
    return True


def run() -> None:
    """One run of the app: page config, start-up work (once per server), then the page the URL asks for."""
    bad = settings.errors()  # a mistyped LAYERLAB_ setting (`streamlit run` skips app/serve.py's check): say which
    if bad:
        st.error("\n\n".join(bad), icon=":material/error:")
        st.stop()
    logs.configure()  # once per process: layerlab.* lines reach the server's log
    clear_cache.install()  # a student's "Clear cache" clears their own session, never the server's (app/clear_cache.py)
    configure_threads()
    jobs.mark_run()
    st.set_page_config(page_title="Layer Lab", page_icon=":material/science:", layout="wide")
    a11y.inject()  # readable captions, a focus ring, no cut labels: on every page (app/a11y.py)
    # A fresh server starts its engine (the local Dask cluster comes up in the background) and warms every page's
    # default view on it, one result at a time at the lowest priority and only while no student's job waits
    # (app/server_engine.py, lab/classroom/warm.py). LAYERLAB_WARM=0 switches warming off.
    if not page_admission.admit_page():  # one address with too many open pages: this one does no work
        st.warning(f"Too many pages of the lab are open from your network ({page_admission.pages_per_client()}). "
                   f"Close some of them, then reload this one.", icon=":material/block:")
        st.stop()
    # this address's other pages hold every turn, and this session ended while it waited
    if not page_admission.take_turn():
        st.stop()
    try:
        _page()
    finally:
        page_admission.end_turn()
        collector.after_run()


def _page() -> None:
    server_engine.start_engine()
    server_engine.background_warmer()
    retention.start()  # old classes and unused uploads are deleted on a timer (lab/classroom/retention.py)
    _warm_umap_once()
    # One entry per experiment's descriptor (lab/experiments/NAME/descriptor.py), in its order; its page is
    # pages/NAME.py.
    pages = [st.Page(ROOT / "pages" / "home.py", title="Home", icon=":material/home:", default=True)]
    pages += [st.Page(ROOT / "pages" / f"{d.name}.py", title=d.title, icon=d.icon, url_path=d.name)
              for d in descriptors().values()]
    collector.start()
    controls.start_run()  # every run registers its page's controls afresh (app/controls.py)
    st.navigation(pages).run()
