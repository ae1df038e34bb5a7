"""The task control of a page: which data its models train and are tested on, the task's facts, and (MLPs) your own
CSV, uploaded once and then named by its content hash so a link and a classmate find the same file.

The control is a URL-bound select (`task=mnist1d`, `task=csv:<16 hex>`). Two kinds of config field:
- a named default (Delete: `task: str = "synthetic"`): the options are task names and the control returns one;
- None, "the model's own task" (Re-initialise, LayerDrop: the page's model decides it). The page passes the model's
  own task name as `default`; the control's first option is then None, shown as that task ("... (the model's own)"),
  so the page's settings, its presets and its Reset (all of which say None) agree with the control, and switching
  the model keeps "its own task" instead of handing the ViT's digits to an MLP. The control returns None for it, as
  the configs want; a link that names the own task (`task=digits` with the ViT) means the same and is dropped.
A CSV appears among the options once this session uploaded it, or when the link names one that is stored on this
server; a link naming a CSV that is not stored gets the lab's "link value ignored" notice. Uploads are bounded: a file
at most lab/core/data_csv.py's MAX_BYTES (the server refuses a larger request too: server.maxUploadSize), at most
UPLOADS_PER_SESSION files per browser session, STORE_DATA_BYTES for every stored CSV together, and per network
address LAYERLAB_UPLOAD_MB_PER_ADDRESS and never more than half of the space the others leave free; a CSV no page
showed for LAYERLAB_UPLOAD_DAYS is deleted (lab/classroom/uploads.py: each page that shows one marks it used).
A file the check refuses counts too: against the session's UPLOADS_PER_SESSION, and for an hour its bytes against
the address's bound (uploads.refused), so pressing "Use this file" on a bad file is bounded like sending good ones.
The file is checked and stored in the button's callback (before the control exists in
that run, so choosing it can set the control); a bad file's message stays under the upload until another file is
chosen, and changes nothing. Every parse of an uploaded file (the check, its facts, its class names) runs on a worker
thread with a time bound, CHECK_SECONDS (lab/runtime/bounded.py), never on the page's script thread: a check that
runs over is refused with its one-line message, and other sessions' pages run on meanwhile.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any, Callable, Optional, TypeVar

import streamlit as st

from app import controls, query
from app.clients import client_address
from lab import experiment
from lab.classroom import uploads
from lab.core import data_csv
from lab.core.task_facts import TaskFacts, csv_limits, task_facts, task_label
from lab.core.task_fit import FAMILY_TASKS
from lab.runtime import bounded, settings
from lab.runtime.store import default_store

log = logging.getLogger("layerlab.upload")
T = TypeVar("T")

KEY = "task"  # the control's key and URL parameter
UPLOADED = "_layerlab_csv_tasks"  # this session's uploaded task names, in upload order
REFUSED = "_layerlab_csv_refused"  # how many files this session sent that the check refused
UPLOAD_NOTE = "_layerlab_csv_note"  # (file id, "error" | "success", text) of the last "Use this file"
FILE_KEY, LABEL_KEY, USE_KEY = "task_csv_file", "task_csv_label", "task_csv_use"
UPLOADS_PER_SESSION = 5
STORE_DATA_BYTES = uploads.STORE_BYTES  # every stored CSV of the server together
OWN = " (model's own)"
CHECK_SECONDS = 20.0  # the longest one parse of an uploaded file may take (a 5 MB table: about 1 s on 2 cores)
OVERDUE = (f"Checking this file took longer than {CHECK_SECONDS:g} seconds, so it was refused: upload a smaller "
           "table, or export it again as CSV.")
READ_OVERDUE = (f"Reading this stored file took longer than {CHECK_SECONDS:g} seconds; reload the page to try "
                "again.")


def _parse(fn: Callable[..., T], *args: Any, what: str = READ_OVERDUE) -> T:
    """`fn(*args)`, a parse of an uploaded file: on a worker thread, within CHECK_SECONDS (else a ValueError that
    says so)."""
    return bounded.run(fn, *args, seconds=CHECK_SECONDS, what=what)


def _stored(name: str) -> bool:
    try:
        data_csv.find_csv(default_store().root, name)
        return True
    except ValueError:
        return False


def _valid_name(name: str) -> bool:
    try:
        data_csv.parse_name(name)
        return True
    except ValueError:
        return False


def options(family: str, own: Optional[str] = None) -> list[Optional[str]]:
    """The tasks a model of `family` can read here: the ready-made ones, then (MLPs) this session's uploads and a
    stored CSV the link names. With `own` (a config whose None is the model's own task), None comes first and
    stands for `own`, which is then not listed again."""
    out: list[Optional[str]] = [None] if own is not None else []
    out += [n for n in FAMILY_TASKS[family] if n != own]
    if family != "mlp":
        return out
    out += [n for n in st.session_state.get(UPLOADED, []) if n not in out and n != own]
    for raw in controls.link_values(KEY)[:1]:
        if data_csv.is_csv_task(raw) and raw not in out and _valid_name(raw) and _stored(raw):
            out.append(raw)
    return out


def menu_label(name: str) -> str:
    """A task as the menu names it: a ready-made task's label without its bracketed detail ("Synthetic clusters",
    not "Synthetic clusters (12 features, 20 classes)"; the facts under the control give the detail), an uploaded
    CSV's label whole (its hash is its name). The chosen value shows in a one-line text field the sidebar's width:
    the full labels were cut there, mid-word ("Synthetic clusters (12 features, 2")."""
    label = task_label(name)
    return label if data_csv.is_csv_task(name) else label.split(" (")[0]


def label_of(name: Optional[str], own: Optional[str] = None) -> str:
    """How the control shows an option (None: the model's own task, named)."""
    return menu_label(own) + OWN if name is None and own is not None else menu_label(str(name))


def task_select(config: type, family: str, default: Optional[str] = None, field: str = "task") -> Optional[str]:
    """The task control (URL key `task`) for models of `family` ("mlp" or "vit"); a CSV upload below it for MLPs;
    the chosen task's facts under it. `default`: the task the page starts on (else the config field's default).
    When the config field's default is None (the model's own task), `default` names that own task and the control
    returns None for it (see the module docstring). Returns the config's value."""
    own = default if experiment.default(config, field) is None else None
    if own is None and default is None:
        default = experiment.default(config, field)
    opts = options(family, own)
    if own is not None:
        _own_link(opts, own)
        default = None
    if KEY in st.session_state and st.session_state[KEY] not in opts:
        del st.session_state[KEY]  # e.g. a CSV chosen, then the ViT: back to the default
    if default != experiment.default(config, field):
        raise ValueError(f"the task control starts on its field's default, {experiment.default(config, field)!r}, "
                         f"not {default!r}: declare it there (lab/experiment.py: task_param)")
    # Label, help and default are the field's declaration (lab/experiment.py: task_param); the options are this
    # page's, named in words.
    chosen = controls.param(config, field, options=tuple(opts), labels={n: label_of(n, own) for n in opts}, key=KEY)
    if chosen and data_csv.is_csv_task(chosen):
        _mark_used(chosen)
    # the facts and the upload go where the control goes (the sidebar; hidden when presenting, unless a demo control)
    with controls._placed(KEY):  # noqa: SLF001
        _facts_caption(chosen or own)
        _why(own or default, chosen)
        if family == "mlp":
            _upload(own)
    return chosen


def _mark_used(name: str) -> None:
    """A page shows this CSV task: its file's expiry starts again (lab/classroom/uploads.py)."""
    try:
        uploads.used(data_csv.find_csv(default_store().root, name))
    except ValueError:  # not stored (any more): the facts under the control say so
        pass


def _own_link(opts: list[Optional[str]], own: str) -> None:
    """The link's task where None stands for the model's own task, checked before the control exists.

    A link that names the own task (`task=digits` with the ViT) means None: the value is dropped. A value the control
    would reject gets the lab's "link value ignored" notice here, in words that name the own task (app/controls.py
    would write the option None as "None"), and is dropped as controls.py drops it: the control then keeps its value
    (the link that it last wrote is marked as seen, so it does not reset it either)."""
    values = controls.link_values(KEY)
    if not values:
        return
    if values == [own]:
        del st.query_params[KEY]
        return
    try:
        query.parse_choice(values, [o for o in opts if o is not None])
        return
    except query.Rejected as why:
        reason = query.plain(why).replace("expected one of ", f"expected one of {own}, ", 1)
    raw = query.shown(f"&{KEY}=".join(values))
    keeps = ("The control keeps its current value" if KEY in st.session_state
             else f"Using the model's own task, {own}")
    page = controls._page()  # noqa: SLF001 - the notice's key, as app/controls.py writes it
    st.session_state.setdefault(controls.NOTICES, {})[(page, KEY)] = {
        "text": f"The link's value `{KEY}={raw}` was ignored: {reason}. {keeps}.",
        "value": controls._UNSEEN}  # noqa: SLF001 - shown until the control's value changes, as controls.py does
    st.session_state.setdefault(controls.WRITTEN, {})[(page, KEY)] = None
    del st.query_params[KEY]


@lru_cache(maxsize=64)
def _facts_at(root: str, name: str) -> TaskFacts:
    if data_csv.is_csv_task(name):
        return _parse(task_facts, name, default_store())
    return task_facts(name, default_store())


def facts(name: str) -> Optional[TaskFacts]:
    """The facts of task `name` (cached per server; a CSV is named by its content, so its facts never change), or
    None when it cannot be read (a CSV no longer stored)."""
    try:
        return _facts_at(str(default_store().root), name)
    except ValueError:
        return None


@lru_cache(maxsize=64)
def _classes_at(root: str, name: str) -> tuple[str, ...]:
    return tuple(_parse(data_csv.load_table, root, name).classes)


def class_names(name: Optional[str]) -> Optional[tuple[str, ...]]:
    """The class names of an uploaded CSV (its label column's values, in the order of the class numbers), for a
    figure's axis; None for a ready-made task (its classes are numbers) or a CSV that cannot be read."""
    if not name or not data_csv.is_csv_task(name):
        return None
    try:
        return _classes_at(str(default_store().root), name)
    except ValueError:
        return None


# Why a page starts on its default task, from the claims of every page's default view at seeds 0 and 1 on both tasks
# (bench/claims_table.py, with and without --task mnist1d; the closing note of issue 31 has the table).
WHY = {
    "synthetic": "The MLPs learn it to 92-93 % with 4,000 held-out inputs (errors near 0.4 pts). Over the default "
                 "views of Delete, Re-initialise, LayerDrop and IOT at seeds 0 and 1, the verdicts decided 53 of 68 "
                 "times here against 42 of 68 on MNIST-1D, where the same recipe reaches 62-65 % on 1,000 held-out "
                 "signals (errors near 1.5 pts). Depth matters a little more there (a one-block MLP trained from "
                 "scratch: 62.0 and 59.5 % against the 7-block teacher's 63.7 and 63.6 %; here 92.8 and 92.4 % "
                 "against 92.7 and 92.4 %), yet LayerDrop's pruned model beats one of the kept depth trained from "
                 "scratch on neither task.",
    "digits": "The ViT's recipe was chosen on it, and its sequential and LayerShuffle models both reach 96-97 %. On "
              "MNIST-1D (1,000 held-out signals, smaller errors) the same recipe trains the sequential ViT to 90.4 % "
              "but LayerShuffle only to 50.6 % (seed 0). There the verdicts of Shuffle, Rearrange, Lens and the "
              "matrix decide more often (69 of 76 at seeds 0 and 1, against 62 of 76 here), but the order claims "
              "would judge a model that has not learned the task.",
}


def _why(default: Optional[str], chosen: Optional[str]) -> None:
    """Under the facts of the page's default task: why the page starts there (measured, see WHY)."""
    if default in WHY and chosen in (None, default):
        st.caption(query.plain(f"Why this page starts on {task_label(default)}: {WHY[default]}"))


def _facts_caption(name: str) -> None:
    try:
        f = _facts_at(str(default_store().root), name)
    except ValueError as exc:
        st.warning(f"This task cannot be read: {query.plain(exc)}")
        return
    st.caption(query.plain(f"{f.label}: {f.n_train:,} training, {f.n_probe:,} probe, {f.n_test:,} held-out inputs; "
                           f"{f.n_features} features, {f.n_classes} classes, chance {100 * f.chance:.1f} %. "
                           f"{f.about}"))


def refusal(uploaded: int, size: int, stored: int, held: int = 0, per_address: Optional[int] = None,
            refused: int = 0) -> Optional[str]:
    """Why an upload is refused (None: it may be checked and stored): this session's files so far (kept or refused
    by the check), the file's bytes, the bytes every stored CSV of the server takes, those of them this network
    address uploaded (`held`), what one address may keep (`per_address`; None: no bound of its own) and the bytes
    of this address's files the check refused lately (`refused`, lab/classroom/uploads.py: refused_bytes)."""
    if uploaded >= UPLOADS_PER_SESSION:
        return (f"This session has sent {UPLOADS_PER_SESSION} files already (refused files count too); reload the "
                "page to upload more.")
    if size > data_csv.MAX_BYTES:
        return f"This file is too large: {csv_limits()}."
    days = settings.get("LAYERLAB_UPLOAD_DAYS")
    share = max(0, STORE_DATA_BYTES - (stored - held) + 1) // 2  # half of what the other addresses leave free
    if stored + size > STORE_DATA_BYTES or held + size > share:
        if held == 0:
            return (f"This server's space for uploaded files is full: files no page uses for {days} days are "
                    f"deleted, so try again later, or use a file that is stored already.")
        return (f"Your network keeps {held / 1e6:.1f} MB of uploaded files on this server, its share of the space "
                f"while others upload too: use one of those (files no page uses for {days} days are deleted).")
    if per_address is not None and held + size > per_address:
        return (f"Your network keeps {held / 1e6:.1f} MB of uploaded files on this server, and one network may keep "
                f"{per_address / 1e6:g} MB: use one of those (files no page uses for {days} days are deleted).")
    if per_address is not None and held + refused + size > per_address:
        minutes = uploads.REFUSED_WINDOW_S / 60
        return (f"Your network sent {refused / 1e6:.1f} MB of files this server refused in the last {minutes:g} "
                f"minutes, and they count against the {per_address / 1e6:g} MB one network may send: fix the file as "
                "its message said, then try again later.")
    return None


def _check_and_store(root: Any, data: bytes, label: Optional[str], who: str) -> str:
    """On a worker thread (`_parse`): check and store the file, record who sent it; its task name."""
    name = data_csv.save_csv(root, data, label)
    uploads.record(data_csv.find_csv(root, name), who)
    return name


def _use_file(own: Optional[str]) -> None:
    """The callback of "Use this file": check and store the file (nothing stored if bad), then choose it. Runs before
    the page's script, so it may set the task control; what went wrong is kept for the upload to show."""
    file = st.session_state.get(FILE_KEY)
    if file is None:
        return
    fid = getattr(file, "file_id", file.name)

    def note(kind: str, text: str) -> None:
        st.session_state[UPLOAD_NOTE] = (fid, kind, text)

    done = st.session_state.setdefault(UPLOADED, [])
    data: Any = file.getvalue()
    root = default_store().root
    try:
        who = uploads.uploader(client_address())
    except (OSError, ValueError) as exc:  # the server's secret cannot be read: no upload is recorded unbounded
        log.error("upload refused: the server's secret cannot be read (%s)", exc)
        note("error", "This server cannot take uploads right now (its log says why).")
        return
    refused_here = int(st.session_state.get(REFUSED, 0))
    why = refusal(len(done) + refused_here, len(data), uploads.stored_bytes(root), uploads.held(root, who),
                  settings.get("LAYERLAB_UPLOAD_MB_PER_ADDRESS") * 1_000_000, uploads.refused_bytes(who))
    if why is not None:
        log.warning("upload refused: %s", why)
        note("error", why)
        return
    label = str(st.session_state.get(LABEL_KEY) or "").strip() or None
    try:
        name = _parse(_check_and_store, root, data, label, who, what=OVERDUE)
    except ValueError as exc:
        st.session_state[REFUSED] = refused_here + 1
        uploads.refused(who, len(data))
        if isinstance(exc, bounded.Overdue):
            log.warning("upload refused: its check ran past %g s (%d bytes)", CHECK_SECONDS, len(data))
        note("error", str(exc))
        return
    log.info("stored an uploaded CSV as %s (%d bytes)", name, len(data))
    if name not in done:
        done.append(name)
    st.session_state[KEY] = name
    note("success", f"Stored as {name} and chosen as the task above; a link to this page now names it.")


def _upload(own: Optional[str]) -> None:
    """Your own CSV: checked (one message per fault, nothing stored if bad), stored under its hash, then chosen."""
    with st.expander("Use your own CSV", icon=":material/upload_file:"):
        st.markdown(f"Numeric feature columns and one label column (the last, unless you name it); "
                    f"{csv_limits()}, at least {data_csv.MIN_ROWS_PER_CLASS} rows per class, at most "
                    f"{data_csv.MAX_CLASSES} classes, no missing values. The file is stored on this server under its "
                    f"content hash, so a link to your setting works for your classmates too.")
        file = st.file_uploader("CSV file", type=["csv"], key=FILE_KEY,
                                max_upload_size=uploads.MAX_MB)
        st.text_input("Label column (empty: the last column)", key=LABEL_KEY, max_chars=200)
        st.button("Use this file", key=USE_KEY, on_click=_use_file, args=(own,), disabled=file is None,
                  icon=":material/check:")
        kept = st.session_state.get(UPLOAD_NOTE)
        if kept is None:
            return
        fid, kind, text = kept
        if file is None or getattr(file, "file_id", file.name) != fid:  # another file (or none): the note is old
            del st.session_state[UPLOAD_NOTE]
        elif kind == "error":
            st.error(query.plain(text))
        else:
            st.success(query.plain(text))
