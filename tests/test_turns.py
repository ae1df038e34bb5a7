"""app/turns.py: at most N pages of one address work at once; the others wait without CPU and start when a turn
frees, when a holder's session has ended, or give up when their own session ends."""

import threading
import time

from app.turns import Turns


def always(_sid):
    return True


def test_a_client_holds_at_most_limit_turns_and_other_clients_are_not_affected():
    t = Turns(2)
    assert t.try_take("a", "s1", always) and t.try_take("a", "s2", always)
    assert not t.try_take("a", "s3", always)
    assert t.try_take("a", "s1", always)  # a holder's next run keeps its turn
    assert t.try_take("b", "s9", always)  # another address has turns of its own
    t.release("a", "s1")
    assert t.try_take("a", "s3", always) and t.holders("a") == 2


def test_a_waiting_page_starts_when_a_turn_is_given_back():
    t = Turns(1)
    assert t.try_take("a", "s1", always)
    got: list[bool] = []
    waiter = threading.Thread(target=lambda: got.append(t.wait("a", "s2", always, timeout=30)))
    waiter.start()
    time.sleep(0.3)
    assert waiter.is_alive() and not got  # blocked while s1 works
    t.release("a", "s1")
    waiter.join(5)
    assert got == [True] and t.holds("a", "s2") and not t.holds("a", "s1")


def test_a_closed_tab_frees_its_turn_and_a_waiter_whose_tab_closes_gives_up():
    t = Turns(1)
    closed: set[str] = set()

    def alive(sid):
        return sid not in closed

    assert t.try_take("a", "s1", alive)
    closed.add("s1")  # the holder's tab closed without a word
    assert t.wait("a", "s2", alive, timeout=5, tick=0.05) and t.holds("a", "s2")
    closed.add("s3")  # a waiter that left is not kept waiting
    t0 = time.monotonic()
    assert not t.wait("a", "s3", alive, timeout=30, tick=0.05)
    assert time.monotonic() - t0 < 1.0 and not t.holds("a", "s3")


def test_waiting_times_out():
    t = Turns(1)
    t.try_take("a", "s1", always)
    t0 = time.monotonic()
    assert not t.wait("a", "s2", always, timeout=0.2, tick=0.05)
    assert 0.15 < time.monotonic() - t0 < 2.0
