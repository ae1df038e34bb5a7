"""Every test session gets a fresh, private store, so tests never read a developer's cache/."""

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LAYERLAB_CACHE", tempfile.mkdtemp(prefix="layerlab-test-cache-"))
# Page tests use the in-process thread engine (no cluster to start); tests/test_engine.py opts in to Dask itself.
os.environ.setdefault("LAYERLAB_ENGINE", "threads")
# A server started by a test must not warm the default views in the background: that would train real models
# for minutes after the test has finished (app/main.py).
os.environ["LAYERLAB_WARM"] = "0"
# Page tests compare a view with its one-seed claims; the seeds a quick view pools without a click are tested on
# their own (tests/test_seeds.py, tests/test_app_seeds.py, tests/test_warm.py set it back to 3).
os.environ["LAYERLAB_RECIPE_SEEDS"] = "1"
# Every AppTest session of the suite comes from one address: its wrong class codes would add up to one address's
# bound (lab/classroom/class_keys.py: `find`). The tests of that bound set it back.
os.environ.setdefault("LAYERLAB_WRONG_PER_ADDRESS", "100000")
from lab.runtime.threads import configure_threads  # noqa: E402

configure_threads()


# -- real-browser fixtures: one server and one Chromium for the whole session ------------------------------
# The server shares this session's store with the AppTest page tests (both in quick mode), so the browser
# tests find most models already trained instead of training them again.
import pytest  # noqa: E402


@pytest.fixture(scope="session")
def lab_url():
    from .browser import lab_server

    with lab_server(os.environ["LAYERLAB_CACHE"]) as url:
        yield url


@pytest.fixture(scope="session")
def chromium():
    from playwright.sync_api import sync_playwright

    from .browser import CHROMIUM_ARGS, chromium_path

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium):
    pg = chromium.new_page(viewport={"width": 1400, "height": 1000})
    yield pg
    pg.close()


@pytest.fixture(autouse=True)
def _restore_quick_mode():
    """Page tests switch quick mode on (tests/apptest_util.py); no other test may inherit it."""
    before = os.environ.get("LAYERLAB_QUICK")
    yield
    if before is None:
        os.environ.pop("LAYERLAB_QUICK", None)
    else:
        os.environ["LAYERLAB_QUICK"] = before


# After the last test, a run that used AppTest has been seen to abort at interpreter teardown ("terminate called
# without an active exception", exit status 134): a native thread still joinable when the process exits, after every
# result was reported. The session's own status is the truth, so the process ends with it once pytest is done.
_STATUS: list[int] = []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _STATUS.append(int(exitstatus))


@pytest.hookimpl(trylast=True)  # after every other plugin's (the terminal's last line is written there)
def pytest_unconfigure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: the controller reports and exits
        return
    if _STATUS and os.environ.get("LAYERLAB_TEST_HARD_EXIT", "1") != "0":
        tw = getattr(config.pluginmanager.get_plugin("terminalreporter"), "_tw", None)
        if tw is not None:
            tw.flush()  # the terminal's last line ("N passed in ...") is still in its buffer
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_STATUS[-1])


# A test that hangs must fail alone, with every thread's stack, instead of stalling the whole run until CI gives up
# (a CI run once stopped mid-suite with no word of where). LAYERLAB_TEST_TIMEOUT: seconds per test (0: no limit).
TEST_TIMEOUT_S = int(os.environ.get("LAYERLAB_TEST_TIMEOUT", "900"))


class RanOver(Exception):
    pass


def _bounded(item: pytest.Item, phase: str):
    import faulthandler
    import signal
    import threading

    if TEST_TIMEOUT_S <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum, frame):
        sys.stderr.write(f"\n=== {item.nodeid} ({phase}) ran over {TEST_TIMEOUT_S} s; every thread's stack: ===\n")
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        sys.stderr.flush()
        raise RanOver(f"{item.nodeid} ({phase}) ran over {TEST_TIMEOUT_S} s (LAYERLAB_TEST_TIMEOUT)")

    before = signal.signal(signal.SIGALRM, expired)
    signal.alarm(TEST_TIMEOUT_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    yield from _bounded(item, "setup")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    yield from _bounded(item, "call")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item):
    yield from _bounded(item, "teardown")


# -- several processes (pytest-xdist, `make test`): one store, a lab server per process -------------------------
# Every worker shares the store set above (the controller sets LAYERLAB_CACHE before it starts them), whose file
# locks let one process build an entry while another waits for it; each worker that runs a browser test starts its
# own server (the `lab_url` fixture is per process). xdist's `loadgroup` cannot keep those tests in one worker here:
# it renames test ids, which pytest 9 computes afresh. The longest tests go first, each to the next free worker
# (`--maxschedchunk 2` in pyproject.toml: xdist would otherwise hand its first worker the first sixth of the suite at
# once): a long test started last would finish alone while the other workers idle. Then the browser tests, which
# wait on their server and Chromium and so leave a core to the CPU-bound tests beside them.
LONGEST = (  # measured with --durations (slowest first); a stale entry only costs speed
    "tests/test_deployment.py::test_two_app_servers_one_database_one_scheduler_killed_mid_class",
    "tests/test_browser_study.py::test_a_pages_study_map_has_a_mark_at_every_value",
    "tests/test_browser_workshop.py::test_a_class_from_start_to_reveal_with_the_key_never_in_an_address",
    "tests/test_claims_everywhere.py::test_the_default_views_claims_are_tests_with_their_error",
    "tests/test_browser_lesson.py::test_the_room_follows_the_lecturers_lesson_to_its_report",
    "tests/test_task_browser.py::test_your_own_csv_runs_delete_reinit_and_layerdrop_and_a_bad_one_changes_nothing",
    "tests/test_cli_schema.py::test_every_commands_json_is_the_envelope_of_its_whole_result",
    "tests/test_rekey.py::test_an_edit_that_changes_no_number_recomputes_nothing",
    "tests/test_browser.py::test_delete_page_presets_scroll_and_the_slider_follows",
    "tests/test_matrix.py::test_a_quick_run_has_every_row_column_profile_and_claim",
    "tests/test_conformance.py::test_the_experiment_meets_the_contract",
)


def _rank(item: pytest.Item) -> int:
    base = item.nodeid.split("[", 1)[0]
    if base in LONGEST:
        return LONGEST.index(base)
    return len(LONGEST) + ("lab_url" not in getattr(item, "fixturenames", ()))


# -- tiers: `make test-fast` runs `-m "not browser and not slow and not nulls"` for every change, `make test` all --
TIERS = {
    "unit": "a test of the library or a page's pieces, without a server or a browser (every test in no other tier)",
    "page": "drives a page through Streamlit's AppTest (tests/test_app_*.py)",
    "browser": "drives a real headless Chromium against a running app",
    "slow": "one of the longest tests (LONGEST), or one that starts servers, clusters or installs (SLOW_FILES)",
    "nulls": "a simulated null: thousands of simulated studies or verdicts (tests/test_*nulls*.py)",
}
SLOW_FILES = ("tests/test_deployment.py", "tests/test_install.py", "tests/test_study.py", "tests/test_engine.py",
              "tests/test_hall_server.py",
              "tests/test_cluster", "tests/test_claims_everywhere.py")


def pytest_configure(config: pytest.Config) -> None:
    for name, meaning in TIERS.items():
        config.addinivalue_line("markers", f"{name}: {meaning}")


def tiers_of(item: pytest.Item) -> set[str]:
    """The tiers a test belongs to, from where it lives (a test marked browser by its module keeps it)."""
    path = item.nodeid.split("::", 1)[0]
    found = {m.name for m in item.iter_markers() if m.name in TIERS}
    if path.startswith("tests/test_app_"):
        found.add("page")
    if "nulls" in path:
        found.add("nulls")
    if item.nodeid.split("[", 1)[0] in LONGEST or path.startswith(SLOW_FILES):
        found.add("slow")
    return found or {"unit"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for tier in tiers_of(item) - {m.name for m in item.iter_markers()}:
            item.add_marker(getattr(pytest.mark, tier))
    items.sort(key=_rank)  # stable: within a rank, pytest's own order (which keeps module fixtures together)
