"""What every subcommand shares: a one-line error parser, `--version`, output (--json: one envelope
`{schema_version, command, config, result, versions, quick}`, docs/cli-output.schema.json), and a subcommand
generated from an experiment's config dataclass (flags, choices, defaults and help come from its `param` fields)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any, Callable, Optional

from lab.claims import attach
from lab.experiment import Pool, add_arguments, from_arguments, serial
from lab.runtime.plain import to_plain
from lab.runtime.version import libraries, version_line

PROG = "python -m lab"  # the program's name in usage and errors unless the caller names itself (`layerlab`)


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad argument gives one line on stderr (no usage dump) and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


class VersionAction(argparse.Action):
    """`--version`: the lab's version line (lab/runtime/version.py), computed only when asked for (not as the
    parser's `version` string), since finding the commit runs git and every other command would pay for it."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, default: Any = argparse.SUPPRESS,
                 help: Optional[str] = None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: Optional[str] = None) -> None:
        print(version_line())
        parser.exit(0)


def add_workers(p: argparse.ArgumentParser) -> None:
    """The `--workers` flag of every table: how its independent runs are computed."""
    p.add_argument("--workers", type=int, default=2,
                   help="compute missing results on N worker processes of a local Dask cluster (or the cluster at "
                        "LAYERLAB_SCHEDULER), side by side; 0 computes them here, one after another (default 2)")


def table_pool(args: argparse.Namespace) -> Pool:
    """The pool a table's runs go through (lab/runtime/engine/batch.py `pool`): the lab's engine, or this process."""
    if not 0 <= args.workers <= 64:
        raise ValueError(f"--workers {args.workers} is out of range: choose 0 (this process) to 64")
    if args.workers == 0:
        return serial
    from lab.runtime.engine import pool

    return pool(args.workers)


SCHEMA_VERSION = 1  # of the --json envelope; docs/cli-output.schema.json describes it (tests/test_cli_schema.py)
# The schema file: docs/ in a checkout; inside the installed package (layerlab/docs/, setup.py) otherwise. Both are
# `docs/` beside `lab/`, so one path serves both.
SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "cli-output.schema.json"


def schema_path() -> Path:
    """Where the --json outputs' JSON Schema is, as `--help` names it: relative to the working folder when inside it
    (a checkout's `docs/cli-output.schema.json`), else the installed file's full path."""
    try:
        return SCHEMA.relative_to(Path.cwd())
    except (ValueError, OSError):  # outside the working folder, or that folder is gone
        return SCHEMA


JSON_HELP = ("print one JSON object: {schema_version, command, config, result, versions, quick} with the whole "
             f"result (its JSON Schema: {str(schema_path()).replace('%', '%%')})")


_UNCAPPED = 10**9  # asked of quick.epochs / quick.steps, it gives their cap: read from quick.py, never copied here


def quick_mode(config: Any) -> Optional[dict[str, Any]]:
    """None outside quick mode (LAYERLAB_QUICK, lab/runtime/quick.py). In it, what really ran, since the config says
    what was asked (`epochs` 12, `steps` 500): every model trained for `model_epochs`, every recovery for at most
    `max_steps` steps, at most `max_orders` block orders walked, and the config's own `epochs` and `steps` as run
    (both pass through quick.py: models through lab/core/zoo.py `effective`, recoveries through lab/ops/recover.py)."""
    from lab.runtime import quick

    if not quick.quick():
        return None
    from lab.core.zoo import QUICK_ORDERS

    ran: dict[str, Any] = {"model_epochs": quick.epochs(_UNCAPPED), "max_steps": quick.steps(_UNCAPPED),
                           "max_orders": QUICK_ORDERS}
    asked = to_plain(config)
    for key, cut in (("epochs", quick.epochs), ("steps", quick.steps)):
        value = asked.get(key) if isinstance(asked, dict) else None
        if isinstance(value, int) and not isinstance(value, bool):
            ran[key] = cut(value)
    return ran


def envelope(name: str, config: Any, result: Any) -> dict[str, Any]:
    """What `--json` prints: the schema version, the command (`delete`, `warm`, `table delete`, ...), its config,
    the whole result, as plain data with its claims (computed now: a result never stores them, lab/claims.py:
    attach), the versions of the libraries that computed it (so a number read later says what computed it), and
    whether quick mode cut the training short (`quick_mode`: null when it did not)."""
    return {"schema_version": SCHEMA_VERSION, "command": name, "config": to_plain(config), "result": attach(result),
            "versions": libraries(), "quick": quick_mode(config)}


def print_json(name: str, config: Any, result: Any) -> None:
    """Print the envelope of a result on stdout as one line."""
    print(json.dumps(envelope(name, config, result)))


def emit(name: str, config: Any, result: Any, as_json: bool, summary: Callable[[Any], str]) -> None:
    """Print a result: the JSON envelope with --json, else a short human summary."""
    if as_json:
        print_json(name, config, result)
        return
    print(summary(result))
    ran = quick_mode(config)
    if ran is not None:  # the summary names the config's epochs and steps: say what really ran (stderr: stdout is its)
        sys.stderr.write(f"quick mode (LAYERLAB_QUICK): every model trained {ran['model_epochs']} epoch(s), every "
                         f"recovery at most {ran['max_steps']} steps; for smoke tests only, never numbers to report\n")


def data_task(path: str, label: Optional[str] = None) -> str:
    """The task name of a CSV file given on the command line (stored in the active store, as an upload is); a
    ValueError that says what is wrong with it."""
    from lab.core.data_csv import save_csv
    from lab.runtime.store import resolve

    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read --data {path}: {exc.strerror or exc}") from None
    return save_csv(resolve(None).root, data, label)


def command(sub: argparse._SubParsersAction, name: str, help: str, config: type,
            answer: Callable[[Any, argparse.Namespace], Any], summary: Callable[[Any], str],
            extra: Optional[Callable[[argparse.ArgumentParser], None]] = None) -> argparse.ArgumentParser:
    """A subcommand whose flags are `config`'s fields; `answer(cfg, args)` computes the whole result (--json prints
    all of it in the envelope, else `summary` says it in words); `extra` adds flags of the config classes it also
    answers (the descriptor's `cli_views`, which lab/classroom/reproduce.py reads)."""
    p = sub.add_parser(name, help=help, description=(config.__doc__ or "").strip().split("\n")[0])
    add_arguments(p, config)
    if extra is not None:
        extra(p)
    p.add_argument("--json", action="store_true", help=JSON_HELP)

    takes_data = any(f.name == "task" for f in dataclasses.fields(config))
    if takes_data:
        p.add_argument("--data", default=None, metavar="PATH", help="your own CSV (numeric feature columns and a "
                       "label column): checked, stored under its content hash in the lab's store, and used as --task")
        p.add_argument("--label", default=None, help="with --data: the label column (default: the last column)")

    def go(args: argparse.Namespace) -> int:
        override = {"task": data_task(args.data, args.label)} if takes_data and args.data is not None else {}
        cfg = from_arguments(config, args, **override)
        emit(name, cfg, answer(cfg, args), args.json, summary)
        return 0

    p.set_defaults(func=go)
    return p
