"""The README's table of pages, made from the catalog, so that a page added or renamed is never missing from the front
door: `python -m lab.catalog.readme` rewrites the table between the README's markers (tests/test_readme.py fails
while the two differ)."""

from __future__ import annotations

import sys
from pathlib import Path

from lab.catalog import descriptors

# Plumbing: writes documentation, computes nothing (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

README = Path(__file__).resolve().parents[2] / "README.md"
START, END = "<!-- pages: made by python -m lab.catalog.readme -->", "<!-- /pages -->"


def pages_table() -> str:
    """One row per page, in navigation order: its title, what it asks, and its command lines."""
    rows = ["| page | what it asks | command line |", "|---|---|---|"]
    for d in descriptors().values():
        cli = f"`layerlab {d.name} --help`"
        if d.table is not None:
            cli += f", `layerlab table {d.name}`"
        about = " ".join(d.about.split())  # Home's paragraph goes on a sentence: here it starts one
        rows.append(f"| **{d.title}** ([screenshot](docs/screenshots/{d.name}.png)) | {about[:1].upper()}{about[1:]} "
                    f"| {cli} |")
    return "\n".join(rows)


def with_table(text: str) -> str:
    """`text` (the README) with its table of pages replaced by the catalog's; ValueError without the markers."""
    if START not in text or END not in text:
        raise ValueError(f"README.md lacks the markers {START!r} ... {END!r}")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{pages_table()}\n{END}{tail}"


def main() -> int:
    text = README.read_text()
    new = with_table(text)
    if new != text:
        README.write_text(new)
        sys.stdout.write("README.md: table of pages rewritten\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
