"""The lab's server as `make app` starts it: `python -m app.serve [Streamlit's options]` runs app/main.py in Streamlit,
with the lab's own routes (app/layerlab_asgi.py) and the compute engine started as the process starts.

Why not plain `streamlit run app/main.py`: Streamlit runs none of the app's code until a browser opens a page, so the
local Dask cluster (a scheduler and one worker process per core, each importing torch and the experiments) would
start only then, beside that page's own first run, and a newcomer's first job would wait for it (measured: workers
ready 12.6 s after the first visit on an idle 2-core machine, 4.8 s when started alone). Here a background thread
makes the process's one engine (lab/runtime/engine: `engine()`) while Streamlit boots; the pages find it running.
"""

from __future__ import annotations

import logging
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
log = logging.getLogger("layerlab.serve")


def start_engine() -> None:
    """Make the process's engine, its workers importing every experiment (a local cluster comes up in the
    background). A misconfigured engine is left alone: every page that needs it says what to fix."""
    try:
        from lab.catalog import config_modules
        from lab.runtime import engine as engines

        engines.engine(preload=config_modules())
    except ValueError:
        pass
    except Exception:  # noqa: BLE001 - the pages still start the engine on their first run and report its failure
        log.warning("the compute engine could not be started at boot; the first page will try again", exc_info=True)


def start_retention() -> None:
    """Delete what the lab keeps past its time (old classes, unused uploads) on a timer in this process, from boot,
    whether or not a page is ever opened (lab/classroom/retention.py; the page shell starts the same one)."""
    try:
        from lab.classroom import retention

        retention.start()
    except Exception:  # noqa: BLE001 - the page shell tries again at the first page
        log.warning("the retention timer could not be started at boot; the first page will try again", exc_info=True)


def config_file() -> Path | None:
    """The lab's Streamlit settings: `.streamlit/config.toml` in a checkout, its copy inside the installed package."""
    for path in (ROOT / ".streamlit" / "config.toml", ROOT / "streamlit_config" / "config.toml"):
        if path.is_file():
            return path
    return None


def config_flags() -> list[str]:
    """The settings file as Streamlit's command-line flags (`--server.headless true ...`). Streamlit reads
    `.streamlit/config.toml` only from the folder it is started in; `layerlab app` may start anywhere, and flags the
    caller adds after these override them."""
    import tomllib

    path = config_file()
    if path is None:
        return []
    flags = []

    def add(prefix: str, values: dict) -> None:
        for key, value in values.items():
            if isinstance(value, dict):  # a nested table ([theme.dark]): its keys are `--theme.dark.KEY`
                add(f"{prefix}.{key}", value)
                continue
            text = str(value).lower() if isinstance(value, bool) else str(value)
            flags.extend([f"--{prefix}.{key}", text])

    for section, values in tomllib.loads(path.read_text()).items():
        add(section, values)
    return flags


def main(argv: list[str] | None = None) -> None:
    """Start the engine in the background, then Streamlit on app/main.py with `argv` (default: this command's). A
    LAYERLAB_ setting that cannot be read ends it first, with status 2 and one line each on stderr."""
    args = sys.argv[1:] if argv is None else argv
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from lab.runtime import logs, settings

    bad = settings.errors()
    if bad:
        sys.stderr.write("".join(f"{line}\n" for line in bad))
        raise SystemExit(2)
    logs.configure()
    from app import clear_cache

    clear_cache.install()  # before any session: none may clear the server's shared caches (app/clear_cache.py)
    threading.Thread(target=start_engine, name="layerlab-engine-boot", daemon=True).start()
    start_retention()
    from streamlit.web import cli

    # app/layerlab_asgi.py is an st.App of app/main.py with the lab's own routes (the lecturer's HttpOnly cookie)
    sys.argv = ["streamlit", "run", str(ROOT / "app" / "layerlab_asgi.py"), *config_flags(), *args]
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    main()
