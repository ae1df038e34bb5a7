"""Reproduce a page's view outside the app (no Streamlit): the exact `python -m lab ...` command of a config (in a
checkout; `layerlab ...` when the lab runs from an installed package, where `python -m lab` finds no module), a
short Python snippet of the library call, and a Jupyter notebook that recomputes the result and redraws the
page's main figure.

Everything is derived from the config: the CLI's flags are generated from the config's `param` fields
(lab/experiment.py), so the command names every one of them (seed included), defaults too, which makes it say
the whole setting even where a default changes later. Quick mode (one epoch; the UI smoke tests) is part of the
command when it is on, since it changes the numbers.
"""

from __future__ import annotations

import dataclasses
import functools
import shlex
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from lab.claims import attach
from lab.experiment import field_type
from lab.runtime import quick

# The folder holding this lab's lab/ package: a checkout's root, or the installed `layerlab` package (setup.py puts
# lab/, app/ and pages/ inside it).
LAB_HOME = Path(__file__).resolve().parents[2]


def installed() -> bool:
    """Whether the lab runs from an installed package: its lab/ folder inside the `layerlab` package (setup.py's
    layout), not in a checkout. There `python -m lab` fails ("No module named lab") and the `layerlab` console
    script, which takes the same arguments (app/command.py), is the command."""
    return (LAB_HOME / "__init__.py").is_file()


def program() -> list[str]:
    """The words that start a lab command here: `layerlab` when installed, else `python -m lab` (a checkout)."""
    return ["layerlab"] if installed() else ["python", "-m", "lab"]


@functools.cache
def _command_of(config_class: type) -> Optional[tuple[str, Optional[Callable[[Any], Any]]]]:
    """The `python -m lab` subcommand that answers `config_class`, with None when its flags are that class's fields,
    or with the function giving the subcommand's own config of one (a view it answers through extra flags). The CLI
    makes one subcommand per descriptor, named after it, with its config's fields and its views (lab/cli)."""
    from lab.catalog import descriptors

    for name, d in descriptors().items():
        if d.config is config_class:
            return name, None
        if config_class in d.cli_views:
            return name, d.cli_views[config_class]
    return None


def _flag_value(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def cli_args(cfg: Any, skip: Sequence[str] = ()) -> list[str]:
    """The flags that give `cfg` (every CLI field not in `skip`, in the config's order); ValueError when a field
    that differs from its default has no flag (the command could not say it)."""
    args: list[str] = []
    for f in dataclasses.fields(cfg):
        value, m = getattr(cfg, f.name), f.metadata
        if not m or f.name in skip:
            continue
        if not m.get("cli", True):
            if value != f.default:
                raise ValueError(f"{f.name}={value!r} has no command-line flag")
            continue
        flag = "--" + f.name.replace("_", "-")
        if field_type(type(cfg), f.name) is bool:
            args.append(flag if value else "--no-" + f.name.replace("_", "-"))
        elif value is not None:
            args += [flag, _flag_value(value)]
    return args


def command(cfg: Any) -> Optional[str]:
    """The shell command that prints this config's numbers (None when no subcommand takes this config): `python -m
    lab ...` in a checkout, `layerlab ...` when installed (`installed`)."""
    found = _command_of(type(cfg))
    if found is None:
        return None
    name, own = found
    if own is None:
        args = cli_args(cfg)
    else:  # a view: the subcommand's config, then the view's other fields as the extra flags of the same names
        base = own(cfg)
        args = cli_args(base) + cli_args(cfg, skip=[f.name for f in dataclasses.fields(base)])
    env = "LAYERLAB_QUICK=1 " if quick.quick() else ""
    line = env + shlex.join([*program(), name, *args])
    task = getattr(cfg, "task", None)
    if isinstance(task, str) and task.startswith("csv:"):  # the file is in this server's store, not the reader's
        line += f"  # {task}: an uploaded CSV; on another machine pass the file with --data PATH instead of --task"
    return line


def _config_source(cfg: Any) -> str:
    """`Config(a=1, b='x')` with every field that differs from its default, or all param fields."""
    parts = [f"{f.name}={getattr(cfg, f.name)!r}" for f in dataclasses.fields(cfg) if f.metadata]
    return f"{type(cfg).__name__}({', '.join(parts)})"


def numbers(result: Any) -> dict[str, Any]:
    """The headline numbers of a result: its top-level accuracies and chance, and each claim's verdict (its claims
    computed now, as every reader of a result does: lab/claims.py)."""
    out: dict[str, Any] = {}
    result = plain_with_claims(result)
    if isinstance(result, dict):
        for k, v in result.items():
            if (k.endswith("_acc") or k == "chance") and isinstance(v, (int, float)) and not isinstance(v, bool):
                out[k] = v
        for c in result.get("claims") or ():
            if isinstance(c, Mapping) and "key" in c:
                out[f"claim:{c['key']}"] = c.get("holds")
    return out


def plain_with_claims(result: Any) -> Any:
    """A result as the plain data the store holds, with its claims (lab/claims.py: attach); every experiment's claims
    module is imported first (each descriptor imports its own), so a result of any experiment finds them."""
    from lab.catalog import descriptors

    descriptors()
    return attach(result)


def snippet(fn: Callable[..., Any], cfg: Any) -> str:
    """A short Python snippet of the library call that computes this view."""
    mod = fn.__module__
    cls = type(cfg).__name__
    return (f"from {mod} import {cls}, {fn.__name__}\n"
            f"from lab.classroom.reproduce import numbers, plain_with_claims\n\n"
            f"cfg = {_config_source(cfg)}\n"
            f"r = {fn.__name__}(cfg)  # trains (or loads from the store) and returns its result\n"
            f"print(numbers(r))  # accuracies, chance and each claim's verdict\n"
            f"for c in plain_with_claims(r).get('claims', []):  # computed now: a result never stores them\n"
            f"    print(c['key'], c['holds'], c['detail'])\n")


def notebook(fn: Callable[..., Any], cfg: Any, figure: Optional[Callable[..., Any]] = None, title: str = "",
             link: str = "", store: Optional[str] = None) -> Any:
    """A Jupyter notebook (nbformat v4) that recomputes this view's result and redraws its main figure.

    `store`: a LAYERLAB_CACHE folder for the notebook to use (default: the user's own setting or the repo's
    cache/). The last cell's output is the JSON of `numbers(r)` (tests compare it with the lab call's)."""
    import nbformat
    from nbformat import v4

    q = quick.quick()
    cells = [v4.new_markdown_cell(
        f"# {title or 'Layer Lab'}: reproduce this view\n\n"
        + (f"The page: <{link}>\n\n" if link else "")
        + "Run every cell from a checkout of Layer Lab (the first cell finds it). Results come from the lab's "
          "store when they are there, else they are computed (a few minutes on a laptop's CPU)."
        + ("\n\n*Quick mode is on (one training epoch): the numbers are the app's smoke-test numbers.*" if q else ""))]
    from lab.runtime import version

    made_with = ", ".join(f"{k} {v}" for k, v in version.libraries().items())
    cells.append(v4.new_markdown_cell(
        f"Computed with {version.version_line()}; {made_with}. The next cell prints this machine's versions; numbers "
        "computed with other versions of torch or numpy may differ in their last digits."))
    requirement = version.pip_requirement()
    setup = [  # the reader's own checkout, else the lab installed at this exact commit (a hosted Jupyter)
        "import os, subprocess, sys, pathlib",
        "here = pathlib.Path.cwd().resolve()",
        "found = [p for p in (here, *here.parents) if (p / 'lab' / '__init__.py').is_file()]",
        "REPO = os.environ.get('LAYERLAB_REPO') or (str(found[0]) if found else '')",
        "if REPO:",
        "    sys.path.insert(0, REPO)",
        "else:",
        "    try:",
        "        import layerlab  # an installed lab: puts its lab/ and app/ on the path",
        "    except ImportError:",
    ]
    if requirement:
        setup += [f"        subprocess.check_call([sys.executable, '-m', 'pip', 'install', '-q', {requirement!r}])",
                  "        import importlib; importlib.invalidate_caches()  # see the newly installed package",
                  "        import layerlab"]
    else:
        setup.append("        raise SystemExit('Start Jupyter inside your Layer Lab checkout, set LAYERLAB_REPO to its "
                     "folder, or pip install the lab first.')")
    setup += ["from lab.runtime.version import libraries, version_line",
              "print(version_line(), libraries())",
              "os.environ.setdefault('LAYERLAB_THREADS', '1')"]
    if q:
        setup.append("os.environ['LAYERLAB_QUICK'] = '1'  # the page ran in quick mode")
    if store:
        setup.append(f"os.environ['LAYERLAB_CACHE'] = {store!r}")
    cells.append(v4.new_code_cell("\n".join(setup)))
    cells.append(v4.new_code_cell(snippet(fn, cfg)))
    if figure is not None:
        cells.append(v4.new_markdown_cell("The page's main figure, drawn by the page's own figure function:"))
        cells.append(v4.new_code_cell(f"from {figure.__module__} import {figure.__name__}\n\n"
                                      f"fig = {figure.__name__}(r)\nfig.show()"))
    cells.append(v4.new_code_cell("import json\nprint(json.dumps(numbers(r), sort_keys=True))"))
    nb = v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.validate(nb)
    return nb


def notebook_text(*args: Any, **kw: Any) -> str:
    import nbformat

    return nbformat.writes(notebook(*args, **kw))
