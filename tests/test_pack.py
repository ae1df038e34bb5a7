"""Packs: a round trip keeps every entry bit for bit; a hostile or damaged archive is refused with a clear message
and nothing written; entries of another code version are skipped; a valid stored entry is never replaced."""

import hashlib
import io
import json
import os
import pickle
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import torch

from lab.classroom import pack
from lab.classroom.pack import PackError, export, import_pack
from lab.core.zoo import ModelSpec
from lab.experiments.reinit.experiment import ReinitConfig
from lab.runtime.store import Store, key_of

ROOT = Path(__file__).resolve().parents[1]
CFG = ReinitConfig(model="residual", blocks=2, width=8, epochs=1)


def filled(root) -> Store:
    s = Store(root)
    s.json("reinit", CFG, lambda: {"base_acc": 0.5, "heatmap": [[1, 2], [3, 4]]})
    s.tensors("model", ModelSpec(), lambda: ({"w": torch.arange(6.0).reshape(2, 3)}, {"checkpoints": [0]}))
    return s


def files(root):
    """The store's entries and sidecars: not its locks, nor its timings (how long builds took on *this* machine,
    lab/runtime/timings.py: a pack does not carry them)."""
    return sorted(str(p.relative_to(root)) for p in Path(root).rglob("*")
                  if p.is_file() and p.suffix != ".lock" and p.relative_to(root).parts[0] != "timings")


def members_of(path):
    with tarfile.open(path) as tf:
        return {m.name: tf.extractfile(m).read() for m in tf if m.isreg()}


def write_tar(path, members, extra=()):
    """A tar.gz of (name, bytes) plus raw TarInfos (links, devices) in `extra`."""
    with tarfile.open(path, "w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        for info in extra:
            tf.addfile(info)
    return path


@pytest.fixture
def good(tmp_path):
    src = filled(tmp_path / "src")
    out = tmp_path / "pack.tar.gz"
    assert export(src, out) == 2
    return src, out


@pytest.mark.parametrize("suffix", [".tar.gz", ".zip"])
def test_round_trip(tmp_path, suffix):
    src = filled(tmp_path / "src")
    out = tmp_path / f"pack{suffix}"
    assert export(src, out) == 2
    dst = Store(tmp_path / "dst")
    report = import_pack(dst, out)
    assert len(report.added) == 2 and not report.skipped
    assert files(src.root) == files(dst.root)
    for f in files(src.root):
        assert (src.root / f).read_bytes() == (dst.root / f).read_bytes()
    # The imported entries are served, never rebuilt.
    assert dst.json("reinit", CFG, lambda: pytest.fail("rebuilt")) == {"base_acc": 0.5, "heatmap": [[1, 2], [3, 4]]}
    tens, meta = dst.tensors("model", ModelSpec(), lambda: pytest.fail("rebuilt"))
    assert torch.equal(tens["w"], torch.arange(6.0).reshape(2, 3)) and meta == {"checkpoints": [0]}
    again = import_pack(dst, out)
    assert len(again.present) == 2 and not again.added


def tampered(good, tmp_path, change):
    """The good pack with `change(members, manifest)` applied (members: name -> bytes)."""
    _, out = good
    members = members_of(out)
    manifest = json.loads(members.pop("manifest.json"))
    extra = change(members, manifest) or ()
    members = {"manifest.json": json.dumps(manifest).encode(), **members}
    return write_tar(tmp_path / "bad.tar.gz", members, extra)


def entry_name(members, suffix):
    return next(n for n in members if n.endswith(suffix))


def relist(manifest, name, data):
    for e in manifest["entries"]:
        if f"entries/{e['file']}" == name:
            e["sha256"], e["size"] = hashlib.sha256(data).hexdigest(), len(data)


def absolute(members, manifest):
    members["/tmp/evil.json"] = b"{}"


def dotdot(members, manifest):
    members["entries/../../evil.json"] = b"{}"


def symlink(members, manifest):
    info = tarfile.TarInfo("entries/reinit/link.json")
    info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
    return [info]


def hardlink(members, manifest):
    info = tarfile.TarInfo("entries/reinit/link.json")
    info.type, info.linkname = tarfile.LNKTYPE, "manifest.json"
    return [info]


def device(members, manifest):
    info = tarfile.TarInfo("entries/reinit/dev.json")
    info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 3
    return [info]


def altered(members, manifest):
    name = entry_name(members, ".json")
    members[name] = members[name].replace(b"0.5", b"0.9")


def pickled(members, manifest):
    name = entry_name(members, ".safetensors")
    members[name] = pickle.dumps({"w": [1, 2]})
    relist(manifest, name, members[name])  # the hash matches: only parsing can catch it


def bad_json(members, manifest):
    name = entry_name(members, ".json")
    members[name] = b'{"base_acc": '
    relist(manifest, name, members[name])


def unknown_kind(members, manifest):
    e = manifest["entries"][0]
    data = members.pop(f"entries/{e['file']}")
    key = key_of("evil", e["code"], e["config"])
    e["kind"], e["file"] = "evil", f"evil/{key}.json"
    members[f"entries/{e['file']}"] = data


def foreign_module(members, manifest):
    e = next(e for e in manifest["entries"] if e["kind"] == "reinit")
    e["module"] = "os"


def renamed(members, manifest):
    e = manifest["entries"][0]
    data = members.pop(f"entries/{e['file']}")
    folder, name = e["file"].split("/")
    e["file"] = f"{folder}/{e['kind']}-{'0' * 20}.{name.rsplit('.', 1)[1]}"  # a well-formed name, but not its key
    members[f"entries/{e['file']}"] = data


def unlisted(members, manifest):
    members["entries/reinit/reinit-" + "1" * 20 + ".json"] = b"{}"


def missing(members, manifest):
    del members[entry_name(members, ".json")]


def no_manifest_format(members, manifest):
    manifest.clear()


HOSTILE = {absolute: "absolute path", dotdot: "outside the pack", symlink: "not a plain file",
           hardlink: "not a plain file", device: "not a plain file", altered: "sha256",
           pickled: "not a valid safetensors", bad_json: "not a valid json", unknown_kind: "unknown entry kind",
           foreign_module: "does not come from module", renamed: "does not match", unlisted: "not listed",
           missing: "does not contain", no_manifest_format: "not a Layer Lab pack manifest"}


@pytest.mark.parametrize("change", list(HOSTILE), ids=[f.__name__ for f in HOSTILE])
def test_hostile_archives_are_refused_and_nothing_is_written(good, tmp_path, change):
    bad = tampered(good, tmp_path, change)
    dst = Store(tmp_path / "dst")
    with pytest.raises(PackError, match=HOSTILE[change]):
        import_pack(dst, bad)
    assert not dst.root.exists() or files(dst.root) == []


def test_oversized_members_are_refused(good, tmp_path, monkeypatch):
    monkeypatch.setattr(pack, "MAX_MEMBER", 64)
    with pytest.raises(PackError, match="too large"):
        import_pack(Store(tmp_path / "dst"), good[1])
    assert not (tmp_path / "dst").exists()


def test_a_zip_with_a_symlink_or_a_non_archive_is_refused(tmp_path):
    z = tmp_path / "bad.zip"
    with zipfile.ZipFile(z, "w") as zf:
        info = zipfile.ZipInfo("entries/reinit/x.json")
        info.external_attr = (0o120777 << 16)  # a symbolic link
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(PackError, match="not a plain file"):
        import_pack(Store(tmp_path / "dst"), z)
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(os.urandom(300))
    with pytest.raises(PackError, match="not a tar.gz or zip"):
        import_pack(Store(tmp_path / "dst"), junk)
    assert not (tmp_path / "dst").exists()


def test_entries_of_another_code_version_are_skipped(good, tmp_path):
    def old_code(members, manifest):
        for e in manifest["entries"]:
            old = members.pop(f"entries/{e['file']}")
            e["code"] = "0" * 12
            folder, name = e["file"].split("/")
            e["file"] = f"{folder}/{key_of(e['kind'], e['code'], e['config'])}.{name.rsplit('.', 1)[1]}"
            members[f"entries/{e['file']}"] = old

    dst = Store(tmp_path / "dst")
    report = import_pack(dst, tampered(good, tmp_path, old_code))
    assert not report.added and len(report.skipped) == 2
    assert all("another version of the lab code" in m for m in report.skipped)
    assert not dst.root.exists() or files(dst.root) == []


def test_a_valid_entry_is_never_replaced_by_a_different_one(good, tmp_path):
    dst = Store(tmp_path / "dst")
    dst.json("reinit", CFG, lambda: {"base_acc": 0.7})
    report = import_pack(dst, good[1])
    assert len(report.added) == 1 and any("already stored" in m for m in report.skipped)
    assert dst.json("reinit", CFG, lambda: pytest.fail("rebuilt")) == {"base_acc": 0.7}
    # A corrupt stored entry is not "valid": the pack's copy replaces it.
    dst.path(dst.key("reinit", CFG), ".json").write_text("{")
    assert len(import_pack(dst, good[1]).added) == 1


def test_cli_round_trip_and_a_clear_error(good, tmp_path):
    env = dict(os.environ, LAYERLAB_CACHE=str(tmp_path / "cli"), PYTHONPATH=str(ROOT))
    env.pop("LAYERLAB_QUICK", None)

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "lab", "pack", *args], capture_output=True, text=True, env=env,
                              cwd=ROOT, timeout=120)

    ok = cli("import", str(good[1]))
    assert ok.returncode == 0 and "added 2" in ok.stdout, ok.stderr
    out = tmp_path / "again.zip"
    ok = cli("export", str(out))
    assert ok.returncode == 0 and "packed 2 entries" in ok.stdout, ok.stderr
    bad = tmp_path / "bad.tar.gz"
    write_tar(bad, {"manifest.json": b"{}", "../evil": b""})
    err = cli("import", str(bad))
    assert err.returncode == 2 and "Traceback" not in err.stderr
    assert err.stderr.count("\n") == 1 and "outside the pack" in err.stderr
    err = cli("export", str(tmp_path / "x.rar"))
    assert err.returncode == 2 and ".tar.gz, .tgz or .zip" in err.stderr
