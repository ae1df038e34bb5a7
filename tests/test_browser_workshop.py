"""A class in a real browser (Debian's Chromium against the session's real server): Start a class hands out the code
and key and the key never enters the lecturer's address (watched after the start and after a rerun); the QR code on
the projector decodes to the Student link; the projected address and the Student link give no lecturer action; the
key typed on another device presents the class, and a reload of the lecturer's browser keeps it (the server's
HttpOnly pass cookie, which holds no key); the voting window; a reload is the same voter, whose counted vote is
final. Screenshots in artifacts/workshop/."""

import io
import time
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlparse

import pytest

from lab.classroom import lecturer_pass, questions, workshop_db

from .browser import require_chromium, settle, wait_idle

pytestmark = pytest.mark.browser

require_chromium()

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "workshop"
Q = next(x for x in questions.of("delete") if x.preset == "")
LECTURER_BUTTONS = ("Open voting", "Close voting", "Reveal to the room", "Reset this question", "Close the class")


def _watch_address(page, key: str, seconds: float) -> None:  # noqa: ANN001 - a Playwright page
    """The address bar, polled: it must never hold the key (issue 45 saw it there, and once saw it never arrive)."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        url = page.url
        assert key not in url and "key=" not in url, url
        time.sleep(0.2)


def _holds_the_pass_not_the_key(page, code: str, key: str) -> None:  # noqa: ANN001 - a Playwright page
    """Issue 60, item 5b: the key sat in a 30-day cookie a page script wrote (so not HttpOnly). The browser now holds
    the server's pass: HttpOnly, SameSite=Strict, for 12 hours, which no script on the page can read."""
    deadline = time.time() + 20
    while True:
        jar = {c["name"]: c for c in page.context.cookies()}
        kept = jar.get(f"layerlab_lecturer_{code}")
        if kept is not None or time.time() > deadline:
            break
        time.sleep(0.25)
    assert kept is not None, sorted(jar)
    assert kept["httpOnly"] and kept["sameSite"] == "Strict" and kept["path"] == "/", kept
    assert key not in kept["value"] and lecturer_pass.is_pass(kept["value"]), kept["value"][:12]
    assert 0 < kept["expires"] - time.time() <= 12 * 3600 + 60
    assert "layerlab_lecturer_" not in page.evaluate("document.cookie")
    assert not [c for c in jar.values() if key in c["value"]]


def _lecturer_actions(page) -> int:  # noqa: ANN001 - a Playwright page
    return sum(page.get_by_role("button", name=name, exact=True).count() for name in LECTURER_BUTTONS)


def _until(page, text: str, seconds: float = 60) -> None:  # noqa: ANN001 - a Playwright page
    """The lecturer's view never idles (its count polls): wait for a text, then a moment for the run to end."""
    page.get_by_text(text, exact=False).first.wait_for(timeout=seconds * 1000)
    time.sleep(1.0)


def _qr_text(page) -> str:  # noqa: ANN001 - a Playwright page
    import zxingcpp
    from PIL import Image

    img = page.locator(".st-key-layerlab_class_card img").first
    img.scroll_into_view_if_needed()
    found = zxingcpp.read_barcodes(Image.open(io.BytesIO(img.screenshot())))
    assert len(found) == 1, found
    return found[0].text


def test_a_class_from_start_to_reveal_with_the_key_never_in_an_address(lab_url, chromium):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    db = workshop_db.Workshop()
    lecturer_ctx = chromium.new_context(viewport={"width": 1280, "height": 720})
    lecturer = lecturer_ctx.new_page()
    lecturer.goto(f"{lab_url}/delete?present=1", timeout=180_000)
    settle(lecturer, "Start a class")
    lecturer.get_by_role("button", name="Start a class").click()
    _until(lecturer, "Voting is not open yet", 300)
    code = parse_qs(urlparse(lecturer.url).query)["class"][0]
    lecturer.get_by_text("Your lecturer key", exact=False).first.click()  # the folded copy box
    key = lecturer.locator(".st-key-layerlab_key_copy code").first.inner_text().strip()
    assert db.is_lecturer(code, key), (code, key[:4])
    _watch_address(lecturer, key, 8)
    _holds_the_pass_not_the_key(lecturer, code, key)
    lecturer.screenshot(path=str(ARTIFACTS / "lecturer-started.png"))
    lecturer.get_by_role("button", name="I have kept it: hide the key").click()
    lecturer.get_by_role("button", name="Open voting").click()  # a rerun: the address is watched again
    _until(lecturer, "Voting is open")
    _watch_address(lecturer, key, 8)
    assert db.window(code, Q.key) == "open"

    href = lecturer.locator("a", has_text="Student link").first.get_attribute("href")
    student_url = urljoin(lecturer.url, href)
    assert "key=" not in student_url and "present=" not in student_url and f"class={code}" in student_url
    assert _qr_text(lecturer) == student_url  # the QR code on the projector is the Student link
    lecturer.screenshot(path=str(ARTIFACTS / "lecturer-voting.png"))

    student_ctx = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    student = student_ctx.new_page()
    student.goto(student_url, timeout=180_000)  # as the phone that scanned the QR code
    settle(student, "Your prediction")
    assert _lecturer_actions(student) == 0
    assert student.locator("[data-testid='stMetric']").count() == 0  # results behind the question
    student.get_by_text(Q.texts[0]).click()
    student.get_by_role("button", name="Reveal", exact=True).click()
    settle(student, "Original (held-out)")
    assert student.get_by_text("not counted", exact=False).count() == 0
    assert db.tally(code, Q.key, len(Q.options), key).counts[0] == 1
    student.reload()  # the same browser again: the same voter, whose counted prediction is final
    settle(student, "counted earlier, and it stands")
    assert student.get_by_role("button", name="Reveal", exact=True).count() == 0
    student.screenshot(path=str(ARTIFACTS / "student-reloaded.png"))
    _until(lecturer, f"Class {code}: 1 prediction", 30)  # the live count (a fragment polling every 2 s)

    for link in (lecturer.url, student_url):  # the projected address and the Student link, photographed
        assert key not in link
        other = chromium.new_context(viewport={"width": 1280, "height": 720}).new_page()
        other.goto(link, timeout=180_000)
        settle(other, "Your prediction")
        wait_idle(other)
        assert _lecturer_actions(other) == 0, link
        assert other.get_by_text(f"Class {code}: 1 prediction").count() == 0
        if "present=1" in link:
            other.screenshot(path=str(ARTIFACTS / "projected-address.png"))
            other.locator("input[type='password']").fill(key)  # the lecturer on another device
            other.get_by_role("button", name="Present this class").click()
            _until(other, f"Class {code}: 1 prediction", 120)
            assert other.get_by_role("button", name="Close voting").count() == 1
            _watch_address(other, key, 4)
        other.context.close()

    lecturer.reload()  # the lecturer's own browser: its cookie presents the class again, no key typed
    _until(lecturer, f"Class {code}: 1 prediction", 180)
    assert lecturer.get_by_role("button", name="Close voting").count() == 1
    _watch_address(lecturer, key, 4)
    lecturer.get_by_role("button", name="Reveal to the room").click()
    _until(lecturer, "The answer was revealed")
    lecturer.screenshot(path=str(ARTIFACTS / "lecturer-revealed.png"))
    assert db.window(code, Q.key) == "revealed"

    late = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True).new_page()
    late.goto(student_url, timeout=180_000)
    settle(late, "Your prediction")
    late.get_by_text(Q.texts[1]).click()
    late.get_by_role("button", name="Reveal", exact=True).click()
    settle(late, "Original (held-out)")
    assert late.get_by_text("revealed the answer", exact=False).count() >= 1  # refused, and said
    late.screenshot(path=str(ARTIFACTS / "student-after-reveal.png"))
    assert db.tally(code, Q.key, len(Q.options), key).counts == (1, 0, 0)
    late.context.close()
    student_ctx.close()
    lecturer_ctx.close()
