"""A class in a real browser (Debian's Chromium against the session's real server): the lecturer's link carries
the class's key; the Student link shows the prediction radio and no lecturer tools; the lecturer's view without the
key is a student's; a reload is the same voter (no second vote). Screenshots in artifacts/workshop/."""

import os
import time
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlparse

import pytest

from lab.classroom import questions, workshop_db

from .browser import chromium_path, settle, wait_idle

pytestmark = pytest.mark.browser

if chromium_path() is None:
    if os.environ.get("CI"):
        raise RuntimeError("CI needs Debian's chromium for the browser test (.ci/run installs it)")
    pytest.skip("chromium is not installed (apt-get install chromium)", allow_module_level=True)

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "workshop"
Q = next(x for x in questions.of("delete") if x.preset == "")


def _key(url: str) -> str:
    return parse_qs(urlparse(url).query)["key"][0]


def test_lecturer_key_student_link_and_one_vote_per_browser(lab_url, chromium):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    code = f"BRW-{int(time.time()) % 1_000_000}"
    lecturer = chromium.new_context(viewport={"width": 1280, "height": 720}).new_page()
    lecturer.goto(f"{lab_url}/delete?present=1&class={code}", timeout=180_000)
    settle(lecturer, f"Class {code}: 0 predictions")
    key = _key(lecturer.url)  # opening the class put its key into the lecturer's link
    assert workshop_db.Workshop().is_lecturer(code, key)
    assert lecturer.get_by_role("button", name="Reset this question").count() == 1
    lecturer.screenshot(path=str(ARTIFACTS / "lecturer.png"))
    href = lecturer.locator("a", has_text="Student link").first.get_attribute("href")
    student_url = urljoin(lecturer.url, href)
    assert "key=" not in student_url and "present=" not in student_url and f"class={code}" in student_url

    student_ctx = chromium.new_context(viewport={"width": 1280, "height": 900})  # a browser of its own (cookies)
    student = student_ctx.new_page()
    student.goto(student_url, timeout=180_000)
    settle(student, "Your prediction")
    assert student.get_by_role("button", name="Reset this question").count() == 0
    assert student.get_by_text("predictions", exact=False).filter(has_text=f"Class {code}:").count() == 0
    assert student.locator("[data-testid='stMetric']").count() == 0  # results behind the question
    student.screenshot(path=str(ARTIFACTS / "student.png"))
    student.get_by_text(Q.texts[0]).click()
    student.get_by_role("button", name="Reveal", exact=True).click()
    settle(student, "Original (held-out)")
    assert student.get_by_text("not counted", exact=False).count() == 0
    assert workshop_db.Workshop().tally(code, Q.key, len(Q.options), key).counts[0] == 1

    student.reload()  # the same browser again: the same voter, whose earlier prediction is selected
    settle(student, "Your prediction")
    student.get_by_text(Q.texts[1]).click()
    student.get_by_role("button", name="Reveal", exact=True).click()
    settle(student, "Original (held-out)")
    tally = workshop_db.Workshop().tally(code, Q.key, len(Q.options), key)
    assert tally.total == 1 and tally.counts[1] == 1, tally  # replaced, not a second vote

    deadline = time.time() + 30
    while time.time() < deadline and lecturer.get_by_text(f"Class {code}: 1 prediction").count() == 0:
        time.sleep(0.5)  # the tally is a fragment that polls every 2 s
    assert lecturer.get_by_text(f"Class {code}: 1 prediction").count() == 1
    lecturer.screenshot(path=str(ARTIFACTS / "lecturer-tally.png"))

    intruder = chromium.new_context(viewport={"width": 1280, "height": 720}).new_page()  # guesses the code
    for link in (f"/delete?present=1&class={code}", f"/delete?present=1&class={code}&key=not-the-key-123"):
        intruder.goto(f"{lab_url}{link}", timeout=180_000)
        settle(intruder, "Your prediction")
        wait_idle(intruder)
        assert intruder.get_by_role("button", name="Reset this question").count() == 0
        assert intruder.get_by_role("button", name="Reveal to the room").count() == 0
        assert intruder.get_by_text(f"Class {code}: 1 prediction").count() == 0
        assert intruder.get_by_text("only its lecturer's link", exact=False).count() == 1
    intruder.screenshot(path=str(ARTIFACTS / "no-key.png"))
    assert workshop_db.Workshop().tally(code, Q.key, len(Q.options), key).total == 1  # nothing reset
    student_ctx.close()
