"""The nearest-neighbour learning attack on a masked release (privlab.attacks.nearest, issue
35 item 6): exact oracles by brute-force distances, its limits, what it learns and what it
cannot, and its place in the report."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privlab.attacks.nearest import choose_neighbours, nearest_neighbour_attack
from privlab.data.table import Table
from privlab.errors import ParameterError
from privlab.publish.masking import add_noise, microaggregate
from privlab.report import build


def _table(x: np.ndarray, s: np.ndarray) -> Table:
    df = pd.DataFrame({f"x{j}": x[:, j] for j in range(x.shape[1])})
    df["s"] = [f"v{v}" for v in s]
    return Table.from_pandas(df)


def _release(x, s, noise=0.0, seed=0):
    return add_noise(_table(x, s), [f"x{j}" for j in range(x.shape[1])], noise=noise,
                     keep=[], sensitive="s", rng=seed)  # fmt: skip


def _plain_posterior(z, codes, q, k, m, a=1.0):
    """Brute force: every distance, the k smallest (stable order), the smoothed shares."""
    prior = np.bincount(codes, minlength=m) / codes.size
    out = np.empty((q.shape[0], m))
    for i, row in enumerate(q):
        d = np.sqrt(((z - row) ** 2).sum(axis=1))
        near = np.argsort(d, kind="stable")[:k]
        out[i] = (np.bincount(codes[near], minlength=m) + a * prior) / (k + a)
    return out


def _plain_loo(z, codes, k, m, a=1.0):
    prior = np.bincount(codes, minlength=m) / codes.size
    loss = 0.0
    for i in range(z.shape[0]):
        d = np.sqrt(((z - z[i]) ** 2).sum(axis=1))
        d[i] = np.inf
        near = np.argsort(d, kind="stable")[:k]
        p = (np.sum(codes[near] == codes[i]) + a * prior[codes[i]]) / (k + a)
        loss -= np.log(p)
    return loss / z.shape[0]


def test_posterior_equals_brute_force_distances():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(120, 3)) * [1.0, 10.0, 0.1]
    s = rng.integers(0, 4, 120)
    rel = _release(x, s, noise=30.0, seed=1)
    people = rel.truth_values()
    for k in (1, 4, 17):
        post = nearest_neighbour_attack(rel, neighbours=k)
        z = rel.values()
        scale = z.std(axis=0, ddof=1)
        codes = rel.table.column("s").astype(np.int64)
        want = _plain_posterior(z / scale, codes, people / scale, k, 4)
        np.testing.assert_allclose(post.probs, want, atol=1e-12)
        assert post.diagnostics["neighbours"] == k and post.method == "nearest"


def test_the_choice_of_k_is_the_brute_force_leave_one_out_optimum():
    rng = np.random.default_rng(5)
    z = rng.normal(size=(150, 2))
    codes = (z[:, 0] > 0).astype(np.int64) + 2 * (rng.random(150) < 0.2)
    k, loss = choose_neighbours(z, codes, 4, candidates=(1, 2, 3, 5, 10, 20, 40))
    for c, v in loss.items():
        assert v == pytest.approx(_plain_loo(z, codes, c, 4), rel=1e-12)
    assert k == min(loss, key=loss.get)
    # clusters of 10 sharing a label, far apart: the 9 others of a record's cluster are
    # all right, a 10th neighbour is not: the choice is the largest candidate below 10
    centres = np.repeat(np.arange(20) * 100.0, 10)[:, None]
    z = np.hstack([centres + rng.normal(size=(200, 1)), rng.normal(size=(200, 1))])
    codes = np.repeat(np.arange(20) % 5, 10)
    k, _ = choose_neighbours(z, codes, 5, candidates=(1, 3, 7, 9, 10, 15))
    assert k == 9


def test_unmasked_distinct_records_are_learnt_exactly_and_the_baseline_is_the_prior():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 2))
    s = rng.integers(0, 3, 300)
    rel = _release(x, s, noise=0.0)
    post = nearest_neighbour_attack(rel, neighbours=1)
    truth = rel.table.column("s")
    assert (post.probs.argmax(axis=1) == truth).all()  # one's own record
    prior = np.bincount(truth, minlength=3) / 300
    np.testing.assert_allclose(post.probs[np.arange(300), truth], (1 + prior[truth]) / 2)


def test_it_learns_a_value_the_masked_columns_determine_and_not_a_random_one():
    """A sensitive value set by the age band is learnt from noisy ages; one drawn apart
    from every column is not learnt of people outside the release (their accuracy stays at
    the majority's share), while of the release's own people it is, through their own
    records (the record linkage this attack turns into attribute disclosure)."""
    rng = np.random.default_rng(11)
    n = 3000
    x = np.column_stack([rng.uniform(20, 70, n), rng.normal(40, 10, n)])
    band = np.digitize(x[:, 0], [30, 40, 50, 60])
    rel = _release(x, band, noise=10.0, seed=2)
    post = nearest_neighbour_attack(rel)
    assert (post.probs.argmax(axis=1) == rel.table.column("s")).mean() > 0.9
    s = rng.integers(0, 5, n)
    rel = _release(x, s, noise=10.0, seed=2)
    truth = rel.table.column("s")
    majority = np.bincount(truth).max() / n
    # outsiders: fresh people, a random value each (none of them is in the release)
    out = np.column_stack([rng.uniform(20, 70, n), rng.normal(40, 10, n)])
    post = nearest_neighbour_attack(rel, people=out, neighbours=1)
    acc = float((post.probs.argmax(axis=1) == rng.integers(0, 5, n)).mean())
    assert acc < majority + 0.04  # 0.04: > 4 sd of a share over 3,000 people
    # insiders at one neighbour: their own record, nearest under 0.1% noise, names the value
    # (the release's draws are salted with OS entropy: measured 0.99 and above)
    rel = _release(x, s, noise=0.1, seed=2)
    post = nearest_neighbour_attack(rel, neighbours=1)
    assert (post.probs.argmax(axis=1) == rel.table.column("s")).mean() > 0.95


@settings(max_examples=25, deadline=None)
@given(st.integers(5, 60), st.integers(1, 3), st.integers(2, 5), st.integers(0, 10**6))
def test_posteriors_are_distributions_over_the_domain(n, p, m, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, p))
    s = np.arange(n) % m
    rel = _release(x, s, noise=20.0, seed=seed)
    post = nearest_neighbour_attack(rel)
    assert post.probs.shape == (n, m)
    np.testing.assert_allclose(post.probs.sum(axis=1), 1.0)
    assert (post.probs > 0).all()  # the prior's pseudo-record: never certain of a zero
    assert 1 <= post.diagnostics["neighbours"] <= max(1, n - 1)


def test_refusals():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(50, 2))
    rel = _release(x, np.arange(50) % 2)
    with pytest.raises(ParameterError, match="neighbours must lie"):
        nearest_neighbour_attack(rel, neighbours=51)
    with pytest.raises(ParameterError, match=r"people must be \(n, 2\)"):
        nearest_neighbour_attack(rel, people=np.zeros((3, 3)))
    with pytest.raises(ParameterError, match="prior_weight"):
        nearest_neighbour_attack(rel, prior_weight=0)
    bare = add_noise(_table(x, np.arange(50) % 2), ["x0", "x1"], noise=10.0, keep=[], rng=1)
    with pytest.raises(ParameterError, match="no sensitive column"):
        nearest_neighbour_attack(bare)
    no_custody = type(rel)(rel.table, rel.masked, rel.technique, params=rel.params)
    with pytest.raises(ParameterError, match="custody"):
        nearest_neighbour_attack(no_custody)


def test_the_report_judges_the_attack_on_a_masked_release(tmp_path, registry):
    from privlab.data.datasets import load_dataset

    adult = load_dataset("adult").take(np.arange(2000))
    num = ["age", "education-num", "hours-per-week"]
    rel = microaggregate(adult, num, k=3, keep=[], sensitive="occupation", rng=4)
    rel.save(tmp_path / "m", custody=tmp_path / "m.c", republish=True)
    rep = build(tmp_path / "m", custody=tmp_path / "m.c", progress=False)
    a = rep.attribute
    assert a["measured"] and a["strongest"] == "nearest" and a["sensitive"] == "occupation"
    s = a["attacks"]["nearest"]["summary"]
    finding = next(f for f in rep.verdict["findings"] if "nearest to a person" in f["reason"])
    limit = rep.verdict["thresholds"]["max_at_risk_share"]
    lo, hi = s["at_risk_share_ci"]
    assert finding["level"] == ("FAIL" if lo > limit else "REVIEW" if hi > limit else "PASS")
    assert any("record linkage" in f["reason"] for f in rep.verdict["findings"])
    assert a["baseline_label"].startswith("no learning")
    html = rep.to_html()
    assert "nearest to a person" in html
    # without the custody the attack is not run, and the verdict says why
    rep = build(tmp_path / "m", progress=False)
    assert not rep.attribute["measured"] and "custody" in rep.attribute["why"]


# ------------------------------------------- categorical masking: microaggregation by medoids


def _plain_hamming_linkage(x, xm):
    n = x.shape[0]
    credit = np.zeros(n)
    for i in range(n):
        d = (x != xm[i]).sum(axis=1)
        near = np.flatnonzero(d == d.min())
        credit[i] = 1.0 / near.size if i in near else 0.0
    return credit


def test_hamming_linkage_equals_the_pairwise_definition():
    from privlab.attacks.record_linkage import hamming_linkage

    rng = np.random.default_rng(2)
    for n, p, levels in ((60, 2, 3), (300, 3, 4), (700, 4, 2)):
        x = rng.integers(0, levels, (n, p))
        xm = np.where(rng.random((n, p)) < 0.3, rng.integers(0, levels, (n, p)), x)
        link = hamming_linkage(x, xm)
        np.testing.assert_allclose(link.credit, _plain_hamming_linkage(x, xm))
        assert link.rate.value == pytest.approx(link.credit.mean())
        assert link.interval_share == (x == xm).all(axis=1).mean()
        d = (x[link.nearest] != xm).sum(axis=1)  # a nearest original, at the least distance
        assert all(d[i] == (x != xm[i]).sum(axis=1).min() for i in range(n))
    with pytest.raises(ParameterError, match="one shape"):
        hamming_linkage(np.zeros((3, 2), int), np.zeros((3, 3), int))


def test_hamming_attack_equals_brute_force_and_the_medoid_release():
    from privlab.attacks.nearest import hamming_attack
    from privlab.data.datasets import load_dataset

    adult = load_dataset("adult").take(np.arange(1200))
    qi = ["workclass", "race", "sex", "relationship"]
    rel = microaggregate(adult, qi, k=4, method="medoids", keep=[], sensitive="occupation", rng=1)
    assert rel.categorical and rel.masked == tuple(qi)
    pub, true = rel.codes(), rel.truth_codes()
    # every published combination is a record of the data; each held by k records or more
    combos, counts = np.unique(pub, axis=0, return_counts=True)
    assert counts.min() >= 4
    assert {tuple(c) for c in combos} <= {tuple(t) for t in true}
    # the truth is the input's values, row for row in the published order
    df = adult.to_pandas()[qi]
    got = rel.custody.truth.to_pandas()
    assert sorted(map(tuple, got.astype(str).to_numpy())) == sorted(
        map(tuple, df.astype(str).to_numpy())
    )
    post = hamming_attack(rel)
    codes = rel.table.column("occupation")
    m = len(rel.table.schema["occupation"].domain)
    prior = np.bincount(codes, minlength=m) / codes.size
    for i in range(0, 1200, 97):
        d = (pub != true[i]).sum(axis=1)
        near = d == d.min()
        want = (np.bincount(codes[near], minlength=m) + prior) / (near.sum() + 1)
        np.testing.assert_allclose(post.probs[i], want, atol=1e-12)


def test_medoid_microaggregation_saved_reported_and_from_the_cli(run, tmp_path, registry):
    from privlab.data.datasets import load_dataset
    from privlab.release.base import load_release

    df = load_dataset("adult").take(np.arange(900)).to_pandas()
    df.to_csv(tmp_path / "in.csv", index=False)
    out, cus = tmp_path / "m", tmp_path / "m.c"
    r = run("mask", "microaggregation", tmp_path / "in.csv", "--columns",
            "workclass,race,sex,relationship", "--k", "3", "--method", "medoids",
            "--sensitive", "occupation", "--keep", "", "--out", out, "--custody", cus)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "changed_cells" in r.stdout
    back = load_release(out, custody=cus)
    assert back.categorical and back.technique == "microaggregation"
    # a masked column's published domain is the values it publishes, not the input's
    published = pd.read_csv(out / "masked.csv")
    assert sorted(published.columns) == ["occupation", "race", "relationship", "sex",
                                         "workclass"]  # fmt: skip
    rep = build(out, custody=cus, progress=False)
    link = rep.identity["linkage"]
    assert link["metric"] == "hamming" and 0 <= link["rate"]["value"] <= 1
    assert rep.attribute["measured"] and rep.attribute["strongest"] == "nearest"
    html = rep.to_html()
    assert "hamming distance" in html and "published with their own values unchanged" in html
    with pytest.raises(ParameterError, match="takes no weights"):
        microaggregate(load_dataset("adult").take(np.arange(50)), ["race"], k=3,
                       method="medoids", weights="age")  # fmt: skip


def test_the_report_shows_one_information_loss_figure_only_with_the_custody(tmp_path, registry):
    """The forwarded report's utility holds a masked release's IL1s per cell (the custody's
    figure, exactly) and none of the custody's detailed measures of the input."""
    import json

    rng = np.random.default_rng(4)
    x = rng.normal(size=(400, 2))
    rel = _release(x, np.arange(400) % 3, noise=30.0)
    rel.save(tmp_path / "r", custody=tmp_path / "c", republish=True)
    rep = build(tmp_path / "r", custody=tmp_path / "c", progress=False)
    loss = rel.custody.input_measures["utility"]
    measures = rep.utility["measures"]
    assert measures["information loss IL1s per cell (against the input)"] == loss["il1s_mean"]
    doc = json.dumps(rep.to_dict())
    for detail in ("acov", "eigen", "pmse", "mean_relative"):
        assert detail not in doc
    bare = build(tmp_path / "r", progress=False)
    assert not any("IL1s" in k for k in bare.utility["measures"])
