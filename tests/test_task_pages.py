"""AppTest: the task control (app/task_control.py) on the Delete, Re-initialise and LayerDrop pages (issue 31): a link
naming a CSV that is not stored is ignored with the lab's notice, a ready-made table task runs and the page's words
follow it, the ViT is offered the ViT's tasks, and "the model's own task" is the control's None (what the configs,
the presets and Reset say)."""

from app import jobs, task_control
from lab.core.task_fit import FAMILY_TASKS
from lab.experiments.delete import experiment as delete
from lab.experiments.layerdrop import descriptor as layerdrop_described

from .apptest_util import assert_clean, open_page, open_with_link, settle


def _fold(words: str) -> str:
    """Whitespace folded (markdown wraps its lines) and markdown's escapes dropped."""
    return " ".join(words.replace("\\", "").split())


def _text(at) -> str:
    """The page's words (markdown and captions), folded."""
    return _fold(" ".join([md.value for md in at.markdown] + [c.value for c in at.caption]))


def test_a_link_to_a_csv_that_is_not_stored_is_ignored_and_the_page_runs_on_the_default():
    at = open_with_link("delete", {"task": "csv:0000000000000000"})
    notices = [w.value for w in at.warning]
    assert any("task=csv:0000000000000000" in n and "was ignored" in n and "Using the default, synthetic" in n
               for n in notices), notices
    assert at.selectbox(key="task").value == "synthetic"
    assert "Original (held-out)" in [m.label for m in at.metric]
    assert "task" not in at.query_params  # the link no longer names it


def test_wine_on_the_delete_page_runs_and_the_words_follow_the_task():
    at = settle(open_with_link("delete", {"task": "wine"}))
    assert at.selectbox(key="task").value == "wine"
    metrics = {m.label: m for m in at.metric}
    assert "Original (held-out)" in metrics
    assert "Wine" in metrics["Chance"].help and "3 classes" in metrics["Chance"].help
    how = " ".join(next(md.value for md in at.markdown if "Train a deep network" in md.value).split())
    assert "13 → 128 stem" in how and "128 → 3 head" in how and "**Wine (scikit-learn)**, 3 classes" in how
    assert "44 **held-out** inputs" in how and "20" not in how and "synthetic" not in how
    shows = next(md.value for md in at.markdown if "teacher scores" in md.value)
    assert shows.startswith("- On Wine (scikit-learn), the **residual** teacher") and "44 held-out" in shows
    # each claim's source names the task its numbers were measured on, not the lab's default synthetic task
    sources = [_fold(md.value) for md in at.markdown if "Source:" in md.value]
    assert sources and all("on Wine (scikit-learn)" in x and "synthetic" not in x for x in sources), sources
    assert "this view runs on" not in _text(at)  # no note papers over a source any more
    # the page's config carries the task (its Reproduce view names it)
    assert any("wine" in c.value for c in at.code if "DeleteConfig(" in c.value or "python -m lab" in c.value)
    assert delete.DeleteConfig(task="wine").spec.task == "wine"


def test_reinit_offers_the_vit_its_own_tasks_and_an_mlp_task_does_not_follow_it_there():
    at = open_with_link("reinit", {"model": "plain", "task": "wine"})
    assert at.selectbox(key="task").value == "wine"
    assert "stays on its own task" in _text(at)  # the ViT's map: digits, said under the maps
    at.selectbox(key="model").set_value("vit").run()
    assert_clean(at)
    box = at.selectbox(key="task")
    want = [task_control.label_of(None, "digits")] + [task_control.menu_label(t) for t in FAMILY_TASKS["vit"]
                                                         if t != "digits"]
    assert box.options == want, box.options
    assert box.value is None  # wine is no ViT task: back to the model's own, digits
    assert "task" not in at.query_params


def test_layerdrop_default_view_is_the_model_own_task_and_its_presets_match():
    at = open_page("layerdrop")
    box = at.selectbox(key="task")
    assert box.value is None and box.options[0] == task_control.label_of(None, "synthetic")
    assert layerdrop_described.DEFAULTS["task"] is None
    assert at.session_state[jobs.STANDARD]  # the page's setting is its default view (admission: a standard run)
    at.selectbox(key="task").set_value("wine").run()
    assert_clean(at)
    assert not at.session_state[jobs.STANDARD] and at.query_params["task"] == "wine"
    at.button(key="try_reset").click().run()  # Reset says task None: the model's own task again
    assert_clean(at)
    assert at.selectbox(key="task").value is None and at.session_state[jobs.STANDARD]


def test_a_stored_csv_in_a_link_for_the_vit_is_ignored_with_the_vit_tasks_named():
    from lab.core import data_csv
    from lab.runtime.store import default_store

    rows = ["a,b,label"] + [f"{i % 7},{i % 5},{'yes' if i % 2 else 'no'}" for i in range(60)]
    name = data_csv.save_csv(default_store().root, ("\n".join(rows) + "\n").encode())
    at = open_with_link("reinit", {"model": "vit", "task": name})
    notices = [w.value for w in at.warning]
    assert any(f"task={name}" in n and "expected one of digits, mnist1d, mnist1d-large" in n
               and "Using the model's own task, digits" in n for n in notices), notices
    assert at.selectbox(key="task").value is None
    # an MLP may read it: the same link with the plain MLP offers and runs it, its classes named on the figure
    at = open_with_link("reinit", {"model": "plain", "task": name})
    assert at.selectbox(key="task").value == name
    assert "Trained (held-out)" in [m.label for m in at.metric]
    assert task_control.class_names(name) == ("no", "yes")


def test_a_csv_whose_label_column_a_pin_cannot_carry_runs_with_the_pin_button_off():
    from lab.core import data_csv
    from lab.runtime.store import default_store

    rows = ["my_label,a,b"] + [f"{'yes' if i % 2 else 'no'},{i % 7},{i % 5}" for i in range(60)]
    name = data_csv.save_csv(default_store().root, ("\n".join(rows) + "\n").encode(), "my_label")
    assert name.endswith(":my_label")  # a label other than the last column is part of the task's name
    at = open_with_link("delete", {"task": name})
    assert_clean(at)
    assert at.selectbox(key="task").value == name
    assert at.button(key="layerlab_pin").disabled  # "_" cannot be written into a pin: a message, not a crash


def test_uploads_are_bounded_per_session_per_file_and_per_server():
    mb = task_control.data_csv.MAX_BYTES
    assert task_control.refusal(0, 1_000, 0) is None
    assert "5 files already" in task_control.refusal(task_control.UPLOADS_PER_SESSION, 1_000, 0)
    assert "too large" in task_control.refusal(0, mb + 1, 0)
    assert task_control.refusal(0, mb, 0) is None  # the bound itself is allowed
    assert "space for uploaded files is full" in task_control.refusal(0, 1_000, task_control.STORE_DATA_BYTES)
