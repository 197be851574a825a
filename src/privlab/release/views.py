"""Typed views of a release: the protocols its consumers annotate and check.

A view names what a consumer reads, not what made the release (PEP 544 protocols, checked
structurally, so that any object with these members is one: a release loaded from disk, one
built in memory, a test's stand-in).  Each is ``runtime_checkable``: ``isinstance(r,
Grouped)`` says whether ``r`` has every member of the view (not their types).

* :class:`Grouped`: rows partitioned into groups that carry sensitive values (Anatomy's
  groups, a generalized table's classes): the deFinetti, EM, exact and random-worlds
  attacks, the report's attribute risk.
* :class:`Randomized`: a table whose columns went through known transition matrices
  (PRAM): the PRAM attack, the analyst's estimators, the learners on PRAM data.
* :class:`MaxEnt`: anonymized marginals, read through their max-ent estimate: the max-ent
  attack.
* :class:`Membership`: an alpha-beta view, whose rows are real or inserted: the membership
  attack.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from privlab.data.partition import Partition
from privlab.data.table import Table


@runtime_checkable
class ReleaseView(Protocol):
    """Any release: its method's name and its published rows' count."""

    method: str

    @property
    def n_rows(self) -> int: ...


@runtime_checkable
class Grouped(ReleaseView, Protocol):
    """A release whose rows form groups carrying sensitive values."""

    def partition(self) -> Partition | None:
        """The rows' groups and each group's sensitive counts (None: no sensitive column)."""
        ...

    def quasi_identifiers(self) -> Table:
        """The published quasi-identifiers, one row per published row."""
        ...


@runtime_checkable
class Randomized(ReleaseView, Protocol):
    """A table randomized through known matrices, one block of columns per matrix."""

    table: Table
    blocks: Sequence[Any]

    def block_of(self, column: str) -> Any | None:
        """The block (its columns and matrix) that randomized ``column``, or None."""
        ...


@runtime_checkable
class MaxEnt(ReleaseView, Protocol):
    """Anonymized marginals over named attributes, and their max-ent estimate."""

    marginals: Sequence[Any]
    attributes: Sequence[Any]

    @property
    def sensitive(self) -> str | None: ...

    def maxent(self, *args: Any, **kwargs: Any) -> Any:
        """The max-ent estimate of the table the marginals describe."""
        ...


@runtime_checkable
class Membership(ReleaseView, Protocol):
    """An alpha-beta view: real rows kept with probability ``alpha + beta``, absent domain
    tuples inserted with probability ``beta``."""

    alpha: float
    beta: float

    @property
    def domain_size(self) -> int: ...

    def membership_posterior(self, *args: Any, **kwargs: Any) -> Any:
        """Each published tuple's probability of being real."""
        ...
