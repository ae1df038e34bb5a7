"""A page says so beside a result that came from elsewhere (a pack this course did not sign, lab/runtime/sealed.py),
at every rerun; the lab's own results carry no such line."""

from lab.experiments.reinit.experiment import ReinitConfig
from lab.runtime import sealed
from lab.runtime.store import Store

CFG = ReinitConfig(model="residual", blocks=2, width=8, epochs=1, seed=77)
KIND = "foreign-page-test"


def page():
    import streamlit as st

    from app import stored_results
    from lab.experiments.reinit.experiment import ReinitConfig
    from lab.runtime.store import active_store

    def read(cfg, progress):
        return active_store().json("foreign-page-test", cfg, lambda: {"acc": 0.5})

    read.kind = "foreign-page-test"
    for seed in (77, 78):  # 77 marked, 78 the lab's own
        cfg = ReinitConfig(model="residual", blocks=2, width=8, epochs=1, seed=seed)
        got = stored_results.stored("Test", read, cfg)
        st.write(f"seed {seed}: accuracy {got['acc']}")


def test_a_page_says_beside_a_result_that_it_came_from_elsewhere(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("LAYERLAB_CACHE", str(tmp_path))
    store = Store(tmp_path)
    store.json(KIND, CFG, lambda: {"acc": 0.999})
    store.json(KIND, ReinitConfig(model="residual", blocks=2, width=8, epochs=1, seed=78), lambda: {"acc": 0.8})
    key = store.key(KIND, CFG)
    path = store.path(key, ".json")
    mark = {"why": "unsigned", "pack": "00112233aabb", "derived": False}
    path.write_bytes(sealed.marked(key, ".json", path.read_bytes(), mark))  # as `pack import --unsigned-ok` does

    at = AppTest.from_function(page)
    for _ in range(2):  # the first view and a rerun
        at.run()
        assert not at.exception, at.exception
        assert [w.value for w in at.warning] == [sealed.origin_words(mark)]
        assert "pack 00112233aabb" in at.warning[0].value and "not computed by this lab" in at.warning[0].value
        text = " ".join(m.value for m in at.markdown)
        assert "seed 77: accuracy 0.999" in text and "seed 78: accuracy 0.8" in text
