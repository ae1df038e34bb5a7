"""Why a setup.py beside pyproject.toml: the wheel places the checkout's top-level folders (lab/, app/, pages/) and the
Streamlit settings (.streamlit/config.toml) inside one package, `layerlab`, so that installing the lab never
overwrites another distribution's `lab`, `app` or `pages`; `import layerlab` puts that folder on sys.path
(layerlab/__init__.py). Everything else (name, version, dependencies, the `layerlab` script) is in pyproject.toml."""

from setuptools import find_packages, setup

INNER = [*find_packages(include=["lab", "lab.*", "app", "app.*"]), "pages"]

setup(
    packages=["layerlab", "layerlab.streamlit_config", *(f"layerlab.{p}" for p in INNER)],
    package_dir={"layerlab": "layerlab", "layerlab.streamlit_config": ".streamlit",
                 **{f"layerlab.{p}": p.replace(".", "/") for p in INNER}},
    package_data={"layerlab.streamlit_config": ["config.toml"], "layerlab.app": ["hall/*"]},
)
