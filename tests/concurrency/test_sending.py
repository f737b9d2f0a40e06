"""A streamed page's render slot (sending.py), on its own: held while the page renders,
given back while its client does not read, taken again before it renders on.

Through real servers: concurrency/test_slow_readers.py (slow readers of unstored pages).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio

from sitemap_middleware.concurrency.offload import LoopCapacities, Slot
from sitemap_middleware.concurrency.sending import stream_body
from sitemap_middleware.concurrency.steps import Busy

from ..conftest import Receive

CHUNKS = [b"<urlset>", b"<url/>" * 100, b"</urlset>"]
SLOT_TIMEOUT = 0.3  # the provider deadline: how long a stream queues for a slot


class Client:
    """A ``send`` that records each body and whether the stream held its slot meanwhile;
    it stops taking them at its first body until ``reads`` is set, if ``stalls``."""

    def __init__(self, slot: Slot, stalls: bool) -> None:
        self.slot = slot
        self.reads = anyio.Event()
        self.stopped = anyio.Event()
        self.stalls = stalls
        self.bodies: list[bytes] = []
        self.held: list[bool] = []

    async def __call__(self, message: dict[str, Any]) -> None:
        self.held.append(self.slot.held)
        self.bodies.append(message["body"])
        if self.stalls and len(self.bodies) == 1:
            self.stopped.set()
            await self.reads.wait()


def stream(slot: Slot, client: Client, chunks: Iterator[bytes]) -> Any:
    threads = anyio.CapacityLimiter(2)
    return stream_body(chunks, client, Receive(), threads, SLOT_TIMEOUT, send_timeout=10, slot=slot)


async def the_only_slot(stalls: bool) -> tuple[Slot, Slot, Client]:
    """A stream's slot, taken (the only one), another request's claim on it, and its client."""
    capacities = LoopCapacities(threads=2, renders=1)
    slot, other = Slot(capacities), Slot(capacities)
    assert await slot.acquire(SLOT_TIMEOUT)
    return slot, other, Client(slot, stalls=stalls)


def test_a_client_that_reads_keeps_the_slot_for_the_whole_page() -> None:
    async def scenario() -> None:
        slot, _, client = await the_only_slot(stalls=False)
        await stream(slot, client, iter(CHUNKS))
        assert b"".join(client.bodies) == b"".join(CHUNKS)
        assert client.held == [True] * len(client.bodies)  # never queued again between hops

    anyio.run(scenario)


def test_a_client_that_stops_reading_gives_the_slot_back_until_it_reads_again() -> None:
    async def scenario() -> None:
        slot, other, client = await the_only_slot(stalls=True)
        async with anyio.create_task_group() as group:
            group.start_soon(stream, slot, client, iter(CHUNKS))
            await client.stopped.wait()
            # The only slot: another page renders while this client does not read.
            assert await other.acquire(2.0)
            client.reads.set()
            await anyio.sleep(0.05)
            assert not slot.held  # the stream queues for a slot before it renders on
            other.release()
        assert slot.held
        assert b"".join(client.bodies) == b"".join(CHUNKS)

    anyio.run(scenario)


def test_a_stream_that_finds_no_slot_when_its_client_reads_again_is_aborted() -> None:
    async def scenario() -> None:
        slot, other, client = await the_only_slot(stalls=True)
        made: list[bytes] = []

        def chunks() -> Iterator[bytes]:
            for chunk in CHUNKS:
                made.append(chunk)
                yield chunk

        errors: list[Busy] = []

        async def reader() -> None:
            try:
                await stream(slot, client, chunks())
            except Busy as error:
                errors.append(error)

        async with anyio.create_task_group() as group:
            group.start_soon(reader)
            await client.stopped.wait()
            assert await other.acquire(2.0)  # and keeps it
            client.reads.set()
        assert len(errors) == 1
        assert "no render slot came free" in str(errors[0])
        assert made == CHUNKS[:1]  # nothing more rendered without a slot
        assert b"".join(client.bodies) == CHUNKS[0]  # and no final message: an aborted page

    anyio.run(scenario)
