"""Workshop mode in a real browser (by hand, against a running server): the lecturer starts a class (the server
hands out its code and key) and opens voting; the Delete page's question hides the results until a prediction and
Reveal; the lecturer's presentation view in a second browser counts it, then reveals the answer to the room.

    python bench/workshop_browser.py http://127.0.0.1:8607 artifacts/

Screenshots: desktop 1440x900 (student), projector 1280x720 (lecturer), phone 390x844 (student)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from playwright.sync_api import Page, sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lab.classroom import questions, workshop_db  # noqa: E402
from tests.browser import CHROMIUM_ARGS  # noqa: E402


def wait_text(page: Page, text: str, timeout: float = 600) -> None:
    """The lecturer's view never idles (its tally polls): wait for a text and for no progress bar instead."""
    page.get_by_text(text).first.wait_for(timeout=timeout * 1000)
    deadline = time.time() + timeout
    while time.time() < deadline and page.locator("[data-testid='stProgress']").count() > 0:
        time.sleep(0.5)
    time.sleep(2)


def metrics(page: Page) -> int:
    return page.locator("[data-testid='stMetric']").count()


def main(url: str, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    q = next(x for x in questions.of("delete") if x.preset == "")  # the default view's question
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        lecturer = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
        lecturer.goto(f"{url}/delete?present=1", timeout=180_000)
        wait_text(lecturer, "Start a class")
        lecturer.get_by_role("button", name="Start a class").click()  # a new class each run: its code and key
        wait_text(lecturer, "Voting is not open yet")
        code = parse_qs(urlparse(lecturer.url).query)["class"][0]
        lecturer.get_by_text("Your lecturer key", exact=False).first.click()
        key = lecturer.locator(".st-key-layerlab_key_copy code").first.inner_text().strip()
        assert "key=" not in lecturer.url, "the lecturer's address holds the key"
        lecturer.get_by_role("button", name="I have kept it: hide the key").click()
        lecturer.get_by_role("button", name="Open voting").click()
        wait_text(lecturer, f"Class {code}: 0 predictions")
        assert metrics(lecturer) == 0, "the lecturer's view shows results before the reveal"
        lecturer.screenshot(path=out / "workshop-projector-before.png")

        student = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
        student.goto(f"{url}/delete?workshop=1&class={code}", timeout=180_000)
        wait_text(student, "Predict first")
        student.get_by_text("Predict first").wait_for(timeout=30_000)
        n = metrics(student)
        print("student metrics before reveal:", n)
        assert n == 0, "results shown before the prediction"
        student.screenshot(path=out / "workshop-desktop-question.png")
        student.get_by_text(q.texts[0]).click()
        student.get_by_role("button", name="Reveal").click()
        wait_text(student, "Original (held-out)")
        n = metrics(student)
        print("student metrics after reveal:", n)
        assert n > 0, "no results after Reveal"
        student.screenshot(path=out / "workshop-desktop-revealed.png", full_page=False)
        student.locator(".st-key-layerlab_question").scroll_into_view_if_needed()
        student.screenshot(path=out / "workshop-desktop-verdict.png")

        deadline = time.time() + 30
        while time.time() < deadline and lecturer.get_by_text(f"Class {code}: 1 prediction").count() == 0:
            time.sleep(0.5)  # the count is a fragment that polls every 2 s
        assert lecturer.get_by_text(f"Class {code}: 1 prediction").count() == 1, "the lecturer does not see it"
        print("lecturer sees: 1 prediction")
        lecturer.screenshot(path=out / "workshop-projector-tally.png")
        lecturer.get_by_role("button", name="Reveal to the room").click()
        wait_text(lecturer, "Original (held-out)")
        lecturer.screenshot(path=out / "workshop-projector-revealed.png")

        phone = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True,
                                    device_scale_factor=2).new_page()
        phone.goto(f"{url}/delete?workshop=1&class={code}", timeout=180_000)
        wait_text(phone, "Predict first")
        assert metrics(phone) == 0
        phone.screenshot(path=out / "workshop-phone-question.png")
        phone.get_by_text(q.texts[1]).click()
        phone.get_by_role("button", name="Reveal").click()
        wait_text(phone, "Original (held-out)")  # after the room's reveal: shown, and said not counted
        phone.screenshot(path=out / "workshop-phone-revealed.png")
        tally = workshop_db.Workshop().tally(code, q.key, len(q.options), key)
        print("database tally:", tally.counts)
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
