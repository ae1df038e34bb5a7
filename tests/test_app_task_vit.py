"""AppTest: the task control on a ViT page (the Layer lens): a link naming MNIST-1D runs the lens on it, each claim's
source names MNIST-1D (not the default digits), and a table task for the ViT is refused by the link parser."""

from lab.experiments.lens import experiment as lens

from .apptest_util import assert_clean, open_with_link


def test_a_vit_page_on_mnist1d_runs_and_says_its_claims_are_that_tasks():
    at = open_with_link("lens", {"task": "mnist1d"})
    assert_clean(at)
    assert at.selectbox(key="task").value == "mnist1d"
    opts = at.selectbox(key="task").options
    assert "Digits 8x8 (model's own)" in opts and "MNIST-1D" in opts  # short: the sidebar's field cuts long ones
    assert not any("Wine" in o or "Synthetic" in o for o in opts)  # the ViT reads no table
    r = lens.run(lens.LensConfig(task="mnist1d"))
    assert r.n_test == 1000  # MNIST-1D's held-out signals, not the 397 digits
    captions = " ".join(c.value for c in at.caption)
    sources = [md.value.replace("\\", "") for md in at.markdown if "Source:" in md.value]
    assert len(sources) == 3 and all("Here, on MNIST-1D (3,500 train):" in x and "digits" not in x for x in sources)
    assert "this view runs on" not in captions.replace("\\", "")  # the sources say it: no note
    assert "1,000 held-out" in captions  # the task's facts under the control
    assert "Why this page starts on" not in captions  # said under the default task only


def test_the_default_task_says_why_the_page_starts_there():
    at = open_with_link("lens", {})
    captions = " ".join(c.value for c in at.caption).replace("\\", "")
    assert "Why this page starts on Digits 8x8 (scikit-learn): " in captions
    assert "LayerShuffle only to 50.6 %" in captions


def test_a_table_task_in_a_vit_pages_link_is_ignored_with_a_notice():
    at = open_with_link("lens", {"task": "wine"})
    assert_clean(at)
    assert at.selectbox(key="task").value is None  # the model's own task
    assert any("task=wine" in w.value and "ignored" in w.value for w in at.warning)
