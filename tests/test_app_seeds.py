"""'Run N more seeds' on a page: a claim that cannot tell offers the seeds that would settle it, the button runs them
through the job runner, and the pooled verdict is drawn with each seed's own beside it."""

import time

from streamlit.testing.v1 import AppTest

from lab import catalog

from .apptest_util import ROOT


def test_cannot_tell_offers_seeds_and_the_pooled_verdict_decides():
    at = AppTest.from_file(str(ROOT / "tests" / "apps" / "seeds_demo.py"), default_timeout=60)
    try:
        at.run()
        assert not at.exception, at.exception
        text = " ".join(m.value for m in at.markdown)
        assert "cannot tell" in text and "To decide: about" in text
        assert "1 claim cannot tell at this seed" in text
        buttons = [b for b in at.button if "more seed" in b.label]
        assert len(buttons) == 1
        n = at.number_input[0].value
        assert 2 <= n <= 20 and buttons[0].label == f"Run {n - 1} more seed{'s' if n > 2 else ''}"
        buttons[0].click().run()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any("Each seed alone" in m.value for m in at.markdown):
            time.sleep(0.3)
            at.run()
        pooled = [m.value for m in at.markdown if "Each seed alone" in m.value]
        assert pooled, [m.value for m in at.markdown]
        # every seed alone cannot tell; their mean over n seeds, with the seeds' spread as its error, holds
        assert "**holds**" in pooled[0] and pooled[0].count("cannot tell") == n
        assert f"Over seeds {', '.join(str(s) for s in range(n))}" in " ".join(m.value for m in at.markdown)
    finally:
        catalog._FOUND.pop("seedsdemo", None)
