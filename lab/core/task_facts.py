"""What a page says about a task: its size, classes, chance and source (`task_facts(name)`; trains nothing).

The sentences are the task's record's (lab/core/tasks.py), which no stored result's key covers: editing one re-keys
nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from lab.core import data_csv, tasks
from lab.core.data_csv import is_csv_task, load_table
from lab.core.zoo import task
from lab.runtime.store import Store, resolve


@dataclass(frozen=True)
class TaskFacts:
    """The facts of one task, for a page: counts of each split, shape, chance and where the data comes from."""

    name: str
    label: str  # short, for a menu
    about: str  # what it is, one sentence
    n_train: int
    n_probe: int
    n_test: int
    n_features: int
    n_classes: int
    chance: float  # Dataset.chance: share of the most frequent test class
    source: str


def task_facts(name: str, store: Optional[Store] = None) -> TaskFacts:
    """The facts of task `name` (a record of lab/core/tasks.py or an uploaded `csv:<hash>`), from the data set itself
    (built if not yet built in this process; nothing is trained). ValueError for an unknown or missing task."""
    data = task(name, store)
    if is_csv_task(name):
        table = load_table(resolve(store).root, name)
        dropped = f"; left out (not numeric): {', '.join(table.dropped)}" if table.dropped else ""
        classes = ", ".join(table.classes[:8]) + (", ..." if len(table.classes) > 8 else "")
        label = task_label(name)
        about = (f"Your own table: {len(table.y):,} rows, {len(table.features)} numeric features{dropped}; "
                 f"label column '{table.label}' with classes {classes}.")
        source = f"uploaded file, sha256 {table.sha256}"
    else:
        t = tasks.get(name)
        label, about, source = t.label, t.about, t.source
    return TaskFacts(name=name, label=label, about=about, n_train=len(data.train), n_probe=len(data.probe),
                     n_test=len(data.test), n_features=data.n_features, n_classes=data.n_classes,
                     chance=data.chance, source=source)


def csv_limits() -> str:
    """The bounds of an uploaded CSV, in words, for a page (data_csv's own `_limits`, which its messages use)."""
    return data_csv._limits()  # noqa: SLF001


def task_label(name: str) -> str:
    """A task's short label for a menu, without building it (a CSV: its hash)."""
    if is_csv_task(name):
        return f"Your CSV ({name[len('csv:'):][:16]})"
    return tasks.TASKS[name].label if name in tasks.TASKS else name


def known_tasks() -> tuple[str, ...]:
    """The ready-made task names (an uploaded CSV is named by its hash instead)."""
    return tuple(tasks.TASKS)


def task_words(task: Optional[str], own: Optional[str] = None, own_words: str = "") -> str:
    """The data a result ran on, as a claim's source names it mid-sentence: `own_words` (the recipe's wording of its
    own task, kept so a default view reads as it always did) when `task` is None (a config's spelling of the model's
    own task) or `own`; else the task's label, a CSV's in lower case ("your CSV (...)")."""
    if task is None or task == own:
        return own_words
    label = task_label(task)
    return "your" + label[len("Your"):] if is_csv_task(task) else label


def task_clause(task: Optional[str], own: Optional[str] = None, lead: str = "; here on ") -> str:
    """For a source that names no data: "" on the model's own task (the source reads as before), else `lead` and the
    task's words, so no source leaves the reader to assume the lab's default data."""
    return "" if task is None or task == own else lead + task_words(task)


def config_task(config: Any) -> Optional[str]:
    """The task a result's config names: a dataclass in a fresh result, a dict once read back as plain data (None:
    the model's own task, or a config that names none)."""
    if config is None:
        return None
    return config.get("task") if isinstance(config, dict) else getattr(config, "task", None)
