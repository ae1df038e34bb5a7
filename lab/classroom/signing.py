"""Pack signatures: a pack says which course made it, so its results are trusted only where that course runs.

Why: a pack's manifest lists each member's sha256, but whoever edits a result can recompute that too (and the
entry's own seal, lab/runtime/sealed.py): the manifest certified itself, and an edited 0.999 was imported and served.
Now `export` adds `signature.json`, an HMAC-SHA256 of the manifest's exact bytes under the course's pack key, and
import checks it before anything else:
- the pack key is `derive(secret, "pack")` of the course's secret (lab/runtime/secret.py: the 0600 file
  LAYERLAB_SECRET_FILE, else `workshop.secret` in the store's folder), which the lecturer holds and the course's
  servers share. A lecturer who warms on another machine points LAYERLAB_SECRET_FILE there at a copy of it;
- the key itself is never written: the pack holds the MAC and a key id (an HMAC of the key, not the key), which
  lets the refusal say "signed by another course" rather than "altered";
- an importing store without a secret file has no key: nothing is made there, and the pack counts as another
  course's.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Optional

from lab.runtime import secret
from lab.runtime.store import Store, use_store

# Plumbing: cannot change a number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

SIGNATURE = "signature.json"
FORMAT, ALG = "layerlab-pack-signature", "hmac-sha256"
MAX_SIGNATURE = 4096
_CONTEXT = b"layerlab pack manifest\n"


def _secret_file(store: Store) -> Path:
    with use_store(store):
        return secret.path()


def course_key(store: Store) -> Optional[bytes]:
    """The pack key of the course whose secret `store` uses; None when there is no secret file (an import makes
    none)."""
    where = _secret_file(store)
    return own_key(store) if where.exists() else None


def own_key(store: Store) -> bytes:
    """The pack key of the course whose secret `store` uses, the secret made when missing (an export)."""
    return secret.derive(secret.master(_secret_file(store)), "pack")


def key_id(key: bytes) -> str:
    """An id of a pack key that gives nothing of it away."""
    return hmac.new(key, b"layerlab pack key id", hashlib.sha256).hexdigest()[:16]


def _mac(key: bytes, manifest: bytes) -> str:
    return hmac.new(key, _CONTEXT + manifest, hashlib.sha256).hexdigest()


def sign(key: bytes, manifest: bytes) -> bytes:
    """The signature member for a manifest's exact bytes."""
    return json.dumps({"format": FORMAT, "alg": ALG, "key_id": key_id(key), "mac": _mac(key, manifest)},
                      indent=1).encode()


def verdict(key: Optional[bytes], manifest: bytes, signature: Optional[bytes]) -> Optional[str]:
    """None when `signature` is this course's over `manifest`; else why not, as a reason of lab/runtime/sealed.py's
    WHY ("unsigned", "another-key", "bad-signature")."""
    if signature is None:
        return "unsigned"
    try:
        sig = json.loads(signature.decode("utf-8"))
        assert isinstance(sig, dict) and sig.get("format") == FORMAT and sig.get("alg") == ALG
        mac, kid = sig["mac"], sig["key_id"]
        assert isinstance(mac, str) and isinstance(kid, str)
    except Exception:  # noqa: BLE001 - a signature that cannot be read signs nothing
        return "bad-signature"
    if key is None or not hmac.compare_digest(kid, key_id(key)):
        return "another-key"
    return None if hmac.compare_digest(mac, _mac(key, manifest)) else "bad-signature"


def refusal(name: str, why: str) -> str:
    """The one line an import without `--unsigned-ok` stops with."""
    words = {"unsigned": "is not signed",
             "another-key": "is signed by another course (another secret: see LAYERLAB_SECRET_FILE)",
             "bad-signature": "has a signature that does not match its contents (altered after signing)"}[why]
    return (f"{name} {words}, so its results are not this course's own; import it with --unsigned-ok to take them "
            "anyway, marked on every page as from elsewhere")
