"""Sealed store entries: every file the store writes for an entry carries a hash of its own content, bound to the
entry's key, and every read checks it before anything is parsed into a result.

Why: an entry is named by what it depends on, so nothing else says whether its bytes are what the lab wrote. A valid
model file with 64 weights overwritten was served silently (the page's accuracy fell from 0.842 to 0.049). The hash
is in the same file as what it covers, so one atomic rename writes both:
- a JSON result is `{"sha256":"<64 hex>","entry":<payload>}`, the hash over the payload's exact bytes, and the
  payload `{"value": ...}` (with `"origin"` for an entry from elsewhere, below). The head has a fixed length, so a
  read slices it off and hashes the rest; nothing is parsed twice;
- a model (safetensors) keeps `lab_meta` in its header's metadata and adds `lab_digest`: the hash over the header
  as canonical JSON (tensor names, dtypes, shapes, offsets, metadata; the digest itself left out) and the data.
The key is hashed in, so a valid entry copied under another entry's name does not pass either. An unkeyed hash
detects damage and edits; it cannot stop someone who may write the store and knows this format (the store's
folder permissions do), and a pack from elsewhere is checked by its signature instead (lab/classroom/signing.py).

An entry written before sealing (no hash) reads as `Unsealed`, which the store treats as missing: it is rebuilt.
Such a file cannot be told from an edited one, so none is trusted.

Origin: an entry imported from a pack this course did not sign carries `origin` inside what its hash covers, so
the mark cannot fall off on the way; a result computed from such an entry inherits it (lab/runtime/store.py), and
every read of either says so on the page (`origin_words`).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Optional

import torch

# Plumbing: cannot change a number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

JSON_HEAD = b'{"sha256":"'
JSON_MID = b'","entry":'
_HEX = 64
_BODY = len(JSON_HEAD) + _HEX + len(JSON_MID)  # where a sealed JSON entry's payload starts
DIGEST = "lab_digest"
META = "lab_meta"
ORIGIN = "lab_origin"
# Why an entry is marked as from elsewhere; the page's words for each. Only these and a hex id reach a page: text
# from a pack is never shown (it could be markup).
WHY = {"unsigned": "an unsigned pack", "another-key": "a pack signed by another course",
       "bad-signature": "a pack whose signature does not match its contents"}
_PACK_ID = re.compile(r"[0-9a-f]{12}")

Origin = dict[str, Any]


class Damaged(ValueError):
    """An entry whose bytes do not match its hash, or that does not parse: never served."""


class Unsealed(Damaged):
    """An entry without a hash (written before sealing, or by something else): treated as missing."""


def _digest(key: str, *parts: bytes | memoryview) -> str:
    # sha256, not blake2b: with the CPU's SHA instructions (OpenSSL) it hashes a 7 MB model in 6 ms, blake2b in 13.
    h = hashlib.sha256(b"layerlab entry\n" + key.encode() + b"\n")
    for p in parts:
        h.update(p)
    return h.hexdigest()


def origin_of(raw: Any) -> Optional[Origin]:
    """The origin mark as stored, reduced to what this lab wrote (a known reason, a hex pack id, derived or not);
    None for none."""
    if not raw:
        return None
    raw = raw if isinstance(raw, dict) else {}
    why = raw.get("why") if raw.get("why") in WHY else "unsigned"
    pack = raw.get("pack") if isinstance(raw.get("pack"), str) and _PACK_ID.fullmatch(raw["pack"]) else "?" * 12
    return {"why": why, "pack": pack, "derived": raw.get("derived") is True}


def derived(origins: list[Origin]) -> Optional[Origin]:
    """The mark of a result computed from entries with these marks (None when none has one)."""
    return None if not origins else {**origins[0], "derived": True}


def origin_words(origin: Origin) -> str:
    """What a page says beside a result with this mark (plain words and a hex id only)."""
    how = "was computed from entries imported from" if origin["derived"] else "was imported from"
    return (f"This result {how} {WHY[origin['why']]} (pack {origin['pack']}), not computed by this lab: its numbers "
            "may not be what the lab's code gives.")


# -- JSON results -------------------------------------------------------------------------------------------------
def seal_json(key: str, value_json: str, origin: Optional[Origin] = None) -> bytes:
    """The file of a JSON entry whose value is the JSON text `value_json`."""
    head = '{"origin":' + json.dumps(origin, sort_keys=True) + ',"value":' if origin else '{"value":'
    payload = (head + value_json + "}").encode()
    return JSON_HEAD + _digest(key, payload).encode() + JSON_MID + payload + b"}"


def open_json(key: str, data: bytes) -> tuple[Any, Optional[Origin]]:
    """(value, origin) of a sealed JSON entry's bytes; Unsealed or Damaged when they are not one, or not intact."""
    if not data.startswith(JSON_HEAD):
        raise Unsealed("no checksum")
    if len(data) < _BODY + 1 or data[_BODY - len(JSON_MID):_BODY] != JSON_MID or not data.endswith(b"}"):
        raise Damaged("not a sealed entry")
    payload = data[_BODY:-1]
    if data[len(JSON_HEAD):_BODY - len(JSON_MID)] != _digest(key, payload).encode():
        raise Damaged("its content does not match its checksum")
    body = json.loads(payload)
    if not isinstance(body, dict) or "value" not in body:
        raise Damaged("not a sealed entry")
    return body["value"], origin_of(body.get("origin"))


# -- models (safetensors) -----------------------------------------------------------------------------------------
def _split(data: bytes) -> tuple[dict[str, Any], memoryview]:
    """A safetensors file's header and its data section."""
    if len(data) < 8:
        raise Damaged("too short")
    n = int.from_bytes(data[:8], "little")
    if n > len(data) - 8:
        raise Damaged("header longer than the file")
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except ValueError:
        raise Damaged("header is not JSON") from None
    if not isinstance(header, dict):
        raise Damaged("header is not a table")
    return header, memoryview(data)[8 + n:]


def _tensor_digest(key: str, header: dict[str, Any], data: memoryview) -> str:
    canonical = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    return _digest(key, canonical, b"\n", data)


def seal_tensors(key: str, tensors: dict[str, torch.Tensor], meta: Any, origin: Optional[Origin] = None) -> bytes:
    """The safetensors file of a model entry: its tensors, `meta` as `lab_meta` JSON, and the seal."""
    from safetensors.torch import save

    tensors = {k: v.contiguous() for k, v in tensors.items()}
    metadata = {META: json.dumps(meta)}
    if origin:
        metadata[ORIGIN] = json.dumps(origin, sort_keys=True)
    header, data = _split(save(tensors, metadata=metadata))
    # Saved again with the digest: the data section and every offset are the same (they do not depend on the
    # metadata), and the digest covers the header without itself.
    sealed = save(tensors, metadata={**metadata, DIGEST: _tensor_digest(key, header, data)})
    check_tensors(key, sealed)
    return sealed


def check_tensors(key: str, data: bytes) -> tuple[Any, Optional[Origin]]:
    """(meta, origin) of a sealed model file's bytes, the weights checked but not loaded; Unsealed or Damaged."""
    header, body = _split(data)
    metadata = header.get("__metadata__")
    if not isinstance(metadata, dict) or not isinstance(metadata.get(META), str):
        raise Damaged("no lab metadata")
    digest = metadata.pop(DIGEST, None)
    if digest is None:
        raise Unsealed("no checksum")
    if digest != _tensor_digest(key, header, body):
        raise Damaged("its content does not match its checksum")
    try:
        return json.loads(metadata[META]), origin_of(json.loads(metadata.get(ORIGIN) or "null"))
    except ValueError:
        raise Damaged("lab metadata is not JSON") from None


def open_tensors(key: str, data: bytes) -> tuple[dict[str, torch.Tensor], Any, Optional[Origin]]:
    """(tensors, meta, origin) of a sealed model file's bytes; Unsealed or Damaged (never unpickled)."""
    from safetensors.torch import load

    meta, origin = check_tensors(key, data)
    return load(data), meta, origin


# -- either -------------------------------------------------------------------------------------------------------
def check(key: str, suffix: str, data: bytes) -> Optional[Origin]:
    """The origin of an entry file's bytes (`suffix` .json or .safetensors) once its seal is checked."""
    if suffix == ".json":
        return open_json(key, data)[1]
    return open_tensors(key, data)[2]  # loaded: every offset and dtype is checked too


def marked(key: str, suffix: str, data: bytes, origin: Origin) -> bytes:
    """The entry's bytes sealed again with `origin` (an entry already marked keeps its mark)."""
    if suffix == ".json":
        value, had = open_json(key, data)
        return data if had else seal_json(key, json.dumps(value), origin)
    tensors, meta, had = open_tensors(key, data)
    return data if had else seal_tensors(key, tensors, meta, origin)
