"""Why a setup.py beside pyproject.toml: the wheel places the checkout's top-level folders (lab/, app/, pages/) and the
Streamlit settings (.streamlit/config.toml) inside one package, `layerlab`, so that installing the lab never
overwrites another distribution's `lab`, `app` or `pages`; `import layerlab` puts that folder on sys.path
(layerlab/__init__.py). The CLI's JSON schema (docs/cli-output.schema.json, which `--help` names) goes in as
`layerlab/docs/`, where lab/cli/common.py `schema_path` finds it. Everything else (name, version, dependencies, the
`layerlab` script) is in pyproject.toml; MANIFEST.in lists what the sdist carries besides the packages.

At build time the version and git commit are written into the package (lab/runtime/build_info.json, read by
lab/runtime/version.py): an installed wheel has no .git to ask, and pip records no commit for a wheel or an sdist.
An sdist carries the file it was made with, so a wheel built from it (no .git there) still names the commit."""

from __future__ import annotations

import importlib.util
import json
import tomllib
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
BUILD_INFO = Path("lab", "runtime", "build_info.json")  # lab/runtime/version.py BUILD_INFO, relative to the checkout
INNER = [*find_packages(include=["lab", "lab.*", "app", "app.*"]), "pages"]


def _git_head() -> str | None:
    """The checkout's HEAD, read by the lab's own reader (lab/runtime/version.py, stdlib only), loaded from its file so
    that building imports no lab package; None in an unpacked sdist (no .git here: a repository above is not asked)."""
    spec = importlib.util.spec_from_file_location("_layerlab_version", HERE / "lab" / "runtime" / "version.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module._git_head(HERE)


def build_info() -> dict[str, str]:
    """The version (pyproject.toml's) and the commit: this checkout's HEAD, else what the sdist being built carries."""
    info = {"version": str(tomllib.loads((HERE / "pyproject.toml").read_text())["project"]["version"])}
    commit = _git_head()
    if commit is None:
        try:
            commit = json.loads((HERE / BUILD_INFO).read_text()).get("commit")
        except (OSError, ValueError, AttributeError):
            commit = None
    if commit:
        info["commit"] = str(commit)
    return info


def _write(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)  # an sdist's release tree hard-links the sources: never write through to them
    path.write_text(json.dumps(build_info()) + "\n")


class BuildPy(build_py):
    """The packages, plus the build info inside the installed `lab` (layerlab/lab/runtime/build_info.json)."""

    def run(self) -> None:
        super().run()
        if not self.dry_run:
            _write(Path(self.build_lib, "layerlab", BUILD_INFO))


class Sdist(sdist):
    """The source tree, plus the build info, so a wheel built from it without git still names the commit."""

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        if not self.dry_run:
            _write(Path(base_dir, BUILD_INFO))


setup(
    packages=["layerlab", "layerlab.streamlit_config", "layerlab.docs", *(f"layerlab.{p}" for p in INNER)],
    package_dir={"layerlab": "layerlab", "layerlab.streamlit_config": ".streamlit", "layerlab.docs": "docs",
                 **{f"layerlab.{p}": p.replace(".", "/") for p in INNER}},
    package_data={"layerlab.streamlit_config": ["config.toml"], "layerlab.app": ["hall/*"],
                  "layerlab.docs": ["cli-output.schema.json"]},
    # Only what package_data names: include_package_data would also copy whatever MANIFEST.in lists inside docs/.
    include_package_data=False,
    cmdclass={"build_py": BuildPy, "sdist": Sdist},
)
