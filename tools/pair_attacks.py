"""What two releases of one input reveal together (issue 29, part 2): the pair attacks.

Run by hand (a few seconds per pair)::

    .venv/bin/python tools/pair_attacks.py [--pairs 5] [--l 4] [--p 0.3] [--correlated 3]

Both attacks take the adversary who links a person to one published row of each release by
the published non-sensitive columns: the *linkable* people are those whose tuple of those
columns is unique in the input (so it is unique in every release of it as well).

* **Anatomy** (Xiao & Tao 2006), l = 4, the README's library example (QI workclass,
  relationship, sex, salary; age kept): a linkable person sits in one group of each
  release; their sensitive value is among the values of both groups, so the pair determines
  it exactly when the two groups share exactly one value.  One release never does (every
  group holds l distinct values).
* **Anatomy, correlated**: the second release drawn at another l from the first's seed
  record (``rng=custody.seed``), which ``save()`` refuses since issue 29.
* **PRAM** (Ma 2006), occupation randomized by the m-category scheme at p (the other
  columns kept): the adversary knows the published matrix P and the marginal of the true
  values (estimated from a release, or known from public statistics; here the true one) and
  gives each linkable record the posterior ``pi(x) P[x, y1] P[x, y2]`` of its two published
  values (one release: ``pi(x) P[x, y1]``).  Reported: the share of linkable records at
  posterior >= 0.95 and how often that top value is right.

The releases are drawn with ``rng=None`` (fresh OS entropy, as a custodian would) and never
saved; each figure is the mean over ``--pairs`` independent pairs, with its range.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

from privlab.data import load_adult
from privlab.data.counts import joint_index
from privlab.errors import ExperimentWarning
from privlab.publish import anatomize, pram

QI = ["workclass", "relationship", "sex", "salary"]
KEEP = ["age"]
SENSITIVE = "occupation"


def _unique_rows(codes: np.ndarray, sizes: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The keys of the rows and which keys occur once."""
    key = joint_index(codes, sizes)
    values, counts = np.unique(key, return_counts=True)
    return key, values[counts == 1]


def anatomy_pair(table, l: int, correlated: int | None = None) -> dict[str, float]:
    """Two independent Anatomy releases: the share of linkable people determined exactly.
    ``correlated``: the second is drawn at that l from the first's seed record instead
    (``rng=custody.seed``, the bypass of the replay guard that ``save()`` now refuses)."""
    a = anatomize(table, qi=QI, sensitive=SENSITIVE, keep=KEEP, l=l)
    if correlated is None:
        b = anatomize(table, qi=QI, sensitive=SENSITIVE, keep=KEEP, l=l)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ExperimentWarning)
            b = anatomize(table, qi=QI, sensitive=SENSITIVE, keep=KEEP, l=correlated,
                          rng=a.custody.seed)  # fmt: skip
    cols = [*QI, *KEEP]
    sizes = [table.schema[c].size for c in cols]
    key_a, unique = _unique_rows(a.qit.select(cols).codes, sizes)
    key_b, _ = _unique_rows(b.qit.select(cols).codes, sizes)
    row_a = {k: i for i, k in enumerate(key_a)}
    row_b = {k: i for i, k in enumerate(key_b)}

    def values(rel) -> list[set[int]]:
        out: list[set[int]] = [set() for _ in range(int(rel.group_id.max()) + 1)]
        for g, v in zip(rel.st_group, rel.st_value):
            out[int(g)].add(int(v))
        return out

    va, vb = values(a), values(b)
    truth_a = a.custody.truth.codes[:, 0]
    determined = right = 0
    for k in unique:
        i, j = row_a[k], row_b[k]
        common = va[int(a.group_id[i])] & vb[int(b.group_id[j])]
        assert int(truth_a[i]) in common  # the true value is in both groups
        if len(common) == 1:
            determined += 1
            right += int(truth_a[i]) in common
    single = sum(len(va[int(a.group_id[row_a[k]])]) == 1 for k in unique)
    return {
        "linkable": len(unique),
        "pair_determined": determined / len(unique),
        "one_release_determined": single / len(unique),
    }


def pram_pair(table, p: float) -> dict[str, float]:
    """Two independent PRAM releases: the share of linkable records at posterior >= 0.95
    (pair and single) and the precision of those guesses."""
    keep = [*QI, *KEEP]
    a, b = (pram(table, columns=[SENSITIVE], keep=keep, p=p) for _ in range(2))
    P = a.blocks[0].matrix
    m = P.shape[0]
    truth_full = table.column(SENSITIVE)
    prior = np.bincount(truth_full, minlength=m) / truth_full.size
    sizes = [table.schema[c].size for c in keep]
    key_a, unique = _unique_rows(a.table.select(keep).codes, sizes)
    key_b, _ = _unique_rows(b.table.select(keep).codes, sizes)
    row_a = {k: i for i, k in enumerate(key_a)}
    row_b = {k: i for i, k in enumerate(key_b)}
    ia = np.array([row_a[k] for k in unique])
    ib = np.array([row_b[k] for k in unique])
    y1 = a.table.column(SENSITIVE)[ia]
    y2 = b.table.column(SENSITIVE)[ib]
    truth = a.custody.truth.column(SENSITIVE)[ia]

    def summary(post: np.ndarray) -> tuple[float, float]:
        post = post / post.sum(axis=1, keepdims=True)
        sure = post.max(axis=1) >= 0.95
        hit = post.argmax(axis=1) == truth
        return float(sure.mean()), float(hit[sure].mean()) if sure.any() else float("nan")

    one = summary(prior * P[:, y1].T)
    two = summary(prior * P[:, y1].T * P[:, y2].T)
    return {
        "linkable": len(unique),
        "pair_sure": two[0],
        "pair_precision": two[1],
        "one_release_sure": one[0],
        "one_release_precision": one[1],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--l", type=int, default=4)
    ap.add_argument("--p", type=float, default=0.3)
    ap.add_argument("--correlated", type=int, default=3,
                    help="the l of the correlated Anatomy pair's second release")  # fmt: skip
    args = ap.parse_args()
    table = load_adult()
    runs = (
        ("anatomy", lambda: anatomy_pair(table, args.l)),
        (f"anatomy, second at l = {args.correlated} from the first's seed record",
         lambda: anatomy_pair(table, args.l, args.correlated)),
        ("pram", lambda: pram_pair(table, args.p)),
    )  # fmt: skip
    for name, run in runs:
        rows = [run() for _ in range(args.pairs)]
        print(f"{name} ({args.pairs} pairs of releases of Adult, {len(table.codes)} rows):")
        for k in rows[0]:
            v = np.array([r[k] for r in rows], dtype=float)
            if k == "linkable":
                print(f"  {k}: {int(v[0])}")
            elif np.isnan(v).all():
                print(f"  {k}: n/a (no record at 0.95)")
            else:
                print(f"  {k}: {100 * np.nanmean(v):.1f}% (range {100 * np.nanmin(v):.1f}-"
                      f"{100 * np.nanmax(v):.1f}%)")  # fmt: skip


if __name__ == "__main__":
    main()
