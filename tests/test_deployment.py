"""A course deployment in real processes: one PostgreSQL server, one Dask scheduler and worker started with the
`dask scheduler` / `dask worker` commands over TLS (certificates made here, tests/tls_certs.py; a client without the
cluster's certificate is refused), two app servers sharing them and one store; a lecturer on one server, a
student on each; the tally agrees; the scheduler is killed mid-class and started again (as a supervisor would) and
no vote is lost, while a page that was waiting for a training finishes by itself, without an app server restart.
Skipped without Chromium or PostgreSQL on a developer's machine; in CI (CI=true) they are required."""

import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from lab.classroom import questions, workshop_db

from .browser import chromium_path, free_port, lab_server, require, settle
from .pg_server import bin_dir, postgres
from .tls_certs import client_env, dask_tls_args, handshake, make_certs

pytestmark = pytest.mark.browser

require(chromium_path() is not None and bin_dir() is not None,
        "CI needs Debian's chromium and postgresql for the deployment test (.ci/run installs them)",
        "chromium or postgresql is not installed")

ROOT = Path(__file__).resolve().parents[1]
DASK = str(Path(sys.executable).parent / "dask")
Q = next(x for x in questions.of("delete") if x.preset == "")


@contextmanager
def process(cmd: list[str], log: Path, env: dict[str, str]):
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            yield proc
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(30)


def _cluster_env(store: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "LAYERLAB_CACHE": str(store), "LAYERLAB_QUICK": "1",
            "LAYERLAB_WORKER_NICE": "0"}


def _start_cluster(stack: ExitStack, store: Path, port: int, n: int, certs: dict[str, Path]):
    """The course's cluster as its README section starts it: scheduler and worker over TLS with the cluster's
    certificate."""
    env = _cluster_env(store)
    tls = dask_tls_args(certs)
    sched = stack.enter_context(process([DASK, "scheduler", "--protocol", "tls", "--host", "127.0.0.1", "--port",
                                         str(port), "--no-dashboard", *tls], store / f"scheduler{n}.log", env))
    worker = stack.enter_context(process([DASK, "worker", f"tls://127.0.0.1:{port}", "--nthreads", "1",
                                          "--nworkers", "1", "--no-dashboard", "--host", "127.0.0.1", *tls,
                                          "--preload", "lab.runtime.engine.cluster"], store / f"worker{n}.log", env))
    return sched, worker


def _refuses_strangers(port: int, certs: dict[str, Path]) -> None:
    """The running scheduler serves only clients with a certificate of the cluster's CA: one with none is refused."""
    deadline = time.monotonic() + 120
    while True:  # until it listens
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5):
                break
        except OSError:
            assert time.monotonic() < deadline, "the scheduler did not start"
            time.sleep(0.3)
    bare = ssl.create_default_context(cafile=str(certs["ca"]))
    try:
        assert handshake(port, bare) == b""
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
        pass


def _vote(page, option: int) -> None:
    settle(page, "Your prediction")
    page.get_by_text(Q.texts[option]).click()
    page.get_by_role("button", name="Reveal", exact=True).click()
    settle(page, "Original (held-out)")
    assert page.get_by_text("not counted", exact=False).count() == 0


def test_two_app_servers_one_database_one_scheduler_killed_mid_class(chromium, tmp_path):
    store = Path(tempfile.mkdtemp(prefix="layerlab-deploy-"))
    certs = make_certs(tmp_path / "certs")
    port = free_port()
    marks = [("start", time.monotonic())]  # where the test's time goes (the suite's time is watched)

    def mark(what: str) -> None:
        marks.append((what, time.monotonic()))

    with ExitStack() as stack, postgres() as db_url:
        mark("postgres")
        stack.enter_context(_cluster_stack := ExitStack())
        _start_cluster(_cluster_stack, store, port, 1, certs)
        env = {"LAYERLAB_DB": db_url, "LAYERLAB_SCHEDULER": f"tls://127.0.0.1:{port}", "LAYERLAB_WARM": "0",
               **client_env(certs)}
        _refuses_strangers(port, certs)
        mark("scheduler")
        url_a = stack.enter_context(lab_server(str(store), env, "app-a.log"))
        url_b = stack.enter_context(lab_server(str(store), env, "app-b.log"))
        mark("app servers")

        # A class started elsewhere (its code and key from the server); the lecturer presents it on server A from a
        # browser that does not hold the key yet, by typing it in.
        db = workshop_db.Workshop(db_url)
        opened = db.start_class()
        code, key = opened.code, opened.key
        lecturer = chromium.new_context().new_page()
        lecturer.goto(f"{url_a}/delete?present=1&class={code}", timeout=300_000)
        settle(lecturer, "Lecturer key")
        lecturer.get_by_label("Lecturer key").fill(key)
        lecturer.get_by_role("button", name="Present this class").click()
        settle(lecturer, f"Class {code}: 0 predictions")
        lecturer.get_by_role("button", name="Open voting").click()
        settle(lecturer, "Close voting")
        path = f"/delete?workshop=1&class={code}"  # the Student link's page and class
        mark("lecturer")

        one = chromium.new_context().new_page()  # a student on server A
        one.goto(url_a + path, timeout=300_000)
        _vote(one, 0)
        two = chromium.new_context().new_page()  # a student on server B (the same database)
        two.goto(url_b + path, timeout=300_000)
        _vote(two, 1)
        deadline = time.time() + 30
        while time.time() < deadline and lecturer.get_by_text(f"Class {code}: 2 predictions").count() == 0:
            time.sleep(0.5)
        assert lecturer.get_by_text(f"Class {code}: 2 predictions").count() == 1
        assert db.tally(code, Q.key, len(Q.options), key).counts[:2] == (1, 1)
        mark("two votes")

        # Mid-class: the scheduler dies. A page that needs a training (another seed) now waits for it.
        _cluster_stack.close()
        waiting = chromium.new_context().new_page()
        waiting.goto(f"{url_b}/delete?seed=7", timeout=300_000)
        # the page has asked for its training and waits for the dead cluster (its progress bar), rather than a
        # fixed pause that either wasted seconds or, on a slow machine, ended before the page asked
        waiting.locator("[data-testid='stProgress']").first.wait_for(timeout=120_000)
        three = chromium.new_context().new_page()  # stored views and votes need no cluster
        three.goto(url_b + path, timeout=300_000)
        _vote(three, 2)
        mark("kill, vote")
        restarted = time.monotonic()
        _start_cluster(stack, store, port, 2, certs)  # the supervisor starts them again, on the same address
        settle(waiting, "Original (held-out)", timeout_ms=400_000)  # no reload: the page recovered by itself
        print(f"deployment: the waiting page had its result {time.monotonic() - restarted:.1f} s after the "
              f"scheduler was restarted")
        assert waiting.locator("[data-testid='stException']").count() == 0
        mark("recovered")
        deadline = time.time() + 30
        while time.time() < deadline and lecturer.get_by_text(f"Class {code}: 3 predictions").count() == 0:
            time.sleep(0.5)
        assert lecturer.get_by_text(f"Class {code}: 3 predictions").count() == 1
        assert db.tally(code, Q.key, len(Q.options), key).counts == (1, 1, 1)  # no vote lost
        for p in (lecturer, one, two, three, waiting):
            p.context.close()
    mark("closed")
    print("deployment:", ", ".join(f"{what} {t - before:.1f} s"
                                   for (_, before), (what, t) in zip(marks, marks[1:], strict=False)))
