"""Entry point: `streamlit run app/main.py`. Sets up the path, the page config and the navigation."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # streamlit puts app/ on the path, not the repo root where lab/ lives
    sys.path.insert(0, str(ROOT))

# plotly imports pandas lazily, from whichever thread draws a figure first; two sessions doing that at once have
# crashed a page with "partially initialized module 'pandas'". Import it here, once, before any page runs.
import pandas  # noqa: E402, F401
import streamlit as st  # noqa: E402 - after the path fix on purpose

from app import controls, jobs  # noqa: E402
from lab import quick  # noqa: E402
from lab.embed import warm_umap_in_background  # noqa: E402
from lab.runtime import configure_threads  # noqa: E402

configure_threads()
st.set_page_config(page_title="Layer Lab", page_icon=":material/science:", layout="wide")


# A fresh server starts its engine (the local Dask cluster comes up in the background) and warms every page's
# default view on it, one result at a time at the lowest priority and only while no student's job waits
# (app/jobs.py, lab/warm.py). LAYERLAB_WARM=0 switches warming off.
jobs.background_warmer()


@st.cache_resource(show_spinner=False)
def _warm_umap_once() -> bool:
    """UMAP compiles its kernels on first use (~30 s): do it once per server, in the background, at start-up."""
    if not quick.quick():  # UI smoke tests never show UMAP results: spare their CPU
        warm_umap_in_background()
    return True


_warm_umap_once()

PAGES = [
    st.Page(ROOT / "pages" / "home.py", title="Home", icon=":material/home:", default=True),
    st.Page(ROOT / "pages" / "delete.py", title="Delete layers", icon=":material/content_cut:", url_path="delete"),
    st.Page(ROOT / "pages" / "shuffle.py", title="Shuffle layers", icon=":material/shuffle:", url_path="shuffle"),
    st.Page(ROOT / "pages" / "reinit.py", title="Re-initialise a layer", icon=":material/restart_alt:",
            url_path="reinit"),
    st.Page(ROOT / "pages" / "layerdrop.py", title="LayerDrop", icon=":material/layers_clear:", url_path="layerdrop"),
    st.Page(ROOT / "pages" / "iot.py", title="Choose an order per input", icon=":material/alt_route:", url_path="iot"),
    st.Page(ROOT / "pages" / "rearrange.py", title="Rearrange layers", icon=":material/swap_vert:",
            url_path="rearrange"),
]

controls.start_run()  # every run registers its page's controls afresh (app/controls.py)
st.navigation(PAGES).run()
