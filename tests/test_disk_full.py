"""Issue 60, item 5b: a full disk ends the CLI in its one-line error, not a raw SafetensorError traceback. The full disk
is simulated: the writer raises what it raises on a full disk (safetensors' own error, which reports the OS error in
its text, or OSError ENOSPC), at the store's writer (lab/runtime/atomic.py) and, through a whole command, as the
store writes a model."""

import errno
from pathlib import Path

import pytest
from safetensors import SafetensorError

from lab.cli import main
from lab.runtime import store as store_module
from lab.runtime.atomic import WriteFailed, write_atomically

# safetensors 0.8's words for an OS error met while writing (seen with RLIMIT_FSIZE: "File too large (os error 27)")
SAFETENSORS_FULL = "Error while serializing: I/O error: No space left on device (os error 28)"


def _full_disk(kind: str):
    def write(*args, **kwargs) -> None:
        if kind == "safetensors":
            raise SafetensorError(SAFETENSORS_FULL)
        raise OSError(errno.ENOSPC, "No space left on device")

    return write


@pytest.mark.parametrize("kind", ["safetensors", "oserror"])
def test_the_writer_says_a_full_disk_in_one_line_and_leaves_nothing(tmp_path, kind):
    target = tmp_path / "models" / "entry.safetensors"
    with pytest.raises(WriteFailed) as e:
        write_atomically(target, _full_disk(kind))
    assert e.value.errno == errno.ENOSPC and isinstance(e.value, OSError)
    assert str(e.value) == f"cannot write {target}: No space left on device"
    assert list(target.parent.iterdir()) == []  # neither the entry nor its temporary file


def test_a_writer_error_that_is_not_the_disk_stays_what_it_is(tmp_path):
    def broken(tmp: str) -> None:
        raise SafetensorError("Error while serializing: tensor is not contiguous")

    with pytest.raises(SafetensorError):
        write_atomically(tmp_path / "x", broken)
    with pytest.raises(TypeError):
        write_atomically(tmp_path / "y", lambda tmp: Path(tmp).write_text(3))
    write_atomically(tmp_path / "z", lambda tmp: Path(tmp).write_text("ok"))
    assert (tmp_path / "z").read_text() == "ok"


@pytest.mark.parametrize("kind", ["safetensors", "oserror"])
def test_a_command_on_a_full_disk_ends_in_the_clis_one_line_error(tmp_path, monkeypatch, capsys, kind):
    monkeypatch.setenv("LAYERLAB_CACHE", str(tmp_path / "store"))
    monkeypatch.setenv("LAYERLAB_QUICK", "1")
    real = store_module.write_atomically

    def full_for_models(path: Path, write, durable: bool = True) -> None:  # the disk fills up as a model is written
        real(path, _full_disk(kind) if path.suffix == ".safetensors" else write, durable)

    monkeypatch.setattr(store_module, "write_atomically", full_for_models)
    code = main(["delete", "--arch", "plain", "--k", "2", "--select", "evenly-spaced", "--recovery", "none",
                 "--json"], prog="layerlab")
    err = capsys.readouterr().err
    assert "Traceback" not in err and "SafetensorError" not in err
    said = [line for line in err.splitlines() if "error" in line]
    assert len(said) == 1 and code == 1, err
    assert said[0].startswith("layerlab: error: cannot write ") and ".safetensors: No space left on device; free " \
        "some space on that disk, or point LAYERLAB_CACHE at a folder elsewhere" in said[0]
    assert not list((tmp_path / "store").rglob("*.tmp"))
