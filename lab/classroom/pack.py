"""Packs: store entries in one compressed archive (tar.gz or zip), to carry trained models and results from one
machine to another (`python -m lab pack export FILE` / `python -m lab pack import FILE`).

An archive is data from somewhere else, so import trusts nothing in it. Every member is checked *before* anything
lands in the store: a plain file (no links, devices, absolute paths or `..`), a name of the form
`entries/<kind>/<key>.<json|safetensors>` for a kind this lab knows, sizes bounded (the archive's own claims and
what actually decompresses), listed in the manifest with a matching sha256, and parsed as JSON or safetensors
(never unpickled), with its own seal intact (lab/runtime/sealed.py). The manifest carries what each key hashes
(kind, code version, config JSON, config module), so import recomputes the key, and an entry made by another
version of the code is skipped with a message (its key would never be asked for here), as is one stored before
entries were sealed. A valid stored entry is never replaced by a different one; writes go through the store
(atomic, under the entry's lock), with the entry's sidecar.

The manifest is signed by the course that made the pack (lab/classroom/signing.py). A pack that is unsigned, signed
by another course or altered after signing is refused unless the importer says `unsigned_ok`; its entries are then
sealed again with an origin mark, which every read of them (and of whatever is computed from them) shows on the page.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import stat
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

from lab.classroom import signing
from lab.runtime import sealed
from lab.runtime.atomic import write_atomically
from lab.runtime.codeversion import code_version, names_lab_code, parts
from lab.runtime.store import SIDECAR, Store, key_of
from lab.runtime.version import libraries

FORMAT, VERSION = "layerlab-pack", 1
MANIFEST = "manifest.json"
# Bounds on what an import reads (a gzip or zip bomb is cut off at these, whatever the archive claims).
MAX_MEMBER = 512 * 2**20
MAX_TOTAL = 4 * 2**30
MAX_MEMBERS = 20_000
MAX_MANIFEST = 32 * 2**20
# Kinds stored with Store.tensors outside an @entry: the zoo's models here, an experiment's own in its descriptor
# (the rest register themselves through lab.experiment.entry).
TENSOR_KINDS = {"model": "lab.core.zoo"}
NAME = re.compile(r"entries/([a-z0-9]+)/([a-z0-9][a-z0-9-]*-[0-9a-f]{20})\.(json|safetensors)")
HASH = re.compile(r"[0-9a-f]{64}")


class PackError(ValueError):
    """The archive cannot be used; the message says why (a ValueError, so the CLI prints one line)."""


@dataclass
class ImportReport:
    added: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # one message per entry left out, with the reason
    foreign: Optional[str] = None  # why the pack is not this course's own (sealed.WHY), when imported anyway


def known_kinds() -> dict[str, str]:
    """Every entry kind of this lab -> the module its configs may come from (importing every descriptor imports
    every experiment, whose @entry kinds register themselves)."""
    from lab.catalog import descriptors
    from lab.experiment import KINDS

    tensors = dict(TENSOR_KINDS)
    for d in descriptors().values():
        tensors.update(d.tensor_kinds)
    return {**KINDS, **tensors}


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- export ---------------------------------------------------------------------------------------------------
def stored_entries(store: Store, include_quick: bool) -> Iterator[tuple[dict[str, str], Path]]:
    """(sidecar, entry file) of every stored entry that has both."""
    for sidecar in sorted(store.root.glob(f"*/*{SIDECAR}")):
        try:
            about = json.loads(sidecar.read_text())
            path = sidecar.parent / about["file"]
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a sidecar we cannot read describes nothing we could export
        if path.is_file() and (include_quick or not about["code"].endswith("-quick")):
            yield about, path


def _versions(value: Any) -> dict[str, str]:
    """Library versions as recorded beside an entry (an entry stored before they were recorded has none)."""
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def _intact(path: Path, data: bytes) -> bool:
    """Whether a stored entry's bytes pass their seal (a damaged one is not the lab's to pass on)."""
    try:
        sealed.check(path.name.split(".", 1)[0], "." + path.name.rsplit(".", 1)[1], data)
        return True
    except Exception:  # noqa: BLE001 - whatever is wrong with it
        return False


def export(store: Store, target: Path | str, include_quick: bool = False) -> int:
    """Write every intact stored entry (quick-mode ones only if asked) to `target` (.tar.gz, .tgz or .zip), signed
    with the course's pack key (made with the course's secret if there is none yet); returns how many. The archive
    appears atomically: a failed export leaves no half file under its name."""
    target = Path(target)
    fmt = _format_of(target)
    members: list[tuple[str, bytes]] = []
    manifest: list[dict[str, Any]] = []
    for about, path in stored_entries(store, include_quick):
        data = path.read_bytes()
        if not _intact(path, data):
            continue
        name = f"{path.parent.name}/{path.name}"
        members.append((f"entries/{name}", data))
        manifest.append({"kind": about["kind"], "code": about["code"], "config": about["config"],
                         "module": about["module"], "file": name, "sha256": _sha256(data), "size": len(data),
                         "versions": _versions(about.get("versions"))})
    head = json.dumps({"format": FORMAT, "version": VERSION, "made_with": libraries(), "entries": manifest},
                      indent=1).encode()
    signature = signing.sign(signing.own_key(store), head)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    try:
        if fmt == "zip":
            with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
                for name, data in [(MANIFEST, head), (signing.SIGNATURE, signature), *members]:
                    zf.writestr(name, data)
        else:
            with tarfile.open(tmp, "w:gz") as tf:
                for name, data in [(MANIFEST, head), (signing.SIGNATURE, signature), *members]:
                    info = tarfile.TarInfo(name)
                    info.size, info.mode = len(data), 0o644
                    tf.addfile(info, io.BytesIO(data))
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return len(members)


def _format_of(path: Path) -> str:
    name = path.name.lower()
    if name.endswith((".tar.gz", ".tgz")):
        return "tar"
    if name.endswith(".zip"):
        return "zip"
    raise PackError(f"{path.name}: a pack is a .tar.gz, .tgz or .zip file")


# -- import: read and check everything first --------------------------------------------------------------------
def _check_name(name: str) -> None:
    if name.startswith("/") or name.startswith("\\") or re.match(r"[A-Za-z]:", name):
        raise PackError(f"member {name!r} has an absolute path")
    if ".." in name.replace("\\", "/").split("/") or "\\" in name:
        raise PackError(f"member {name!r} points outside the pack ('..' or a backslash)")


def _read_members(path: Path) -> dict[str, bytes]:
    """Every file of the archive by name, after the checks that need no manifest (type, name, sizes)."""
    out: dict[str, bytes] = {}
    total = 0

    def add(name: str, claimed: int, read: Any) -> None:
        nonlocal total
        _check_name(name)
        if name in out:
            raise PackError(f"member {name!r} appears twice")
        if len(out) >= MAX_MEMBERS:
            raise PackError(f"more than {MAX_MEMBERS} members")
        limit = {MANIFEST: MAX_MANIFEST, signing.SIGNATURE: signing.MAX_SIGNATURE}.get(name, MAX_MEMBER)
        if claimed > limit:
            raise PackError(f"member {name!r} is too large ({claimed} bytes; the limit is {limit})")
        data = read(limit + 1)
        if len(data) > limit:
            raise PackError(f"member {name!r} is larger than its header says and over the limit ({limit} bytes)")
        total += len(data)
        if total > MAX_TOTAL:
            raise PackError(f"the pack unpacks to more than {MAX_TOTAL} bytes")
        out[name] = data

    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as zf:
                for info in zf.infolist():
                    mode = info.external_attr >> 16
                    if info.is_dir():
                        _check_name(info.filename)
                        continue
                    if stat.S_IFMT(mode) not in (0, stat.S_IFREG):  # 0: written without a Unix file type
                        raise PackError(f"member {info.filename!r} is not a plain file (a link or a device)")
                    with zf.open(info) as fh:
                        add(info.filename, info.file_size, fh.read)
        elif tarfile.is_tarfile(path):
            with tarfile.open(path, "r:*") as tf:
                for m in tf:
                    if m.isdir():
                        _check_name(m.name)
                        continue
                    if not m.isreg():
                        raise PackError(f"member {m.name!r} is not a plain file (a link or a device)")
                    fh = tf.extractfile(m)
                    add(m.name, m.size, fh.read)
        else:
            raise PackError(f"{path.name} is not a tar.gz or zip archive")
    except PackError:
        raise
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError, RuntimeError, NotImplementedError) as exc:
        raise PackError(f"{path.name} could not be read as an archive ({type(exc).__name__}: {exc})") from None
    return out


def _parse(name: str, data: bytes) -> None:
    """The file parses as what its name says (JSON, or safetensors with the store's JSON metadata); never pickle."""
    try:
        if name.endswith(".json"):
            json.loads(data.decode("utf-8"))
            return
        from safetensors.torch import load

        if len(data) < 8:
            raise ValueError("too short")
        n = int.from_bytes(data[:8], "little")
        if n > len(data) - 8:
            raise ValueError("header longer than the file")
        header = json.loads(data[8:8 + n].decode("utf-8"))
        json.loads(header["__metadata__"]["lab_meta"])  # what the store reads back
        load(data)  # every tensor's offsets and dtype
    except Exception as exc:  # noqa: BLE001 - whatever is wrong with it, the file is not usable
        what = name.rsplit(".", 1)[1]
        raise PackError(f"member {name!r} is not a valid {what} file ({type(exc).__name__})") from None


@dataclass
class _Entry:
    about: dict[str, Any]
    key: str
    name: str  # member name
    data: bytes


@dataclass
class _Pack:
    entries: list[_Entry]
    skipped: list[str]  # one message per entry left out (another code version, stored before sealing)
    foreign: Optional[str]  # why the pack is not this course's (sealed.WHY); None when it is
    pack_id: str  # 12 hex digits of the manifest's sha256: names the pack in an origin mark


def read_pack(path: Path | str, course_key: Optional[bytes], unsigned_ok: bool = False) -> _Pack:
    """Check a whole pack, its signature under `course_key` first (lab/classroom/signing.py): one that
    is not this course's is refused unless `unsigned_ok`. Raises PackError, before anything is written, at the first
    thing wrong."""
    path = Path(path)
    if not path.is_file():
        raise PackError(f"{path} does not exist")
    members = _read_members(path)
    if MANIFEST not in members:
        raise PackError(f"{path.name} has no {MANIFEST}: not a Layer Lab pack")
    head = members.pop(MANIFEST)
    foreign = signing.verdict(course_key, head, members.pop(signing.SIGNATURE, None))
    if foreign is not None and not unsigned_ok:
        raise PackError(signing.refusal(path.name, foreign))
    try:
        manifest = json.loads(head.decode("utf-8"))
        assert isinstance(manifest, dict) and manifest.get("format") == FORMAT
        listed = manifest["entries"]
        assert isinstance(listed, list)
    except Exception:  # noqa: BLE001 - any malformed manifest gets the same message
        raise PackError(f"{MANIFEST} is not a Layer Lab pack manifest") from None
    if manifest.get("version") != VERSION:
        raise PackError(f"pack format version {manifest.get('version')!r} is not supported (this lab reads {VERSION})")
    kinds = known_kinds()
    entries, skipped, seen = [], [], set()
    for i, item in enumerate(listed):
        try:
            about = {k: item[k] for k in ("kind", "code", "config", "module")}
            file, digest, size = item["file"], item["sha256"], item["size"]
            assert all(isinstance(v, str) for v in (*about.values(), file, digest)) and isinstance(size, int)
        except Exception:  # noqa: BLE001
            raise PackError(f"{MANIFEST}: entry {i} is malformed") from None
        name = f"entries/{file}"
        _check_name(name)
        m = NAME.fullmatch(name)
        if m is None:
            raise PackError(f"{MANIFEST}: {file!r} is not a store entry name")
        folder, key, suffix = m.groups()
        kind = about["kind"]
        if kind not in kinds:
            raise PackError(f"{file}: unknown entry kind {kind!r}")
        if parts(about["module"])[0] != kinds[kind] or not names_lab_code(about["module"]):
            raise PackError(f"{file}: kind {kind!r} does not come from module {about['module']!r}")
        if key_of(kind, about["code"], about["config"]) != key or folder != key.split("-", 1)[0]:
            raise PackError(f"{file}: its name does not match its kind, code version and config")
        if name in seen:
            raise PackError(f"{MANIFEST}: {file} is listed twice")
        seen.add(name)
        data = members.get(name)
        if data is None:
            raise PackError(f"{MANIFEST} lists {file}, which the pack does not contain")
        if not HASH.fullmatch(digest) or len(data) != size or _sha256(data) != digest:
            raise PackError(f"{file}: its sha256 or size does not match the manifest (damaged or altered)")
        _parse(name, data)
        code = code_version(about["module"]) + ("-quick" if about["code"].endswith("-quick") else "")
        if about["code"] != code:
            skipped.append(f"{file}: made by another version of the lab code ({about['code']}, here {code}); "
                           "skipped")
            continue
        try:
            sealed.check(key, "." + suffix, data)
        except sealed.Unsealed:
            skipped.append(f"{file}: stored by an older version of the lab, without a checksum; skipped")
            continue
        except sealed.Damaged:
            raise PackError(f"{file}: its content does not match its own checksum (damaged or altered)") from None
        entries.append(_Entry({**about, "versions": _versions(item.get("versions"))}, key, name, data))
    extra = sorted(set(members) - seen)
    if extra:
        raise PackError(f"member {extra[0]!r} is not listed in {MANIFEST}")
    return _Pack(entries, skipped, foreign, _sha256(head)[:12])


def _valid(path: Path) -> bool:
    try:
        return _intact(path, path.read_bytes())
    except OSError:
        return False


def import_pack(store: Store, path: Path | str, unsigned_ok: bool = False) -> ImportReport:
    """Check the whole pack (PackError, nothing written, if anything is wrong), then add its entries to `store`.
    A pack this course did not sign is refused unless `unsigned_ok`; its entries are then marked as from elsewhere
    (lab/runtime/sealed.py), and every page that shows them says so."""
    got = read_pack(path, signing.course_key(store), unsigned_ok)
    report = ImportReport(skipped=got.skipped, foreign=got.foreign)
    origin = {"why": got.foreign, "pack": got.pack_id, "derived": False} if got.foreign else None
    for e in got.entries:
        suffix = "." + e.name.rsplit(".", 1)[1]
        target = store.path(e.key, suffix)
        data = e.data if origin is None else sealed.marked(e.key, suffix, e.data, origin)
        with store._locked(e.key):
            if target.exists():
                if target.read_bytes() == data:
                    report.present.append(e.key)
                    continue
                if _valid(target):  # never replace a good entry by a different one
                    report.skipped.append(f"{e.name[8:]}: a different valid entry is already stored; kept it")
                    continue
            store.write_sidecar(e.key, {**e.about, "file": target.name, **({"origin": origin} if origin else {})})
            write_atomically(target, lambda tmp, data=data: Path(tmp).write_bytes(data))
        report.added.append(e.key)
    return report
