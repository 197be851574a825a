"""Privacy models checked per equivalence class, vectorized over classes.

k-anonymity (Sweeney 2002), distinct / entropy / recursive (c,l)-diversity (Machanavajjhala
et al. 2006; recursive as Kifer & Gehrke 2006, Defn 2.5, state it: ``r_1 <= c sum_{i>=l} r_i``),
t-closeness with EMD under equal or ordered ground distance (Li et al. 2007) and
delta-disclosure privacy (Brickell & Shmatikov 2008, Defn 1:
``|log p(<t>,s) / p(T,s)| < delta`` for every class and value).  Each measure is
:mod:`privlab.metrics.privacy`'s: the search and ``privlab check`` share one copy.

The reference distribution ``p(T, .)`` of t-closeness and delta-disclosure is the *input*
table's (as in ARX and in Brickell & Shmatikov, whose baseline is the trivially sanitized
table).  With no suppression it equals the published table's.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from privlab._params import check_int, check_share
from privlab.data.counts import row_blocks
from privlab.errors import ParameterError
from privlab.metrics import privacy as pm

L_VARIANTS = ("distinct", "entropy", "recursive")
T_DISTANCES = ("equal", "ordered")
_EPS = 1e-12


@dataclass(frozen=True)
class PrivacyModel:
    """The privacy requirements every published equivalence class must meet.

    Parameters
    ----------
    k
        Minimum class size (k-anonymity); 1 disables it.
    l, l_variant, c
        l-diversity: ``distinct`` (at least l distinct values), ``entropy`` (``exp(H) >= l``)
        or ``recursive`` ((c,l)-diversity, needs ``c``).  None disables it.
    t, t_distance
        t-closeness: EMD of every class to the table at most ``t``; ``equal`` or ``ordered``
        ground distance.  None disables it.
    delta
        delta-disclosure privacy: every ``|log p(<t>,s)/p(T,s)| < delta``.  None disables it.
    """

    k: int = 1
    l: float | None = None
    l_variant: str = "distinct"
    c: float | None = None
    t: float | None = None
    t_distance: str = "equal"
    delta: float | None = None

    def __post_init__(self) -> None:
        check_int("k", self.k, low=1)
        if self.l_variant not in L_VARIANTS:
            raise ParameterError(
                f"l-variant must be one of {', '.join(L_VARIANTS)}, not {self.l_variant!r}"
            )
        if self.l is not None:
            if not self.l >= 1:
                raise ParameterError(f"l must be at least 1, got {self.l}")
            if self.l_variant != "entropy" and float(self.l) != int(self.l):
                raise ParameterError(
                    f"{self.l_variant} l-diversity needs an integer l, got {self.l}"
                )
            if self.l_variant == "recursive" and (self.c is None or not self.c > 0):
                raise ParameterError(f"recursive (c,l)-diversity needs c > 0, got c = {self.c}")
        if self.t_distance not in T_DISTANCES:
            raise ParameterError(
                f"t-distance must be one of {', '.join(T_DISTANCES)}, not {self.t_distance!r}"
            )
        if self.t is not None:
            check_share("t", self.t)
        if self.delta is not None and not self.delta > 0:
            raise ParameterError(f"delta must be positive, got {self.delta}")

    @property
    def needs_sensitive(self) -> bool:
        return self.l is not None or self.t is not None or self.delta is not None

    @property
    def monotone_with_suppression(self) -> bool:
        """Whether "records in violating classes <= limit" is monotone in generalization.

        True for k-anonymity and distinct l-diversity: a class that satisfies them still does
        after merging with any class.  Entropy / recursive l-diversity, t-closeness and
        delta-disclosure hold for a merge of two satisfying classes (they are convex), but a
        satisfying class merged with a violating one may violate, so with suppression the
        search must not prune on them.
        """
        return (
            self.t is None
            and self.delta is None
            and (self.l is None or self.l_variant == "distinct")
        )

    def class_ok(
        self, sizes: np.ndarray, counts: np.ndarray | None, overall: np.ndarray | None
    ) -> np.ndarray:
        """Boolean per class: does it satisfy every requirement?

        ``sizes`` (G,), ``counts`` (G, m) class-by-sensitive-value counts, ``overall`` (m,)
        the reference distribution (input table).  The measures are
        :mod:`privlab.metrics.privacy`'s, the ones ``privlab check`` reports.
        """
        ok = sizes >= self.k
        if not self.needs_sensitive:
            return ok
        assert counts is not None and overall is not None
        lo = 0
        for block in row_blocks(counts):  # bounded temporaries, whatever the matrix's size
            ok[lo : lo + block.shape[0]] &= self._block_ok(block, overall)
            lo += block.shape[0]
        return ok

    def _block_ok(self, counts: np.ndarray, overall: np.ndarray) -> np.ndarray:
        """:meth:`class_ok`'s sensitive-value requirements on a block of classes."""
        ok = np.ones(counts.shape[0], dtype=bool)
        if self.l is not None:
            if self.l_variant == "distinct":
                ok &= pm.class_distinct_l(counts) >= self.l
            elif self.l_variant == "entropy":
                ok &= pm.class_entropy_l(counts) >= self.l - 1e-9
            else:
                ok &= pm.class_recursive_ok(counts, self.c, int(self.l))
        if self.t is not None:
            emd = pm.class_emd_equal if self.t_distance == "equal" else pm.class_emd_ordered
            ok &= emd(counts, overall) <= self.t + _EPS
        if self.delta is not None:
            ok &= pm.class_delta(counts, overall) < self.delta
        return ok

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def describe(self) -> str:
        parts = [f"k = {self.k}"]
        if self.l is not None:
            extra = f", c = {self.c}" if self.l_variant == "recursive" else ""
            parts.append(f"{self.l_variant} l = {self.l:g}{extra}")
        if self.t is not None:
            parts.append(f"t = {self.t:g} ({self.t_distance})")
        if self.delta is not None:
            parts.append(f"delta = {self.delta:g}")
        return ", ".join(parts)
