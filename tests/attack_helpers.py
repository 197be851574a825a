"""Tiny anatomy releases and brute-force oracles for the attack tests."""

from __future__ import annotations

import itertools

import numpy as np

from privlab.data.table import Table
from privlab.publish.anatomy import AnatomyRelease, anatomize


def tiny_release(seed: int, sizes=(2, 2, 3, 2), n_attr: int = 2, n_values: int = 4):
    """A random hand-made release with the given group sizes (distinct values per group)."""
    rng = np.random.default_rng(seed)
    qi_rows, group_id, st_rows, truth = [], [], [], []
    for g, size in enumerate(sizes):
        vals = rng.choice(n_values, size=size, replace=False)
        for v in vals:
            # QI correlated with the value so that learning matters
            row = [str((v + rng.integers(0, 2)) % 3) for _ in range(n_attr)]
            qi_rows.append(row)
            group_id.append(g)
            st_rows.append((g, f"s{v}"))
            truth.append(f"s{v}")
    return AnatomyRelease.from_rows(
        qi_rows, [f"q{j}" for j in range(n_attr)], group_id, st_rows, "s", truth=truth
    )


def mirror_modes_release(blocks: int = 16, groups: int = 20):
    """An Anatomy-like release whose posterior has symmetric (mirror-image) modes.

    Block ``k`` holds ``groups`` groups of two people, one with QI value ``x{k}`` and one
    with ``y{k}``, whose sensitive values are ``s{2k}`` and ``s{2k+1}``.  Exchanging those
    two values maps the release onto itself, so every person's exact posterior is 0.5 on
    each; yet a Naive-Bayes model either ties ``x{k}`` to ``s{2k}`` or to ``s{2k+1}``, and a
    chain that has chosen one of these two modes (about ``2 * groups`` log-units apart from
    the 50/50 state between them) does not leave it.  Chains started apart settle block by
    block at random: with two chains they disagree on some block unless they agree on all
    ``blocks`` (probability ``2 ** -blocks``).
    """
    qi_rows, group_id, st_rows, truth = [], [], [], []
    for k in range(blocks):
        for i in range(groups):
            g = k * groups + i
            for side, name in enumerate(("x", "y")):
                value = f"s{2 * k + side}"
                qi_rows.append([f"{name}{k}"])
                group_id.append(g)
                st_rows.append((g, value))
                truth.append(value)
    return AnatomyRelease.from_rows(qi_rows, ["q"], group_id, st_rows, "s", truth=truth)


def synthetic_release(n: int, l: int, seed: int, strength: float = 4.0):
    """Anatomize ``n`` tuples drawn from a Naive-Bayes model with informative QIs."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    m = 6
    s = rng.integers(0, m, size=n)
    cols = {}
    for j, d in enumerate((4, 3, 5)):
        logits = rng.normal(0, 1, size=(m, d)) * strength
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        u = rng.random(n)[:, None]
        cols[f"q{j}"] = [f"v{k}" for k in (u > np.cumsum(p[s], axis=1)).sum(axis=1)]
    cols["s"] = [f"s{v}" for v in s]
    table = Table.from_pandas(pd.DataFrame(cols), qi=["q0", "q1", "q2"], sensitive="s")
    return anatomize(table, l=l, rng=np.random.default_rng(seed))


def brute_force_group_marginals(scores, release):
    """For each group, ``Pr(pi) \\propto prod scores[t, pi_t]`` by itertools; tuple marginals."""
    counts = release.group_counts()
    out = np.zeros_like(scores, dtype=float)
    logz = 0.0
    for g in range(counts.shape[0]):
        tup = np.flatnonzero(release.group_id == g)
        vals = np.repeat(np.arange(counts.shape[1]), counts[g])
        perms = list(itertools.permutations(vals))
        w = np.array([np.prod(scores[tup, list(p)]) for p in perms])
        logz += np.log(w.sum())
        for p, wk in zip(perms, w / w.sum()):
            out[tup, list(p)] += wk
    return out, logz


def record_progress(monkeypatch, module):
    """Replace ``module.progress_bar`` by a recorder: returns ``(steps, totals)``, the lists
    that every ``advance(n)`` and every bar's ``total`` (and every later ``set_total``) are
    appended to."""
    import contextlib

    steps: list[int] = []
    totals: list[int | None] = []

    class _Bar:
        def advance(self, n=1):
            steps.append(n)

        def set_total(self, total):
            totals.append(total)

    @contextlib.contextmanager
    def fake_bar(description, *, total, enabled=True):
        totals.append(total)
        yield _Bar()

    monkeypatch.setattr(module, "progress_bar", fake_bar)
    return steps, totals
