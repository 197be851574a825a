"""Progress bars for long work (rich), silent when disabled or not on a terminal."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

T = TypeVar("T")

#: Prepended to every bar's description (``progress_label``): a pipeline names its step.
_PREFIX: ContextVar[str] = ContextVar("privlab_progress_prefix", default="")


@contextmanager
def progress_label(prefix: str):
    """Prefix the bars opened inside the block (``"l=3: "`` -> ``"l=3: deFinetti attack"``),
    so that a pipeline's bars say which step and parameter they belong to."""
    token = _PREFIX.set(_PREFIX.get() + prefix)
    try:
        yield
    finally:
        _PREFIX.reset(token)


def track(
    iterable: Iterable[T], *, description: str, total: int | None = None, enabled: bool = True
) -> Iterator[T]:
    """Iterate ``iterable`` showing a progress bar on stderr when ``enabled``."""
    bar = _progress(enabled)
    if bar is None:
        yield from iterable
        return
    with bar:
        yield from bar.track(iterable, total=total, description=_PREFIX.get() + description)


def _progress(enabled: bool) -> Progress | None:
    """privlab's progress display on stderr, or None when disabled or not on a terminal."""
    if not enabled:
        return None
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal:
        return None
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )


class _Silent:
    def advance(self, n: int = 1) -> None:
        pass

    def set_total(self, total: int | None) -> None:
        pass


@contextmanager
def progress_bar(description: str, *, total: int | None, enabled: bool = True):
    """A bar to ``advance(n)`` from any thread (rich's progress is thread-safe); ``total``
    None shows a running count.  Silent when disabled or not on a terminal."""
    bar = _progress(enabled)
    if bar is None:
        yield _Silent()
        return
    with bar:
        task = bar.add_task(_PREFIX.get() + description, total=total)

        class _Bar:
            def advance(self, n: int = 1) -> None:
                bar.advance(task, n)

            def set_total(self, total: int | None) -> None:
                bar.update(task, total=total)

        yield _Bar()
