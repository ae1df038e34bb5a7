"""A lesson the room follows, in a real browser (Debian's Chromium against the session's real server, as `make app`
serves it): the lecturer starts a shipped lesson on Home (its code, the QR code of its join link, the first step);
two students join by code, one on a 390 px phone, and a third opens the join link on a dark-mode phone: the light
student view (app/hall_route.py); the lecturer's Next step moves all three to step 2's question with no action of
theirs (the time is measured and printed); all vote, the light view's student by keyboard; Reveal shows "N of 3
predicted what happened" with the verdict, on a 1280x720 screen, and the light view shows the answer, the room's
tally and the lecturer's figure; the report downloads with every step's tally and no key; a late joiner who scans
the QR code lands on the current step, one tap from the full experiment. Screenshots in artifacts/lesson/."""

import csv
import io
import os
import time
from pathlib import Path

import pytest

from lab.classroom import lessons, warm, workshop_db

from .browser import require_chromium, settle, wait_idle

pytestmark = pytest.mark.browser

require_chromium()

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "lesson"
LESSON = lessons.get("layers-equal")
Q1, Q2 = LESSON.steps[0].asked, LESSON.steps[1].asked
FOLLOW_WAIT_S = 60  # the students' pages follow the step with no action of theirs; how fast is printed, and measured
# in bench/ (bench_hall_light.py), never asserted here: a loaded machine makes a timing bound fail for time alone


def _warm_first_steps() -> None:
    """Steps 1 and 2 computed before class, as `python -m lab warm --lesson` does (here in this process, in quick
    mode, into the store the server shares): the time measured is the room following, not a first training."""
    os.environ["LAYERLAB_QUICK"] = "1"  # tests/conftest.py puts it back after the test
    for item in warm.lesson_plan(lessons.Lesson("first", "First steps", 12, LESSON.steps[:2])):
        item.need.fn(item.need.cfg)


def _qr_text(page, where: str) -> str:  # noqa: ANN001 - a Playwright page
    import zxingcpp
    from PIL import Image

    img = page.locator(f"{where} img").first
    img.scroll_into_view_if_needed()
    found = zxingcpp.read_barcodes(Image.open(io.BytesIO(img.screenshot())))
    assert len(found) == 1, found
    return found[0].text


def _asks(page, q) -> bool:  # noqa: ANN001 - a Playwright page, a question
    return page.get_by_text(q.prompt[:60], exact=False).count() > 0


def _join(chromium, url: str, code: str, phone: bool):  # noqa: ANN001 - Playwright's browser
    ctx = chromium.new_context(viewport={"width": 390, "height": 844} if phone else {"width": 1280, "height": 720},
                               is_mobile=phone)
    page = ctx.new_page()
    page.goto(url, timeout=180_000)
    settle(page, "Join a class")
    page.get_by_placeholder("e.g. K7M4QX").fill(code)
    page.get_by_role("button", name="Join").click()
    settle(page, "Your prediction")
    return page


def _inside(page, locator, width: int, height: int) -> bool:  # noqa: ANN001 - a Playwright page and locator
    box = locator.bounding_box()
    return box is not None and box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= width \
        and box["y"] + box["height"] <= height


def _download(page, name: str) -> str:  # noqa: ANN001 - a Playwright page
    # One click, no retry: a deferred download once arrived cancelled here while the lecturer's page reran (its
    # file dropped before the browser fetched it); the report is now made with the page (app/lesson.py).
    with page.expect_download(timeout=120_000) as got:
        page.get_by_role("button", name=name).click()
    path = got.value.path()
    text = Path(path).read_text()
    (ARTIFACTS / got.value.suggested_filename).write_text(text)
    return text


def _toggle(page, label: str, inside: str, state: str) -> None:  # noqa: ANN001 - a Playwright page
    """Click a fold's label until what it holds is `state`. Seen in CI under load: a click that lands while the
    page reruns is lost and the fold stays as it was; a fold that never opens or closes still fails."""
    for attempt in (1, 2, 3):
        page.get_by_text(label, exact=True).click()
        try:
            page.get_by_text(inside).first.wait_for(state=state, timeout=20_000)
            return
        except Exception:  # noqa: BLE001 - Playwright's TimeoutError
            if attempt == 3:
                raise
            wait_idle(page)
            if (page.get_by_text(inside).first.is_visible()) == (state == "visible"):
                return


def test_the_room_follows_the_lecturers_lesson_to_its_report(lab_url, chromium):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    _warm_first_steps()
    db = workshop_db.Workshop()
    lecturer = chromium.new_context(viewport={"width": 1280, "height": 720}).new_page()
    lecturer.goto(lab_url, timeout=180_000)
    settle(lecturer, "Start a lesson")
    lecturer.get_by_text("Build or import a lesson").click()
    lecturer.get_by_role("button", name="Save this lesson").scroll_into_view_if_needed()
    time.sleep(1.0)  # the expander's opening animation
    lecturer.screenshot(path=str(ARTIFACTS / "home-build-a-lesson.png"))
    lecturer.get_by_role("button", name="Start a lesson").click()
    settle(lecturer, "Present step 1")
    card = lecturer.locator("[class*='st-key-layerlab_lesson_card']").first
    code = card.locator("[class*='st-key-layerlab_class_code'] p").first.inner_text().strip()
    lecturer.get_by_text("Your lecturer key", exact=False).first.click()  # the folded copy box
    key = lecturer.locator(".st-key-layerlab_key_copy code").first.inner_text().strip()
    assert db.is_lecturer(code, key) and db.lesson(code).step == 0
    join = card.locator("a", has_text="_layerlab/hall").first.get_attribute("href")
    assert join == f"{lab_url}/_layerlab/hall?class={code}"  # the join link (the light view), shown as a link...
    assert _qr_text(lecturer, "[class*='st-key-layerlab_lesson_card']") == join  # ...is what the QR code says
    assert f"Step 1 of {len(LESSON.steps)}:" in card.inner_text() and LESSON.steps[0].aim in card.inner_text()
    lecturer.get_by_role("button", name="I have kept it: hide the key").click()
    wait_idle(lecturer)
    card.scroll_into_view_if_needed()
    lecturer.screenshot(path=str(ARTIFACTS / "home-lesson-started.png"))

    lecturer.get_by_text("Present step 1").click()
    settle(lecturer, "Voting is open")
    assert _asks(lecturer, Q1) and key not in lecturer.url and "key=" not in lecturer.url
    lecturer.mouse.move(0, 0)  # no tooltip over the screenshot
    lecturer.screenshot(path=str(ARTIFACTS / "lecturer-step1.png"))
    assert not lecturer.get_by_text("Student link").first.is_visible()  # a lesson's step sets the page: folded
    _toggle(lecturer, "Controls", "Student link", "visible")  # the page's presets and controls, shown
    wait_idle(lecturer)
    lecturer.screenshot(path=str(ARTIFACTS / "lecturer-controls.png"))
    _toggle(lecturer, "Controls", "Student link", "hidden")  # folded again

    phone = _join(chromium, lab_url, code, phone=True)
    laptop = _join(chromium, lab_url, code, phone=False)
    for student in (phone, laptop):
        assert _asks(student, Q1) and student.get_by_role("button", name="Next step").count() == 0
    phone.screenshot(path=str(ARTIFACTS / "student-phone-step1.png"))
    light = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True,
                                 color_scheme="dark").new_page()
    light.goto(join, timeout=60_000)  # scanned the QR code: the light view
    light.get_by_text(Q1.prompt).wait_for(timeout=60_000)
    assert light.get_by_text("step 1 of", exact=False).first.is_visible()
    assert light.get_by_role("button", name="Send my prediction").is_disabled()  # nothing picked yet
    light.screenshot(path=str(ARTIFACTS / "hall-phone-step1-dark.png"))

    lecturer.get_by_role("button", name="Next step").click()
    t0 = time.monotonic()
    took: dict[str, float] = {}
    while len(took) < 3 and time.monotonic() - t0 < FOLLOW_WAIT_S:
        for name, student in (("phone", phone), ("laptop", laptop), ("light", light)):
            if name not in took and _asks(student, Q2):
                took[name] = time.monotonic() - t0
        time.sleep(0.05)
    print(f"\n'Next step' to step 2's question on the students' pages: phone {took.get('phone', -1):.2f} s, "
          f"laptop {took.get('laptop', -1):.2f} s, light view {took.get('light', -1):.2f} s")
    assert set(took) == {"phone", "laptop", "light"}, took
    assert db.lesson(code).step == 1 and db.window(code, Q2.key) == "open" and db.window(code, Q1.key) == "closed"

    for student in (phone, laptop):  # both vote
        settle(student, "Your prediction")
        student.get_by_text(Q2.texts[0]).click()
        student.get_by_role("button", name="Reveal", exact=True).click()
        settle(student, "What happened")
        assert student.get_by_text("not counted", exact=False).count() == 0
    phone.screenshot(path=str(ARTIFACTS / "student-phone-voted.png"))
    light.get_by_text(Q2.texts[0], exact=True).click()  # the label picks its option
    send = light.get_by_role("button", name="Send my prediction")
    send.focus()
    light.keyboard.press("Enter")  # the keyboard sends it
    light.get_by_text("Your prediction is counted", exact=False).wait_for(timeout=30_000)
    assert send.is_hidden() and light.get_by_label(Q2.texts[1]).is_disabled()  # one vote, and it stands
    light.screenshot(path=str(ARTIFACTS / "hall-phone-voted-dark.png"))
    assert db.tally(code, Q2.key, len(Q2.options), key).total == 3

    lecturer.get_by_text("Class " + code + ": 3 predictions").first.wait_for(timeout=60_000)  # the live count
    lecturer.get_by_role("button", name="Reveal to the room").click()
    try:
        lecturer.get_by_text("of 3 predicted what happened").first.wait_for(timeout=120_000)
    finally:
        lecturer.screenshot(path=str(ARTIFACTS / "lecturer-after-reveal-click.png"))
    lecturer.mouse.move(0, 0)
    time.sleep(1.5)
    said = lecturer.locator(".st-key-layerlab_question").inner_text()
    assert "in this run" in said and "The claim" in said  # with the verdict
    assert LESSON.steps[1].aim in said
    lecturer.screenshot(path=str(ARTIFACTS / "lecturer-revealed.png"))
    for what in (lecturer.get_by_text("of 3 predicted what happened").first, lecturer.get_by_text("The claim").first,
                 lecturer.locator(".st-key-layerlab_question [data-testid='stPlotlyChart']").first,
                 lecturer.get_by_role("button", name="Next step"),
                 lecturer.get_by_role("button", name="Hide the results")):
        assert _inside(lecturer, what, 1280, 720), what  # the lecturer's screen fits 1280x720
    phone.get_by_text("The room:").first.wait_for(timeout=30_000)  # the phone follows the reveal too
    wait_idle(phone)
    assert phone.evaluate("() => document.documentElement.scrollWidth") <= 390  # nothing wider than the phone
    phone.get_by_text("The room:").first.scroll_into_view_if_needed()
    phone.screenshot(path=str(ARTIFACTS / "student-phone-revealed.png"))
    light.get_by_role("heading", name="What happened").wait_for(timeout=30_000)  # pushed: no reload
    assert light.locator("#tally li").count() == len(Q2.options) and "of 3" in light.locator("#tally").inner_text()
    assert light.locator("#verdict").inner_text().strip()  # the lecturer's run's verdict
    drawn = light.locator("#figure .main-svg").first
    drawn.wait_for(timeout=60_000)  # the lecturer's figure, as the projector drew it
    assert light.locator("#figure .point, #figure .bars path, #figure .scatterlayer path").count() > 0  # marks
    assert light.evaluate("() => document.documentElement.scrollWidth") <= 390
    light.screenshot(path=str(ARTIFACTS / "hall-phone-revealed-dark.png"))
    drawn.scroll_into_view_if_needed()
    light.screenshot(path=str(ARTIFACTS / "hall-phone-figure-dark.png"))
    light.emulate_media(color_scheme="light")
    light.screenshot(path=str(ARTIFACTS / "hall-phone-figure-light.png"))

    lecturer.get_by_role("button", name="Report").click()
    report = _download(lecturer, "Report (HTML)")
    table = list(csv.DictReader(io.StringIO(_download(lecturer, "Report (CSV)"))))
    assert report.count("<section>") == len(LESSON.steps) and "of 3 predicted what happened" in report
    assert [int(r["step"]) for r in table] == list(range(1, len(LESSON.steps) + 1))  # every step's tally
    assert table[1]["votes"] == "3" and f"{Q2.texts[0]}: 3" in table[1]["distribution"]
    assert all(r["votes"] == "0" for r in table[2:]) and table[1]["verdict"] in ("holds", "does not hold",
                                                                                 "cannot tell")
    sheet = _download(phone, "My worksheet")
    assert Q2.texts[0] in sheet and "Layer Lab worksheet" in sheet
    for text in (report, sheet, lecturer.url, phone.url, laptop.url):
        assert key not in text

    late = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True).new_page()
    late.goto(join, timeout=180_000)  # scanned the QR code after the room moved on: the light view
    late.get_by_role("heading", name="What happened").wait_for(timeout=60_000)  # step 2, already revealed
    assert _asks(late, Q2) and late.get_by_text("revealed the answer before you predicted", exact=False).count() == 1
    late.get_by_role("link", name="Open the full experiment").click()  # one tap from the whole page
    settle(late, "What happened")
    assert _asks(late, Q2) and f"class={code}" in late.url and "student=1" in late.url
    late.screenshot(path=str(ARTIFACTS / "late-joiner.png"))
    for page in (late, light, phone, laptop, lecturer):
        page.context.close()
