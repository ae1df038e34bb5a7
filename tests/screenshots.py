"""The README's screenshots, from a warmed store in the real recipe: `make screenshots` (after `python -m lab warm
--defaults-only`), never quick mode, so the numbers they show are the ones the pages report.

Each experiment page (lab/catalog) is opened in its default view in headless Chromium (Debian's, as the browser
tests use it) at a projector's 1280x720, and once its first chart has drawn marks the window is saved as
`docs/screenshots/NAME.png`; the Delete page also dark, as `delete-dark.png`. The browser tests write their own
pictures elsewhere (artifacts/screenshots/): theirs are quick-mode smoke numbers.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "screenshots"
PROJECTOR = {"width": 1280, "height": 720}


def check_ready(pages: Sequence[str]) -> list[str]:
    """The default views of `pages` the store lacks (in the real recipe), as 'page: setting: result' lines."""
    from lab.classroom import warm

    return [f"{i.page}: {i.setting}: {i.need.label}" for i in warm.missing(warm.plan(pages, defaults_only=True))]


def shoot(chromium: Any, url: str, path: Path, scheme: str = "light") -> None:
    """Open `url` at 1280x720 in `scheme`, wait until the script is idle and its first chart has marks, save the
    window to `path`; AssertionError for a page that shows an error or draws axes without marks."""
    from tests.browser import wait_idle
    from tests.chart_marks import chart_marks, empty_subplots

    page = chromium.new_page(viewport=PROJECTOR, color_scheme=scheme)
    try:
        page.goto(url, timeout=180_000)
        wait_idle(page, timeout=600)
        errors = [e.inner_text()[:300] for e in page.locator("[data-testid='stException']").all()]
        assert not errors, (url, errors)
        chart = page.locator(".js-plotly-plot").first
        chart.scroll_into_view_if_needed(timeout=120_000)
        for _ in range(20):  # Plotly may still be laying out a chart that has just scrolled in
            if not empty_subplots(chart_marks(chart), chart.screenshot(timeout=120_000)):
                break
            page.wait_for_timeout(500)
        else:
            raise AssertionError(f"{url}: the first chart has axes and no marks")
        page.evaluate("() => window.scrollTo(0, 0)")
        page.wait_for_timeout(300)
        path.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(path))
    finally:
        page.close()


def main(argv: Optional[Sequence[str]] = None) -> int:
    from lab.catalog import descriptors

    names = list(descriptors())
    p = argparse.ArgumentParser(prog="python -m tests.screenshots", description=__doc__.split("\n\n")[0])
    p.add_argument("--pages", nargs="+", choices=names, default=names, help="pages to photograph (default: all)")
    p.add_argument("--out", type=Path, default=OUT, help="folder to write (default docs/screenshots)")
    args = p.parse_args(argv)
    if os.environ.get("LAYERLAB_QUICK", "") not in ("", "0"):
        print("screenshots: quick mode is on (LAYERLAB_QUICK): the README shows the real recipe's numbers only; "
              "unset it", file=sys.stderr)
        return 2
    lacking = check_ready(args.pages)
    if lacking:
        print(f"screenshots: the store lacks {len(lacking)} default view(s), e.g. {lacking[0]}; run "
              "`python -m lab warm --defaults-only` first (the pictures must not wait on training)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    from lab.runtime.store import active_store
    from tests.browser import CHROMIUM_ARGS, chromium_path, lab_server

    with lab_server(str(active_store().root), env={"LAYERLAB_QUICK": "0"}, log_name="screenshots.log") as url, \
            sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            for name in args.pages:
                shoot(chromium, f"{url}/{name}", args.out / f"{name}.png")
                print(f"{name}: {args.out / f'{name}.png'}")
            if "delete" in args.pages:
                shoot(chromium, f"{url}/delete", args.out / "delete-dark.png", "dark")
                print(f"delete (dark): {args.out / 'delete-dark.png'}")
        finally:
            chromium.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
