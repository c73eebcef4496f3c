"""`Background`: the one owner of a component's background work. A failing child is
logged with its traceback and reported once, its siblings carry on, `close()` ends
every child, and nothing is ever "never retrieved" or "never awaited"."""

from __future__ import annotations

import asyncio
import gc
import logging
import warnings

import pytest

from markertools_adapters._background import Background


def run(coro: object) -> object:
    return asyncio.run(coro)  # type: ignore[arg-type]


def test_a_failing_child_is_reported_and_its_siblings_carry_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    faults: list[tuple[str, str]] = []

    async def main() -> list[str]:
        bg = Background("demo", on_fault=lambda name, exc: faults.append((name, str(exc))))
        await bg.start()
        done: list[str] = []
        gate = asyncio.Event()

        async def sibling() -> None:
            await gate.wait()
            done.append("sibling")

        async def broken() -> None:
            raise RuntimeError("planted")

        bg.spawn(sibling(), name="sibling")
        bg.spawn(broken(), name="broken")
        await asyncio.sleep(0.01)
        gate.set()
        await bg.wait_idle()
        await bg.close()
        return done

    with caplog.at_level(logging.ERROR, logger="markertools.background"):
        done = run(main())
    assert done == ["sibling"]
    assert faults == [("broken", "planted")]
    record = next(r for r in caplog.records if "broken failed" in r.getMessage())
    assert record.exc_info is not None  # logged with its traceback


def test_close_cancels_every_child_and_waits_for_it() -> None:
    async def main() -> list[str]:
        bg = Background("demo")
        await bg.start()
        seen: list[str] = []

        async def forever() -> None:
            try:
                await asyncio.Event().wait()
            finally:
                seen.append("cleaned up")

        for i in range(3):
            bg.spawn(forever(), name=f"forever {i}")
        await asyncio.sleep(0)
        await bg.close()
        return seen

    assert run(main()) == ["cleaned up"] * 3


def test_spawn_after_close_closes_the_coroutine_unrun() -> None:
    async def main() -> tuple[object, list[str]]:
        bg = Background("demo")
        await bg.start()
        await bg.close()
        ran: list[str] = []

        async def late() -> None:
            ran.append("ran")

        return bg.spawn(late(), name="late"), ran

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "coroutine ... was never awaited" would fail
        task, ran = run(main())
        gc.collect()
    assert task is None and ran == []


def test_a_failing_fault_handler_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    def handler(name: str, exc: BaseException) -> None:
        raise ValueError("handler broke")

    async def main() -> int:
        bg = Background("demo", on_fault=handler)
        await bg.start()

        async def broken() -> None:
            raise RuntimeError("planted")

        bg.spawn(broken(), name="broken")
        await bg.wait_idle()
        await bg.close()
        return bg.faults

    with caplog.at_level(logging.ERROR, logger="markertools.background"):
        assert run(main()) == 1
    assert any("fault handler for broken failed" in r.getMessage() for r in caplog.records)


def test_no_task_exception_is_ever_left_unretrieved() -> None:
    """The asyncio loop's exception handler sees nothing: every failure was retrieved."""
    unhandled: list[dict[str, object]] = []

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: unhandled.append(ctx))
        bg = Background("demo", on_fault=lambda name, exc: None)
        await bg.start()

        async def broken(i: int) -> None:
            raise RuntimeError(f"planted {i}")

        for i in range(5):
            bg.spawn(broken(i), name=f"broken {i}")
        await bg.wait_idle()
        await bg.close()
        gc.collect()

    run(main())
    gc.collect()
    assert unhandled == []
