"""Packs: a round trip keeps every entry bit for bit; a hostile or damaged archive is refused with a clear message
and nothing written; entries of another code version are skipped; a valid stored entry is never replaced; a pack
the course did not sign is refused without --unsigned-ok, and with it its results say they came from elsewhere."""

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
from lab.runtime.notices import collecting
from lab.runtime.store import Store, key_of

ROOT = Path(__file__).resolve().parents[1]
CFG = ReinitConfig(model="residual", blocks=2, width=8, epochs=1)


@pytest.fixture(autouse=True)
def course(tmp_path, monkeypatch):
    """One course: every store here shares the course's secret (its 0600 file), so its packs verify."""
    where = tmp_path / "course.secret"
    monkeypatch.setenv("LAYERLAB_SECRET_FILE", str(where))
    return where


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
    return next(n for n in members if n.startswith("entries/") and n.endswith(suffix))


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
    with pytest.raises(PackError):  # its members, or else its changed manifest's signature
        import_pack(dst, bad)
    with pytest.raises(PackError, match=HOSTILE[change]):  # and --unsigned-ok skips none of the other checks
        import_pack(dst, bad, unsigned_ok=True)
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
    report = import_pack(dst, tampered(good, tmp_path, old_code), unsigned_ok=True)
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
    assert ok.returncode == 0 and "added 2" in ok.stdout and "elsewhere" not in ok.stdout, ok.stderr
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
    edited = tampered(good, tmp_path, edited_result)
    err = cli("import", str(edited))
    assert err.returncode == 2 and err.stderr.count("\n") == 1 and "--unsigned-ok" in err.stderr, err.stderr
    env["LAYERLAB_CACHE"] = str(tmp_path / "cli2")
    ok = cli("import", "--unsigned-ok", str(edited))
    assert ok.returncode == 0 and "added 2" in ok.stdout and "came from elsewhere" in ok.stdout, ok.stderr
    secret = Path(os.environ["LAYERLAB_SECRET_FILE"]).read_text().strip()
    assert all(secret not in out.stdout + out.stderr for out in (ok, err))



# -- signatures: a pack is the course's own only when the course signed it (lab/classroom/signing.py) -------------
def edited_result(members, manifest):
    """What an editor of a pack does: a result changed, its entry's own hash and the manifest's sha256 recomputed."""
    name = entry_name(members, ".json")
    data = members[name].replace(b"0.5", b"0.999")
    if data.startswith(b'{"sha256":'):  # a sealed entry: its hash is recomputed too (it holds no secret)
        from lab.runtime import sealed

        key = name.rsplit("/", 1)[1][:-len(".json")]
        data = sealed.seal_json(key, json.dumps(json.loads(data)["entry"]["value"]))
    members[name] = data
    relist(manifest, name, data)


def test_an_edited_result_with_its_hashes_recomputed_is_refused_without_the_flag(good, tmp_path):
    bad = tampered(good, tmp_path, edited_result)
    dst = Store(tmp_path / "dst")
    with pytest.raises(PackError, match="signature that does not match its contents.*--unsigned-ok"):
        import_pack(dst, bad)
    assert not dst.root.exists() or files(dst.root) == []
    unsigned = tmp_path / "unsigned.tar.gz"
    write_tar(unsigned, {n: d for n, d in members_of(bad).items() if n != "signature.json"})
    with pytest.raises(PackError, match="is not signed"):
        import_pack(dst, unsigned)


def test_with_the_flag_it_imports_and_every_read_says_it_came_from_elsewhere(good, tmp_path):
    from lab.runtime.store import cached_only

    dst = Store(tmp_path / "dst")
    report = import_pack(dst, tampered(good, tmp_path, edited_result), unsigned_ok=True)
    assert len(report.added) == 2 and report.foreign == "bad-signature"
    with collecting() as notes, pytest.warns(UserWarning), cached_only():
        served = dst.json("reinit", CFG, lambda: pytest.fail("rebuilt"))
        dst.tensors("model", ModelSpec(), lambda: pytest.fail("rebuilt"))
    assert served["base_acc"] == 0.999  # the edited number is served, and said not to be the lab's
    assert len(notes) == 2 and all("imported from a pack whose signature does not match its contents" in n
                                   for n in notes)
    # Carried on in the importer's own (signed) pack, the entries keep their mark.
    again = tmp_path / "again.tar.gz"
    export(dst, again)
    third = Store(tmp_path / "third")
    assert import_pack(third, again).foreign is None
    with collecting() as notes, pytest.warns(UserWarning):
        assert third.json("reinit", CFG, lambda: pytest.fail("rebuilt"))["base_acc"] == 0.999
    assert notes and "imported from a pack" in notes[0]
    # A result computed here from an imported model says so too.
    with pytest.warns(UserWarning):
        dst.json("probe", CFG, lambda: {"n": len(dst.tensors("model", ModelSpec(), lambda: pytest.fail("rebuilt"))[0])})
    with collecting() as notes, pytest.warns(UserWarning):
        Store(dst.root).json("probe", CFG, lambda: pytest.fail("stored"))
    assert notes and "computed from entries imported from" in notes[0]


def test_a_pack_of_another_course_is_refused_and_marked_as_such_when_taken(good, tmp_path, monkeypatch):
    monkeypatch.setenv("LAYERLAB_SECRET_FILE", str(tmp_path / "other-course.secret"))
    (tmp_path / "other-course.secret").write_text("b" * 64)
    dst = Store(tmp_path / "dst")
    with pytest.raises(PackError, match="signed by another course"):
        import_pack(dst, good[1])
    assert import_pack(dst, good[1], unsigned_ok=True).foreign == "another-key"
    with collecting() as notes, pytest.warns(UserWarning):
        dst.json("reinit", CFG, lambda: pytest.fail("rebuilt"))
    assert "a pack signed by another course" in notes[0]
    # A store without any secret has no key: the pack is another course's, and no secret is made by the import.
    monkeypatch.delenv("LAYERLAB_SECRET_FILE")
    bare = Store(tmp_path / "bare")
    with pytest.raises(PackError, match="signed by another course"):
        import_pack(bare, good[1])
    assert not bare.root.exists() or files(bare.root) == []


def test_a_correctly_signed_pack_imports_normally_and_holds_no_key(good, tmp_path, course):
    from lab.runtime import secret

    members = members_of(good[1])
    sig = json.loads(members["signature.json"])
    assert sig["alg"] == "hmac-sha256" and len(sig["mac"]) == 64
    master = course.read_text().strip().encode()
    key = secret.derive(master, "pack")
    for data in members.values():
        assert master not in data and key not in data and key.hex().encode() not in data
    dst = Store(tmp_path / "dst")
    with collecting() as notes:
        report = import_pack(dst, good[1])
        dst.json("reinit", CFG, lambda: pytest.fail("rebuilt"))
    assert len(report.added) == 2 and report.foreign is None and notes == []


def test_a_damaged_entry_is_not_exported_and_an_unsealed_one_is_not_imported(tmp_path):
    src = filled(tmp_path / "src")
    path = src.path(src.key("reinit", CFG), ".json")
    path.write_bytes(path.read_bytes().replace(b"0.5", b"0.7"))
    out = tmp_path / "pack.tar.gz"
    assert export(src, out) == 1  # the model only

    def unsealed(members, manifest):
        name = entry_name(members, ".safetensors")
        from safetensors.torch import save

        members[name] = save({"w": torch.ones(2)}, metadata={"lab_meta": "{}"})  # as stored before sealing
        relist(manifest, name, members[name])

    report = import_pack(Store(tmp_path / "dst"), tampered((src, out), tmp_path, unsealed), unsigned_ok=True)
    assert not report.added and any("without a checksum" in m for m in report.skipped)
