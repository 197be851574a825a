"""Refuse up front a computation that would not fit in memory, saying what it would need.

Some structures privlab builds are dense by nature: the group-by-value count matrix of a
partition (``groups x sensitive values``) and a PRAM transition matrix (``K x K``, published
whole in ``release.json``).  They grow with the product of two sizes, not with the data, so
a 20,000-valued sensitive column or a simultaneous PRAM over eight columns can ask for tens
of gigabytes.  :func:`require_memory` compares the estimate with the memory available (or
with ``PRIVLAB_MEMORY_LIMIT``, e.g. ``2G``) before anything is allocated and raises a
:class:`~privlab.errors.MemoryBudgetError` that names the size, instead of a ``MemoryError``
(or the kernel's OOM killer) halfway through.
"""

from __future__ import annotations

import os

from privlab.errors import MemoryBudgetError, ParameterError

ENV = "PRIVLAB_MEMORY_LIMIT"
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    """``"2G"`` -> 2147483648; ``"512M"``, ``"1.5G"``, ``"1000000"`` (bytes)."""
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = t[-1:] if t[-1:] in _UNITS and t[-1:] != "" and not t[-1:].isdigit() else ""
    number = t[: -len(unit)] if unit else t
    try:
        value = float(number)
    except ValueError:
        raise ParameterError(f"{ENV}={text!r} is not a size such as 2G or 512M") from None
    if not value > 0:
        raise ParameterError(f"{ENV}={text!r} must be positive")
    return int(value * _UNITS[unit])


def available_bytes() -> tuple[int, str]:
    """The memory a computation may use, and where that figure comes from."""
    limit = os.environ.get(ENV)
    if limit:
        return parse_size(limit), ENV
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024, "available"
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "available"
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 8 << 30, "assumed"


def human(nbytes: float) -> str:
    """``1536`` -> ``'1.5 KiB'``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if nbytes < 1024 or unit == "TiB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    raise AssertionError  # pragma: no cover


def budget() -> tuple[int, str]:
    """The bytes a computation may use and how that figure was set: ``PRIVLAB_MEMORY_LIMIT``
    as given, else 80% of the memory available now."""
    nbytes, source = available_bytes()
    if source != ENV:
        nbytes = int(0.8 * nbytes)
    return nbytes, source


def _where(nbytes: int, source: str) -> str:
    if source == ENV:
        return f"{ENV} allows {human(nbytes)}"
    return f"this machine has {human(nbytes)} to spare"


def fits(nbytes: float) -> bool:
    """Whether ``nbytes`` fit in the :func:`budget`."""
    return nbytes <= budget()[0]


def require_memory(nbytes: float, what: str, hint: str) -> None:
    """Raise :class:`MemoryBudgetError` when ``what`` needs more than the memory at hand.

    Without ``PRIVLAB_MEMORY_LIMIT`` the budget is 80% of the available memory.
    """
    limit, source = budget()
    if nbytes > limit:
        raise MemoryBudgetError(
            f"{what} needs about {human(nbytes)} of memory and {_where(limit, source)}: {hint}"
        )


def require_units(count: int, per_unit: float, fixed: float, what: str, unit: str,
                  hint: str = "") -> None:  # fmt: skip
    """Refuse ``count`` units of a computation (chains, restarts) that need ``fixed +
    count * per_unit`` bytes when that exceeds the :func:`budget`, saying how many fit.

    Parameters
    ----------
    count
        Units asked for.
    per_unit, fixed
        Bytes each unit needs, and bytes needed whatever their number.
    what
        The computation, for the message (``"the deFinetti attack"``).
    unit
        The units' name, plural, as the option says it (``"chains"``).
    hint
        What else may help, appended to the message.
    """
    nbytes = fixed + count * per_unit
    limit, source = budget()
    if nbytes <= limit:
        return
    most = max(0, int((limit - fixed) // per_unit)) if per_unit > 0 else 0
    cap = f"at most {most:,} {unit} fit" if most else f"not even one of the {unit} fits"
    raise MemoryBudgetError(
        f"{what} with {count:,} {unit} needs about {human(nbytes)} of memory and "
        f"{_where(limit, source)}: {cap}" + (f"; {hint}" if hint else "")
    )


def require_at_most(name: str, value: int, most: int, why: str) -> None:
    """Refuse (:class:`ParameterError`) a count above its sensible maximum ``most``, in one
    line that names the parameter, the value, the cap and ``why`` it is the cap."""
    if value > most:
        raise ParameterError(f"{name} = {value:,} is above the cap of {most:,}: {why}")
