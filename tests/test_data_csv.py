"""A CSV of your own: every bad file gets its one message (and nothing is stored), a good one round-trips through
the store under its content hash, and its splits are stratified, seeded and standardised with training statistics."""

import hashlib
import io
import zipfile

import numpy as np
import pytest
import torch

from lab.core import data_csv
from lab.core.data_csv import MAX_CLASSES, MIN_ROWS_PER_CLASS, read_csv, save_csv
from lab.core.task_facts import task_facts
from lab.core.zoo import task
from lab.runtime.store import Store, use_store


def table(rows_per_class=(12, 15, 20), features=3, seed=0, header=True, sep=",", label_name="label") -> bytes:
    """A good CSV: `features` numeric columns and a text label, classes shifted apart."""
    rng = np.random.default_rng(seed)
    lines = [sep.join([f"f{i}" for i in range(features)] + [label_name])] if header else []
    for k, n in enumerate(rows_per_class):
        for _ in range(n):
            vals = rng.normal(2.0 * k, 1.0, features)
            lines.append(sep.join([f"{v:.4f}" for v in vals] + [f"class{k}"]))
    return ("\n".join(lines) + "\n").encode()


def refused(data: bytes, match: str, **kw) -> str:
    with pytest.raises(ValueError, match=match) as e:
        read_csv(data, **kw)
    msg = str(e.value)
    assert "\n" not in msg  # one message
    return msg


def test_a_good_table():
    t = read_csv(table())
    assert t.features == ("f0", "f1", "f2") and t.label == "label" and t.classes == ("class0", "class1", "class2")
    assert t.x.shape == (47, 3) and np.bincount(t.y).tolist() == [12, 15, 20]
    assert t.task_name == "csv:" + hashlib.sha256(table()).hexdigest()[:16] and not t.notices


# -- every bad file gets its message ------------------------------------------------------------------------------
def test_binary_is_not_a_csv():
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10"
    refused(png, r"not a CSV file: it is binary")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:  # what an .xlsx workbook is
        z.writestr("xl/workbook.xml", "<workbook/>")
    refused(buf.getvalue(), r"not a CSV file: it is binary .*CSV UTF-8")


def test_undecodable_or_control_characters_are_not_a_csv():
    refused(b"a,b\n\x81\x8d,\x90\x9d\n", r"not a CSV file: it is not text")
    refused(b"a,b\n1,\x02\x03\n", r"not a CSV file: it holds binary control characters")


def test_unparsable_is_not_a_csv():
    msg = refused(b"a,b,label\n1,2,x\n3,4\n5,6,y\n", r"not a CSV table: line 3 has 2 fields where the first line has 3")
    assert "same number" in msg
    refused(b'a,b,label\n1,"2,x\n', r"not a CSV file: line \d+ cannot be read")


def test_empty():
    refused(b"  \n\n", r"empty")


def test_no_numeric_feature_columns():
    data = b"name,colour,label\n" + b"".join(b"n%d,red,%s\n" % (i, b"ab"[i % 2:i % 2 + 1]) for i in range(30))
    msg = refused(data, r"no numeric feature columns \('name', 'colour' hold text\)")
    assert "at least one column of numbers" in msg
    refused(b"label\na\nb\n", r"no numeric feature columns")


def test_a_label_with_one_class():
    data = b"x,y\n" + b"".join(b"%d,same\n" % i for i in range(30))
    refused(data, r"only one class \('same'\).*at least 2")


def test_a_label_with_too_many_classes():
    data = table(rows_per_class=(10,) * (MAX_CLASSES + 1))
    refused(data, rf"has {MAX_CLASSES + 1} classes; at most {MAX_CLASSES} are allowed")
    read_csv(table(rows_per_class=(10,) * MAX_CLASSES))  # the bound itself is allowed
    decimals = b"a,b\n" + b"".join(b"%d,%d.5\n" % (i, i) for i in range(300))  # a number to predict
    refused(decimals, r"has 300 classes; at most 50 .* number to predict")


def test_missing_values_name_the_column_and_count():
    lines = table().decode().splitlines()
    for r in (3, 9, 10):  # spreadsheet rows 3, 9 and 10 (the header is row 1): empty, NA, ?
        cells = lines[r - 1].split(",")
        cells[1] = ["", "NA", "?"][(3, 9, 10).index(r)]
        lines[r - 1] = ",".join(cells)
    msg = refused(("\n".join(lines) + "\n").encode(), r"Column 'f1' has 3 missing values \(rows 3, 9, 10\)")
    assert "fill them in" in msg
    lines = table().decode().splitlines()
    lines[4] = lines[4].rsplit(",", 1)[0] + ","
    refused(("\n".join(lines) + "\n").encode(), r"label column 'label' has 1 missing values \(rows 5\)")


def test_non_finite_numbers():
    lines = table().decode().splitlines()
    lines[6] = "inf," + lines[6].split(",", 1)[1]
    lines[7] = "-Infinity," + lines[7].split(",", 1)[1]
    refused(("\n".join(lines) + "\n").encode(), r"Column 'f0' has 2 infinite values \(rows 7, 8\)")
    lines = table().decode().splitlines()
    lines[2] = "1e999," + lines[2].split(",", 1)[1]  # overflows to inf
    refused(("\n".join(lines) + "\n").encode(), r"Column 'f0' has 1 infinite values")


def _with_column(values) -> bytes:
    """table() with its column f1 replaced by `values` (one per data row, as text)."""
    lines = table().decode().splitlines()
    for i, v in enumerate(values, start=1):
        cells = lines[i].split(",")
        cells[1] = v
        lines[i] = ",".join(cells)
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("values", [
    ["1e308"] * 47,  # every value finite; their mean is not (issue 60: the task's features were NaN)
    ["1e308", "-1e308"] * 23 + ["0"],
    ["1.7e308"] + ["0"] * 46,
])
def test_finite_values_whose_standardised_features_are_not_are_refused_naming_the_column(values):
    msg = refused(_with_column(values), r"Column 'f1' cannot be standardised to finite numbers")
    assert "Rescale the column" in msg


@pytest.mark.parametrize("values", [
    ["1e150", "-1e150"] * 23 + ["0"],  # large, yet their squares still sum within float64
    ["1e-300", "0"] * 23 + ["1e-300"],  # a tiny spread is still a spread
    ["1e30"] + ["0"] * 46,
])
def test_every_accepted_table_has_finite_features_in_every_split(values):
    d = read_csv(_with_column(values)).dataset()
    assert all(bool(s.x.isfinite().all()) for s in (d.train, d.probe, d.test))


def test_too_large():
    big = b"a,label\n" + b"1.000000000,x\n" * (5_000_000 // 14 + 1)
    assert len(big) > data_csv.MAX_BYTES
    refused(big, r"too large: at most 5 MB, 50,000 rows and 200 columns; it has 5\.0 MB")
    rows = b"a,label\n" + b"".join(b"%d,%d\n" % (i, i % 2) for i in range(50_001))
    refused(rows, r"too large: at most 5 MB, 50,000 rows and 200 columns; it has 50,001 rows")
    wide = (",".join(f"c{i}" for i in range(201)) + "\n" + ",".join(["1"] * 201) + "\n").encode()
    refused(wide, r"too large: .* it has 1 rows and 201 columns")


def test_too_few_rows_per_class():
    msg = refused(table(rows_per_class=(12, MIN_ROWS_PER_CLASS - 1, 30)),
                  rf"every class needs at least {MIN_ROWS_PER_CLASS} rows")
    assert "'class1' (9)" in msg and "class0" not in msg
    read_csv(table(rows_per_class=(MIN_ROWS_PER_CLASS, MIN_ROWS_PER_CLASS)))  # the bound itself is enough


def test_a_label_column_that_is_not_there():
    refused(table(), r"no column 'kind': the columns are 'f0', 'f1', 'f2', 'label'", label="kind")


def test_non_numeric_features_are_dropped_with_a_notice():
    lines = table().decode().splitlines()
    lines = [f"id,{ln}" if i == 0 else f"row{i},{ln}" for i, ln in enumerate(lines)]
    t = read_csv(("\n".join(lines) + "\n").encode())
    assert t.dropped == ("id",) and t.features == ("f0", "f1", "f2")
    assert t.notices == ("Column 'id' is not numeric (row 2: 'row1'), so it was left out.",)


# -- formats ------------------------------------------------------------------------------------------------------
def test_semicolons_with_decimal_commas_tabs_and_no_header():
    a = read_csv(table())
    semi = table(sep=";").decode().replace(".", ",").encode()
    assert np.array_equal(read_csv(semi).x, a.x)
    assert np.array_equal(read_csv(table(sep="\t")).x, a.x)
    bare = read_csv(b"".join(b"%d,%d,%d\n" % (i, i * i, i % 2) for i in range(30)))
    assert bare.features == ("column 1", "column 2") and bare.label == "column 3" and bare.classes == ("0", "1")
    bom = read_csv(b"\xef\xbb\xbf" + table())  # Excel's UTF-8 mark
    assert bom.features[0] == "f0"


def test_whole_number_labels_are_classes_in_numeric_order():
    data = b"x,grade\n" + b"".join(b"%d,%s\n" % (i, [b"10", b"9", b"2.0"][i % 3]) for i in range(36))
    t = read_csv(data)
    assert t.classes == ("2", "9", "10") and np.bincount(t.y).tolist() == [12, 12, 12]


# -- the task: splits, storage, loading ---------------------------------------------------------------------------
def test_splits_are_stratified_seeded_and_standardised_on_train():
    d = read_csv(table(rows_per_class=(40, 60, 100))).dataset()
    assert (len(d.train), len(d.probe), len(d.test)) == (120, 30, 50)
    for split, n in ((d.train, 120), (d.probe, 30), (d.test, 50)):
        assert torch.bincount(split.y).tolist() == [round(n * 0.2), round(n * 0.3), round(n * 0.5)]
    assert torch.allclose(d.train.x.mean(0), torch.zeros(3), atol=1e-5)
    assert torch.allclose(d.train.x.std(0, unbiased=False), torch.ones(3), atol=1e-4)
    again = read_csv(table(rows_per_class=(40, 60, 100))).dataset()
    assert torch.equal(d.test.x, again.test.x) and torch.equal(d.train.y, again.train.y)
    assert d.name == read_csv(table(rows_per_class=(40, 60, 100))).task_name


def test_save_and_load_round_trip(tmp_path):
    data = table()
    name = save_csv(tmp_path, data)
    sha = hashlib.sha256(data).hexdigest()
    assert name == f"csv:{sha[:16]}"
    stored = tmp_path / "data" / f"{sha}.csv"
    assert stored.read_bytes() == data
    assert save_csv(tmp_path, data) == name  # the same bytes, the same name (and the same file)
    assert [p.name for p in (tmp_path / "data").iterdir()] == [f"{sha}.csv"]
    d = task(name, Store(tmp_path))
    direct = read_csv(data).dataset()
    assert torch.equal(d.train.x, direct.train.x) and torch.equal(d.test.y, direct.test.y)
    with use_store(Store(tmp_path)):  # the active store's root, as an experiment sees it
        assert torch.equal(task(name).probe.x, direct.probe.x)
        f = task_facts(name)
    assert (f.n_train, f.n_probe, f.n_test, f.n_features, f.n_classes) == (28, 7, 12, 3, 3)
    assert sha in f.source and "label column 'label'" in f.about
    other = save_csv(tmp_path, table(seed=1))
    assert other != name


def test_a_chosen_label_column_is_part_of_the_name(tmp_path):
    lines = table().decode().splitlines()
    moved = [",".join([ln.rsplit(",", 1)[1]] + ln.rsplit(",", 1)[0].split(",")) for ln in lines]
    data = ("\n".join(moved) + "\n").encode()
    name = save_csv(tmp_path, data, label="label")
    assert name.endswith(":label")
    d = task(name, Store(tmp_path))
    assert d.n_features == 3 and d.n_classes == 3
    assert save_csv(tmp_path, table(), label="label") == save_csv(tmp_path, table())  # the last column: no suffix


def test_bad_input_stores_nothing(tmp_path):
    for bad in (b"\x00\x01", table(rows_per_class=(3, 3)), b"a,b\n1,x\n"):
        with pytest.raises(ValueError):
            save_csv(tmp_path, bad)
    assert not (tmp_path / "data").exists()


def test_a_missing_or_damaged_file_says_what_to_do(tmp_path):
    with pytest.raises(ValueError, match="upload the file again or pass --data PATH"):
        task("csv:0123456789abcdef", Store(tmp_path))
    with pytest.raises(ValueError, match="not a CSV task name"):
        task("csv:../../etc/passwd", Store(tmp_path))
    name = save_csv(tmp_path, table(seed=3))
    path = next((tmp_path / "data").iterdir())
    path.write_bytes(table(seed=4))
    with pytest.raises(ValueError, match="does not match its hash .* upload the file again"):
        task(name, Store(tmp_path))
