"""Which Layer Lab this is, and which libraries compute with it.

`version()` is the distribution's version: pyproject.toml's, its one source (read in a checkout; copied into
BUILD_INFO when a wheel or sdist is built, setup.py). `commit()` the git commit the code came from: a checkout's HEAD,
else the commit setup.py recorded in BUILD_INFO at build time, else the one pip recorded when it installed the lab
from git (`pip install git+URL@COMMIT` writes it into the distribution's `direct_url.json`), else None.
`libraries()` names the versions of the libraries whose arithmetic a stored result rests on; the store's sidecars,
packs and the Reproduce notebook record them, so a number read later says what computed it.
"""

from __future__ import annotations

import json
import platform
import re
import subprocess
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Optional

# Plumbing: naming versions cannot change a number (lab/runtime/codeversion.py).
CODE_VERSION_NEUTRAL = True

DISTRIBUTION = "layer-lab"
ROOT = Path(__file__).resolve().parents[2]  # the checkout (or site-packages, when installed)
# The libraries a stored number depends on (their import names differ from their distributions' for two).
COMPUTING = ("torch", "numpy", "scikit-learn", "scipy", "umap-learn", "safetensors", "mnist1d")
# {"version", "commit"}: written by setup.py into the built package (never into the checkout), because a wheel has no
# .git to ask and pip records no commit when it installs a wheel file or an sdist.
BUILD_INFO = Path(__file__).with_name("build_info.json")
COMMIT = re.compile(r"[0-9a-f]{40}")


@lru_cache(maxsize=1)
def built() -> dict[str, str]:
    """What setup.py recorded when this copy of the lab was built ({} in a checkout)."""
    try:
        info = json.loads(BUILD_INFO.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): v for k, v in info.items() if isinstance(v, str)} if isinstance(info, dict) else {}


def _checkout_version() -> Optional[str]:
    try:
        import tomllib

        project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    except (OSError, KeyError, ValueError):
        return None
    return str(project["version"]) if project.get("name") == DISTRIBUTION and "version" in project else None


@lru_cache(maxsize=1)
def version() -> str:
    """The lab's version: pyproject.toml's in a checkout (an older copy installed beside it must not speak for it),
    else the one built into this copy, else the installed distribution's metadata."""
    found = _checkout_version() or built().get("version")
    if found:
        return found
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"


def _git_head(folder: Path) -> Optional[str]:
    if not (folder / ".git").exists():
        return None
    try:
        out = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    head = out.stdout.strip()
    return head if out.returncode == 0 and len(head) == 40 else None


def _installed_commit() -> Optional[str]:
    try:
        text = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    if not text:
        return None
    try:
        info = json.loads(text)
    except ValueError:
        return None
    commit = (info.get("vcs_info") or {}).get("commit_id")
    if commit:
        return str(commit)
    url = str(info.get("url", ""))  # `pip install .` from a checkout: that checkout's HEAD, if it is still there
    return _git_head(Path(url[len("file://"):])) if url.startswith("file://") else None


@lru_cache(maxsize=1)
def commit() -> Optional[str]:
    """The git commit of this code, or None when it cannot be known (a copied folder, a build without git)."""
    recorded = built().get("commit", "")
    return _git_head(ROOT) or (recorded if COMMIT.fullmatch(recorded) else None) or _installed_commit()


def _git_remote(folder: Path) -> Optional[str]:
    if not (folder / ".git").exists():
        return None
    try:
        out = subprocess.run(["git", "-C", str(folder), "remote", "get-url", "origin"], capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    url = out.stdout.strip()
    return url if out.returncode == 0 and url else None


def shareable(url: str) -> bool:
    """Whether a git URL names a server others can reach: a local path or file:// URL would tell a student where the
    server keeps its files, and clone nothing on the student's machine."""
    remote = url.startswith(("https://", "http://", "ssh://", "git://"))
    return remote or re.match(r"^[\w.-]+@[\w.-]+:", url) is not None  # scp-like: git@host:path


def source_url() -> Optional[str]:
    """Where this code can be fetched with git: LAYERLAB_SOURCE_URL (as given), else the URL pip installed it from,
    else the checkout's `origin`, each only when `shareable`; None when unknown (the Reproduce notebook then asks for
    a checkout)."""
    from lab.runtime import settings

    url = settings.get("LAYERLAB_SOURCE_URL")
    if url:
        return str(url)
    try:
        text = metadata.distribution(DISTRIBUTION).read_text("direct_url.json") or ""
        info = json.loads(text) if text else {}
    except (metadata.PackageNotFoundError, ValueError):
        info = {}
    if info.get("vcs_info") and info.get("url") and shareable(str(info["url"])):
        return str(info["url"])
    remote = _git_remote(ROOT)
    return remote if remote and shareable(remote) else None


def pip_requirement() -> Optional[str]:
    """`layer-lab @ git+URL@COMMIT`, the exact code of this lab for pip; None when the URL or commit is unknown."""
    url, c = source_url(), commit()
    if not url or not c:
        return None
    return f"{DISTRIBUTION} @ git+{url.removeprefix('git+')}@{c}"


def version_line() -> str:
    """`layer-lab 0.2.0 (commit abc123...)`, as `layerlab --version` prints it."""
    c = commit()
    return f"{DISTRIBUTION} {version()} ({'commit ' + c if c else 'commit unknown'})"


@lru_cache(maxsize=1)
def libraries() -> dict[str, str]:
    """Versions of Python, the lab and the libraries its numbers are computed with (missing ones left out)."""
    out = {"python": platform.python_version(), DISTRIBUTION: version()}
    for name in COMPUTING:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out
