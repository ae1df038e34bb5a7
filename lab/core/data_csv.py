"""A CSV file of your own as a task: checked, stored under its content hash, loaded by name.

`read_csv(data, label=None)` checks the bytes of an uploaded file and returns a `CsvTable` (its `dataset()` is the
task), or raises ValueError with one message that says what is wrong and what to do. The rules:
- a text file (UTF-8, or Windows-1252 from older spreadsheets) of comma-, semicolon- or tab-separated values with
  the same number of fields on every line; the first line names the columns unless every one of its fields is a
  number (then the columns are called "column 1", "column 2", ...); blank lines are skipped. A semicolon-separated
  file may write decimals with a comma (1,5).
- one label column: `label` names it, else the last column. Its values are class names (text or whole numbers):
  at least 2 classes, at most `MAX_CLASSES`, and every class needs at least `MIN_ROWS_PER_CLASS` rows (so the
  stratified splits hold every class).
- every other column is a feature. **A feature column that is not numeric is dropped**, and the table's
  `notices` say which (with its first value that is not a number); with no numeric feature column left the file
  is refused. Numeric features may have no missing values (empty, NA, NaN, null, ?) and no infinite ones, and
  must stay finite once standardised as the task standardises them (a column of 1e308s is finite, its mean is not).
- at most `MAX_BYTES` bytes (5 MB), `MAX_ROWS` data rows and `MAX_COLUMNS` columns.
Rows in the messages are counted as a spreadsheet shows them (the header is row 1).

The task: three disjoint stratified, seeded splits (test 25 %, probe 15 %, train 60 %), features standardised with
the training split's mean and standard deviation (lab/core/data_tabular.py: tabular_dataset).

Storage: `save_csv(root, data)` checks the file first (nothing is stored for bad input), writes the raw bytes
atomically to `<root>/data/<sha256>.csv` and returns the task name `csv:<first 16 hex digits of the sha256>`
(with `:<label column>` appended when a label other than the last column was chosen), so the same bytes always
give the same name, a class shares one file, and a link names the hash, never a path. `load_csv(root, name)`
reads it back (checking the hash). Nothing is ever unpickled: the file is parsed as text.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Optional

import numpy as np

from lab.core.data import Dataset
from lab.core.data_tabular import tabular_dataset
from lab.runtime import bounded
from lab.runtime.atomic import write_atomically

MAX_BYTES = 5_000_000
MAX_ROWS = 50_000
MAX_COLUMNS = 200
MAX_CLASSES = 50
MIN_ROWS_PER_CLASS = 10
MISSING = frozenset({"", "na", "n/a", "nan", "null", "?"})  # compared in lower case, stripped
PREFIX = "csv:"
HASH_DIGITS = 16
DATA_DIR = "data"  # under the store's root
_NAME = re.compile(r"csv:([0-9a-f]{16})(?::(.+))?", re.S)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f]")  # control characters that never occur in a text table
DELIMITERS = (",", "\t", ";")  # a tie goes to the first (csv.Sniffer's order of preference)
SAMPLE_CHARS = 65536  # what the delimiter is chosen from: the first records within this many characters
SAMPLE_RECORDS = 100
CHECK_EVERY = 1000  # records between two looks at a bounded call's clock


def _limits() -> str:
    return f"at most {MAX_BYTES / 1e6:g} MB, {MAX_ROWS:,} rows and {MAX_COLUMNS} columns"


def _rows(idx: np.ndarray, first_row: int, shown: int = 5) -> str:
    """Spreadsheet row numbers of data rows `idx` (0-based), the first few of them."""
    rows = [str(int(i) + first_row) for i in idx[:shown]]
    return ", ".join(rows) + (", ..." if len(idx) > shown else "")


def _quote(name: str) -> str:
    return f"'{name}'"


@dataclass(frozen=True, eq=False)
class CsvTable:
    """A checked CSV: numeric features `x` (rows x features, float64, raw), labels `y` (0..k-1) and what they are."""

    sha256: str
    label: str  # the label column's name
    label_is_last: bool
    features: tuple[str, ...]
    classes: tuple[str, ...]  # class names, in label order
    x: np.ndarray
    y: np.ndarray
    dropped: tuple[str, ...]  # non-numeric feature columns left out
    notices: tuple[str, ...]  # what the caller should show (the dropped columns)
    prepared: Dataset = field(repr=False)  # the task, built (and checked finite) by read_csv

    @property
    def task_name(self) -> str:
        """`csv:<16 hex digits>`, plus `:<label>` when the label is not the last column."""
        base = PREFIX + self.sha256[:HASH_DIGITS]
        return base if self.label_is_last else f"{base}:{self.label}"

    def dataset(self) -> Dataset:
        """The task: stratified seeded train / probe / test, standardised with the training statistics."""
        return self.prepared


def _decode(data: bytes) -> str:
    what = "upload a CSV file (in a spreadsheet: Save as / Download, CSV UTF-8)"
    if b"\x00" in data:
        raise ValueError(f"This is not a CSV file: it is binary (an Excel workbook or an image?); {what}.")
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            text = data.decode(encoding)
            break
        except UnicodeDecodeError:
            continue
    else:
        raise ValueError(f"This is not a CSV file: it is not text; {what}.")
    text = text.rstrip("\x1a")  # an old DOS end-of-file mark
    if _CONTROL.search(text):
        raise ValueError(f"This is not a CSV file: it holds binary control characters; {what}.")
    return text


def _delimiter(text: str) -> str:
    """Of comma, tab and semicolon, the delimiter that splits the first records of `text` (at most SAMPLE_RECORDS,
    within its first SAMPLE_CHARS characters) into the same number of fields, at least 2, most often (then: into
    more fields; then: the first of DELIMITERS); a comma when none gives a first record of 2 fields.

    csv's reader reads each character once, so this is linear in the sample; csv.Sniffer is not: its regular
    expression backtracks, and 64 kB of quotes and commas cost it seconds (bench/bench_upload_check.py)."""
    sample = text[:SAMPLE_CHARS]
    best, best_score = ",", (0.0, 0)
    for delimiter in DELIMITERS:
        widths = []
        try:
            for rec in csv.reader(io.StringIO(sample, newline=""), delimiter=delimiter):
                if any(f.strip() for f in rec):
                    widths.append(len(rec))
                if len(widths) > SAMPLE_RECORDS:
                    break
        except csv.Error:
            continue
        if len(widths) > SAMPLE_RECORDS:
            widths = widths[:SAMPLE_RECORDS]
        elif len(text) > SAMPLE_CHARS and len(widths) > 1:
            widths = widths[:-1]  # the sample may end inside its last record
        if not widths or widths[0] < 2:
            continue
        score = (sum(w == widths[0] for w in widths) / len(widths), widths[0])
        if score > best_score:
            best, best_score = delimiter, score
    return best


def _records(text: str) -> tuple[list[list[str]], list[int], str]:
    """The non-blank records, their spreadsheet row numbers, and the delimiter."""
    delimiter = _delimiter(text)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    records, rows = [], []
    try:
        for rec in reader:
            if len(records) % CHECK_EVERY == 0:
                bounded.check()  # a check with a time bound (lab/runtime/bounded.py) stops when its time is up
            if len(records) > MAX_ROWS + 1:
                raise ValueError(f"This file is too large: {_limits()}; it has more than {MAX_ROWS:,} rows. "
                                 "Use a sample of it.")
            if all(not f.strip() for f in rec):
                continue
            records.append([f.strip() for f in rec])
            rows.append(reader.line_num)
    except csv.Error as e:
        raise ValueError(f"This is not a CSV file: line {reader.line_num} cannot be read ({e}); check its quotes, "
                         "or export the table again as CSV.") from None
    return records, rows, delimiter


def _numbers(cells: list[str], decimal_comma: bool) -> tuple[Optional[np.ndarray], int]:
    """The column as float64 with NaN for missing cells, or (None, index of the first non-number)."""
    vals = np.full(len(cells), np.nan)
    for i, c in enumerate(cells):
        if c.lower() in MISSING:
            continue
        try:
            vals[i] = float(c.replace(",", ".") if decimal_comma else c)
        except ValueError:
            return None, i
    return vals, -1


def _class_names(values: list[str]) -> tuple[tuple[str, ...], np.ndarray]:
    """Class names (whole numbers in numeric order, else text in text order) and each row's class index."""
    def whole(v: str) -> Optional[int]:
        try:
            f = float(v)
        except ValueError:
            return None
        return int(f) if np.isfinite(f) and f == int(f) else None

    ints = [whole(v) for v in values]
    if all(i is not None for i in ints):
        names = tuple(str(i) for i in sorted(set(ints)))
        keys = [str(i) for i in ints]
    else:
        names = tuple(sorted(set(values)))
        keys = values
    index = {n: k for k, n in enumerate(names)}
    return names, np.array([index[k] for k in keys], dtype=np.int64)


def read_csv(data: bytes, label: Optional[str] = None) -> CsvTable:
    """Check the bytes of a CSV file and return the table, or raise ValueError with one message saying what to do.

    `label`: the label column's name (default: the last column). Non-numeric feature columns are dropped and
    named in the table's `notices` (see the module docstring for every rule)."""
    if len(data) > MAX_BYTES:
        raise ValueError(f"This file is too large: {_limits()}; it has {len(data) / 1e6:.1f} MB. Use a sample of it.")
    if not data.strip():
        raise ValueError("This file is empty: upload a CSV file with a header line and one line per example.")
    sha = hashlib.sha256(data).hexdigest()
    records, line_of, delimiter = _records(_decode(data))
    width = len(records[0])
    for rec, line in zip(records, line_of, strict=True):
        if len(rec) != width:
            raise ValueError(f"This is not a CSV table: line {line} has {len(rec)} fields where the first line has "
                             f"{width}; every line needs the same number of comma-separated fields.")
    decimal_comma = delimiter == ";"
    header_is_data = all(_numbers([c], decimal_comma)[0] is not None and c.lower() not in MISSING
                         for c in records[0])
    if header_is_data:
        names = [f"column {i + 1}" for i in range(width)]
        body, first_row = records, 1
    else:
        names = [c or f"column {i + 1}" for i, c in enumerate(records[0])]
        body, first_row = records[1:], 2
    if len(body) > MAX_ROWS or width > MAX_COLUMNS:
        raise ValueError(f"This file is too large: {_limits()}; it has {len(body):,} rows and {width} columns. "
                         "Use a sample of it.")
    if width < 2 or not body:
        raise ValueError("This file has no numeric feature columns: it needs a header line, one line per example, "
                         "at least one column of numbers and a label column (the last one by default).")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"Column names must be unique: {', '.join(map(_quote, twice))} appears more than once; "
                         "rename the columns.")
    if label is None:
        li = width - 1
    elif label in names:
        li = names.index(label)
    else:
        raise ValueError(f"There is no column {_quote(label)}: the columns are {', '.join(map(_quote, names))}. "
                         "Choose one of them as the label.")
    cols = list(zip(*body, strict=True))

    labels = list(cols[li])
    lab_missing = np.flatnonzero([v.lower() in MISSING for v in labels])
    if len(lab_missing):
        raise ValueError(f"The label column {_quote(names[li])} has {len(lab_missing)} missing values (rows "
                         f"{_rows(lab_missing, first_row)}): fill them in or remove those rows.")

    features, dropped, notices, xs = [], [], [], []
    for j, name in enumerate(names):
        if j == li:
            continue
        bounded.check()
        vals, bad = _numbers(list(cols[j]), decimal_comma)
        if vals is None:
            dropped.append(name)
            notices.append(f"Column {_quote(name)} is not numeric (row {bad + first_row}: {_quote(cols[j][bad])}), "
                           "so it was left out.")
        else:
            features.append(name)
            xs.append(vals)
    if not features:
        left = f" ({', '.join(map(_quote, dropped))} hold text)" if dropped else ""
        raise ValueError(f"This file has no numeric feature columns{left}: besides the label column "
                         f"{_quote(names[li])} it needs at least one column of numbers.")
    x = np.stack(xs, axis=1)
    missing = [(n, np.flatnonzero(np.isnan(x[:, k]))) for k, n in enumerate(features)]
    missing = [(n, idx) for n, idx in missing if len(idx)]
    if missing:
        n, idx = missing[0]
        more = f" (and {len(missing) - 1} more columns have some)" if len(missing) > 1 else ""
        raise ValueError(f"Column {_quote(n)} has {len(idx)} missing values (rows {_rows(idx, first_row)}){more}: "
                         "fill them in or remove those rows or columns.")
    inf = [(n, np.flatnonzero(np.isinf(x[:, k]))) for k, n in enumerate(features)]
    inf = [(n, idx) for n, idx in inf if len(idx)]
    if inf:
        n, idx = inf[0]
        raise ValueError(f"Column {_quote(n)} has {len(idx)} infinite values (rows {_rows(idx, first_row)}): "
                         "replace them with finite numbers or remove those rows.")

    classes, y = _class_names(labels)
    lname = _quote(names[li])
    if len(classes) < 2:
        raise ValueError(f"The label column {lname} has only one class ({_quote(classes[0])}): a classifier needs at "
                         "least 2. Choose another label column.")
    if len(classes) > MAX_CLASSES:
        raise ValueError(f"The label column {lname} has {len(classes):,} classes; at most {MAX_CLASSES} are "
                         "allowed. Is it a number to predict rather than a class? Choose a label column of classes.")
    counts = np.bincount(y, minlength=len(classes))
    few = [f"{_quote(classes[k])} ({counts[k]})" for k in np.flatnonzero(counts < MIN_ROWS_PER_CLASS)]
    if few:
        raise ValueError(f"Too few rows per class: every class needs at least {MIN_ROWS_PER_CLASS} rows (for the "
                         f"train, probe and test splits); {', '.join(few[:5])}{', ...' if len(few) > 5 else ''} "
                         "have fewer. Add rows or merge rare classes.")
    x.setflags(write=False)
    y.setflags(write=False)
    name = PREFIX + sha[:HASH_DIGITS] + ("" if li == width - 1 else f":{names[li]}")
    prepared = _finite_task(name, x, y, len(classes), features)
    return CsvTable(sha256=sha, label=names[li], label_is_last=li == width - 1, features=tuple(features),
                    classes=classes, x=x, y=y, dropped=tuple(dropped), notices=tuple(notices), prepared=prepared)


def _finite_task(name: str, x: np.ndarray, y: np.ndarray, n_classes: int, features: list[str]) -> Dataset:
    """The task of a checked table, made as every table's is (lab/core/data_tabular.py: split, then standardised
    with the training rows' mean and standard deviation, as float32); ValueError naming the first feature column
    that does not come out finite. Finite raw values are not enough: 1e308 is finite, but the mean of two of them is
    not, and a standard deviation of 1e-30 makes float32 overflow on a value of 1e10."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        task = tabular_dataset(name, x, y, n_classes)
    finite = np.logical_and.reduce([s.x.isfinite().all(dim=0).numpy() for s in (task.train, task.probe, task.test)])
    bad = np.flatnonzero(~finite)
    if len(bad):
        k = int(bad[0])
        more = f" (and {len(bad) - 1} more columns)" if len(bad) > 1 else ""
        raise ValueError(f"Column {_quote(features[k])} cannot be standardised to finite numbers{more}: the lab "
                         "scales each feature by its training rows' mean and standard deviation, and its values "
                         f"(largest magnitude {np.max(np.abs(x[:, k])):.3g}) overflow that. Rescale the column (to "
                         "other units) or remove it.")
    return task


def csv_path(root: Path | str, sha256: str) -> Path:
    """Where the file of content hash `sha256` is stored under a store's root."""
    return Path(root) / DATA_DIR / f"{sha256}.csv"


def save_csv(root: Path | str, data: bytes, label: Optional[str] = None) -> str:
    """Check `data` (ValueError, nothing stored, if it is bad), store it atomically under `<root>/data/<sha256>.csv`
    and return its task name `csv:<16 hex>` (`:<label>` appended for a label other than the last column)."""
    table = read_csv(data, label)
    path = csv_path(root, table.sha256)
    if not path.is_file():  # content-addressed: the same bytes are already there
        write_atomically(path, lambda tmp: Path(tmp).write_bytes(data))
    return table.task_name


def is_csv_task(name: str) -> bool:
    """Whether a task name names an uploaded CSV."""
    return name.startswith(PREFIX)


def parse_name(name: str) -> tuple[str, Optional[str]]:
    """(16 hex digits, label column or None) of a task name `csv:<hex>[:<label>]`; ValueError if malformed."""
    m = _NAME.fullmatch(name)
    if not m:
        raise ValueError(f"{name!r} is not a CSV task name: it should be csv: and 16 hex digits "
                         "(upload the file again or pass --data PATH).")
    return m.group(1), m.group(2)


def find_csv(root: Path | str, name: str) -> Path:
    """The stored file of a CSV task name; ValueError saying what to do when it is not there."""
    digits, _ = parse_name(name)
    found = sorted((Path(root) / DATA_DIR).glob(f"{digits}*.csv"))
    found = [p for p in found if re.fullmatch(r"[0-9a-f]{64}", p.stem)]
    if not found:
        raise ValueError(f"The CSV of task {PREFIX}{digits} is not stored here ({Path(root) / DATA_DIR}): "
                         "upload the file again or pass --data PATH.")
    if len(found) > 1:
        raise ValueError(f"Two stored CSV files share the hash prefix {digits}; pass --data PATH.")
    return found[0]


@lru_cache(maxsize=8)
def _load(root: str, name: str) -> Dataset:
    path = find_csv(root, name)
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != path.stem:
        raise ValueError(f"The stored CSV {path.name} does not match its hash (damaged): upload the file again or "
                         "pass --data PATH.")
    table = read_csv(data, parse_name(name)[1])
    return table.dataset()


def load_csv(root: Path | str, name: str) -> Dataset:
    """The task of a stored CSV (`csv:<16 hex>[:<label>]`) under a store's root (cached per process)."""
    return _load(str(Path(root)), name)


def load_table(root: Path | str, name: str) -> CsvTable:
    """The checked table of a stored CSV task (its columns, classes and notices, for a page)."""
    path = find_csv(root, name)
    return read_csv(path.read_bytes(), parse_name(name)[1])
