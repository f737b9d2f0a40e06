"""`invalidate()` and replays: a replay ticket never runs ahead of the generation.

A replayed answer is trusted while no invalidation happened since its first answer
began (its *ticket*). If an invalidation bumped the ticket before the generation, a
request in between would take the new ticket, read the old generation, find the old
document, and have it replayed until the TTL ran out. So whoever reads a ticket and
then a generation must see a generation at least as new as the ticket: watched here
from another thread while invalidations run, with the interpreter switching threads as
often as it can.
"""

from __future__ import annotations

import sys
import threading

from sitemap_middleware import MemoryStore
from sitemap_middleware.caching.replays import Replays
from sitemap_middleware.stats import Stats


def test_a_ticket_never_runs_ahead_of_the_generation_it_guards():
    store = MemoryStore()
    replays = Replays(store, Stats())
    tokens = [store.generation("products")]  # the generation after n invalidations is tokens[n]
    seen: list[tuple[int, str]] = []
    done = threading.Event()
    watching = threading.Event()  # on a loaded machine the watcher may start late: wait for it

    def invalidating() -> None:
        assert watching.wait(30)
        for _ in range(20_000):
            store.invalidate("products")
            tokens.append(store.generation("products"))
        done.set()

    def requesting() -> None:
        watching.set()
        while not done.is_set():
            ticket = replays.ticket()  # as an answer begins
            seen.append((ticket, store.generation("products")))  # then reads the generation

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads between any two bytecodes it can
    try:
        threads = [threading.Thread(target=invalidating), threading.Thread(target=requesting)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        sys.setswitchinterval(interval)
    position = {token: n for n, token in enumerate(tokens)}
    behind = [(ticket, token) for ticket, token in seen if position[token] < ticket]
    assert len(seen) > 1000
    assert behind == [], f"{len(behind)} answers saw a new ticket with an old generation"
