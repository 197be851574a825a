"""Re-identification risk of a published partition (prosecutor model; El Emam 2008, ARX).

Under the prosecutor model the adversary knows the target is in the release and links on
the quasi-identifiers: a record in an equivalence class of size ``f`` is re-identified with
probability ``1/f``.  Reported: the largest risk (``1/k``), the mean risk (number of classes
over number of records) and the share of records whose risk exceeds a threshold.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from privlab._frames import ToFrames
from privlab._params import check_codes, check_share
from privlab.errors import ParameterError, PrivlabError
from privlab.metrics.uniqueness import (  # noqa: F401 (public name kept here)
    arx_population_size,
    population_uniques,
    zayatz_unique_probability,
)

DEFAULT_THRESHOLD = 0.2


@dataclass(frozen=True)
class RiskSummary:
    """Prosecutor re-identification risk of a release."""

    max_risk: float
    mean_risk: float
    share_above: float
    threshold: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def unique_share(codes: np.ndarray) -> float:
    """Share of rows whose value combination (row of ``codes``) occurs once."""
    from privlab.data.counts import distinct_rows

    _, inverse, counts = distinct_rows(codes)
    if inverse.size == 0:
        return 0.0
    return float((counts[inverse] == 1).mean())


def prosecutor_risk(
    class_sizes: np.ndarray, *, threshold: float = DEFAULT_THRESHOLD
) -> RiskSummary:
    """Max, mean and share of records above ``threshold`` of the prosecutor risk."""
    check_share("threshold", threshold)
    s = np.asarray(class_sizes, dtype=np.int64)
    if s.size == 0 or (s <= 0).any():
        raise PrivlabError("class sizes must be positive and non-empty")
    n = int(s.sum())
    return RiskSummary(
        max_risk=float(1.0 / s.min()),
        mean_risk=float(s.size / n),
        share_above=float(s[1.0 / s > threshold].sum() / n),
        threshold=float(threshold),
    )


# -- identity risk of a release (the custodian's report) ----------------------------------------
@dataclass(frozen=True)
class IdentityRisk(ToFrames):
    """Re-identification risk of published records under El Emam's three attacker models.

    With ``f_j`` the size of the sample class (records sharing one combination of the
    published non-sensitive values) of record ``i`` and ``F_j`` the size of the same class in
    the population (El Emam & Dankar 2008, "Protecting privacy using k-anonymity", JAMIA
    15(5); ARX's risk analysis):

    * **prosecutor** (the attacker knows the person is in the data): risk ``1 / f_j``;
    * **journalist** (the person may not be in the data): risk ``1 / F_j``;
    * **marketer** (re-identify as many as possible): the expected share re-identified,
      ``(1/n) sum_j f_j / F_j``; ``J / n`` when the sample is the population.

    ``*_max`` is the largest record risk, ``*_mean`` the mean over records and
    ``*_share_above`` the share of records whose risk exceeds ``threshold``.  Population
    figures are None when neither a population nor a sampling fraction is known.
    """

    n: int
    classes: int
    threshold: float
    prosecutor_max: float
    prosecutor_mean: float
    prosecutor_share_above: float
    journalist_max: float | None
    journalist_mean: float | None
    journalist_share_above: float | None
    marketer: float | None
    sample_uniques: int
    sample_unique_share: float
    population_uniques: float | None
    population_model: str
    class_size_histogram: dict[str, list[int]]
    column_uniqueness: tuple[tuple[str, float], ...] = ()
    names: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["column_uniqueness"] = [list(x) for x in self.column_uniqueness]
        d["names"] = list(self.names)
        return d

    def to_pandas(self):
        import pandas as pd

        skip = {"class_size_histogram", "column_uniqueness", "names"}
        rows = [(k, v) for k, v in self.to_dict().items() if k not in skip]
        return pd.DataFrame(rows, columns=["measure", "value"])

    def summary_lines(self) -> list[str]:
        """What the figures mean, in sentences a custodian can act on."""
        cols = ", ".join(self.names) if self.names else "the published columns"
        lines = [
            f"{self.sample_uniques:,} of {self.n:,} records ({self.sample_unique_share:.1%}) "
            f"are unique on {cols}: anyone who knows those facts about a person in the data "
            "finds their record.",
            f"The smallest group of records sharing those values has "
            f"{round(1 / self.prosecutor_max):,} record(s), so a record is re-identified "
            f"with probability up to {self.prosecutor_max:.2f} by someone who knows the "
            f"person is in the data (prosecutor risk); "
            f"{self.prosecutor_share_above:.1%} of the records are above {self.threshold:g}.",
        ]
        if self.marketer is not None:
            lines.append(
                f"An attacker linking every record to a person would be right for "
                f"{self.marketer:.1%} of them on average (marketer risk)."
            )
        if self.population_uniques is not None:
            lines.append(
                f"About {self.population_uniques:,.0f} records are unique in the population as "
                f"well ({self.population_model})."
            )
        near = [f"{c} ({share:.1%})" for c, share in self.column_uniqueness if share > 0.05]
        if near:
            lines.append(
                "Published columns that alone single out more than 5% of the records: "
                + ", ".join(near)
                + "."
            )
        return lines


def identity_risk(
    sample: np.ndarray,
    population: np.ndarray | None = None,
    *,
    sampling_fraction: float | None = None,
    population_size: int | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    names: tuple[str, ...] | list[str] | None = None,
    frequencies: np.ndarray | None = None,
) -> IdentityRisk:
    """The :class:`IdentityRisk` of published records.

    Parameters
    ----------
    sample
        Integer codes ``(n, d)`` of the published non-sensitive columns, one row per record.
    population
        Codes ``(N, d)`` of the people an attacker may link to, in the same coding (a
        superset of the sample): exact journalist and marketer risk and population uniques.
    sampling_fraction, population_size
        Without a population: the sample's share of the population (``n / N``).  1 or None:
        the sample is the population.  Below 1: the marketer risk with the moment estimate
        ``F_j ~ f_j / pi`` (journalist risk is None) and the population uniques by Dankar et
        al.'s (2012) rule between Zayatz, Pitman and SNB, as ARX computes them
        (:func:`privlab.metrics.uniqueness.population_uniques`, ``N = round(n / fraction)``
        as ARX rounds it): ``population_uniques`` is then the expected number of *released
        records* that are population unique, ARX's number of population uniques ``U`` times
        ``n / N`` (each population unique is in the sample with probability ``n / N``), the
        same quantity the exact branch counts.
    threshold
        Record risk above which a record counts as at risk.
    names
        Column names (for the per-column uniqueness and the sentences).
    frequencies
        Each record's sample frequency ``f`` when records are not counted by equal rows: a
        table with suppressed cells, whose ``f`` is the number of records compatible with it
        (:func:`privlab.publish.local_suppression.wildcard_frequencies`, sdcMicro's
        ``freqCalc``).  The prosecutor and marketer figures and the uniques are then read
        from it; ``classes`` still counts the distinct published rows.  Not with a
        population.
    """
    from privlab.data.counts import distinct_rows

    check_share("threshold", threshold)
    s = check_codes(sample, "sample codes")
    n, d = s.shape
    if n == 0:
        raise PrivlabError("the release is empty (0 records)")
    names = tuple(names) if names is not None else tuple(f"x{j}" for j in range(d))
    if len(names) != d:
        raise PrivlabError(f"{len(names)} names for {d} columns")
    N: int | None = None
    if population_size is not None:
        if sampling_fraction is not None:
            raise ParameterError("give a sampling fraction or a population size, not both")
        if population_size < n:
            raise ParameterError(f"population size {population_size} is below the {n} records")
        N = int(population_size)
        sampling_fraction = n / N
    if sampling_fraction is not None and not 0 < sampling_fraction <= 1:
        raise ParameterError(f"sampling fraction must be in (0, 1], got {sampling_fraction}")
    if sampling_fraction is not None and N is None:
        N = arx_population_size(n, sampling_fraction)
    _, inverse, sizes = distinct_rows(s)
    inverse = inverse.reshape(-1)
    f = sizes[inverse].astype(float)
    J = int(sizes.size)
    if frequencies is not None:
        if population is not None:
            raise ParameterError("frequencies= and a population cannot be combined")
        f = np.asarray(frequencies, dtype=float).reshape(-1)
        if f.shape != (n,) or not np.all(f >= 1):
            raise ParameterError(f"frequencies must be {n} counts of at least 1")
        # the histogram and the prosecutor figures by record; the marketer risk is the
        # mean of 1/f (J/n when f counts equal rows)
        sizes = f.astype(np.int64)
    hist_sizes, hist_classes = np.unique(sizes, return_counts=True)
    histogram = {
        "size": hist_sizes.tolist(),
        "classes": hist_classes.tolist(),
        "records": (hist_sizes * hist_classes).tolist(),
    }
    uniques = int((f == 1).sum())
    if frequencies is not None:  # per record: the same figures as prosecutor_risk by class
        r = 1.0 / f
        prosecutor = RiskSummary(float(r.max()), float(r.mean()),
                                 float((r > threshold).mean()), float(threshold))  # fmt: skip
        hist_sizes, hist_records = np.unique(sizes, return_counts=True)
        histogram = {"size": hist_sizes.tolist(),
                     "classes": [int(c) for c in np.ceil(hist_records / hist_sizes)],
                     "records": hist_records.tolist()}  # fmt: skip
    else:
        prosecutor = prosecutor_risk(sizes, threshold=threshold)
    j_max = j_mean = j_share = marketer = pop_uniques = None
    if population is not None:
        pop = np.asarray(population)
        if pop.ndim != 2 or pop.shape[1] != d:
            raise PrivlabError(f"population codes have shape {pop.shape}, the sample {s.shape}")
        both = np.concatenate([s, pop])
        _, inv_all, _ = distinct_rows(both)
        inv_all = inv_all.reshape(-1)
        F_by_key = np.bincount(inv_all[n:], minlength=int(inv_all.max()) + 1)
        F = F_by_key[inv_all[:n]].astype(float)
        if (F == 0).any():
            i = int(np.flatnonzero(F == 0)[0])
            values = ", ".join(f"{c}={s[i, k]}" for k, c in enumerate(names))
            raise PrivlabError(
                f"record {i} ({values}) has no match in the population: the population must "
                "hold every published record's values"
            )
        if (F < f).any():
            raise PrivlabError("the population is smaller than the sample in some class")
        r = 1.0 / F
        j_max, j_mean, j_share = float(r.max()), float(r.mean()), float((r > threshold).mean())
        marketer = float(r.mean())  # (1/n) sum_j f_j / F_j
        pop_uniques = float((F == 1).sum())
        model = "exact, from the population"
    elif sampling_fraction is None or sampling_fraction == 1:
        j_max, j_mean = prosecutor.max_risk, prosecutor.mean_risk  # F = f
        j_share = prosecutor.share_above
        marketer = J / n if frequencies is None else prosecutor.mean_risk
        pop_uniques = float(uniques)
        model = "the sample is the population"
    else:
        pi = float(sampling_fraction)
        marketer = float(np.minimum(1.0, pi / f).mean())  # F_j estimated by f_j / pi
        # the models read class sizes: with frequencies, each record of f counts as 1/f of
        # a class of f (the histogram's classes)
        classes = (
            sizes
            if frequencies is None
            else np.repeat(np.asarray(histogram["size"]), np.asarray(histogram["classes"]))
        )
        est = population_uniques(classes, population_size=N)
        assert est.uniques is not None  # Dankar's rule always gives an estimate
        pop_uniques = est.uniques * n / N
        model = est.label
    per_column = [(c, unique_share(s[:, [k]])) for k, c in enumerate(names)]
    return IdentityRisk(
        n=n,
        classes=J,
        threshold=float(threshold),
        prosecutor_max=prosecutor.max_risk,
        prosecutor_mean=prosecutor.mean_risk,
        prosecutor_share_above=prosecutor.share_above,
        journalist_max=j_max,
        journalist_mean=j_mean,
        journalist_share_above=j_share,
        marketer=marketer,
        sample_uniques=uniques,
        sample_unique_share=uniques / n,
        population_uniques=pop_uniques,
        population_model=model,
        class_size_histogram=histogram,
        column_uniqueness=tuple(per_column),
        names=names,
    )
