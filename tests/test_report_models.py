"""`privlab report` on releases attacked through a model of them: anonymized marginals (the
max-ent attack on the people) and alpha-beta views (the membership attack)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from privlab.attacks.marginals import marginals_attack
from privlab.data.datasets import load_adult
from privlab.data.table import Table
from privlab.metrics.calibration import evaluate
from privlab.publish.alpha_beta import alphabeta
from privlab.publish.marginals import publish_marginals
from privlab.report import FAIL, PASS, REVIEW, build, parse_config

QI = ("workclass", "sex", "salary", "race")
SENSITIVE = "relationship"
SECTIONS = ("header", "verdict", "identity", "attribute", "utility", "diagnostics")


def _longest(v) -> int:
    if isinstance(v, dict):
        return max((_longest(x) for x in v.values()), default=0)
    if isinstance(v, list):
        return max([len(v), *(_longest(x) for x in v)])
    return 0


def _lengths(v) -> set[int]:
    if isinstance(v, dict):
        return set().union(*(_lengths(x) for x in v.values()))
    if isinstance(v, list):
        return {len(v)}.union(*(_lengths(x) for x in v))
    return set()


@pytest.fixture(scope="module")
def people():
    return load_adult().take(np.arange(3000))


@pytest.fixture(scope="module")
def marginals_release(people, tmp_path_factory):
    where = tmp_path_factory.mktemp("marg")
    rel = publish_marginals(people, qi=QI, sensitive=SENSITIVE, k=10, l=2, dataset="adult")
    assert len(rel.marginals) >= 2
    rel.save(where / "rel", custody=where / "custody")
    return where, rel


def test_report_on_marginals_attacks_the_people(marginals_release, people):
    where, rel = marginals_release
    rep = build(where / "rel", custody=where / "custody", population=people,
                config=parse_config({}), person_risk=where / "risk.csv")  # fmt: skip
    a = rep.attribute
    assert a["measured"] and a["n"] == 3000 and set(a["attacks"]) == {"maxent"}
    res = a["attacks"]["maxent"]
    post, base = marginals_attack(rel, people, return_baseline=True)
    truth = rel.attributes[-1].encode(people.decode(SENSITIVE))
    # what is known without the release: the people's shares of the sensitive values
    prior = np.bincount(truth, minlength=post.probs.shape[1]) / truth.size
    ev = evaluate(post.probs, truth, threshold=0.8, known=prior)
    assert res["summary"]["acc"] == pytest.approx(ev.acc)
    assert res["summary"]["at_risk_share"] == pytest.approx(ev.at_risk_share)
    flat = evaluate(post.probs, truth, threshold=0.8).at_risk_share
    assert res["summary"]["absolute"]["at_risk_share"] == pytest.approx(flat)
    # the histogram of each person's share of the doubt removed: 20 equal bins over [0, 1]
    hist = res["top_histogram"]
    np.testing.assert_allclose(hist["edges"], np.linspace(0.0, 1.0, 21))
    gain = ((post.probs - prior) / (1 - prior)).clip(0, 1).max(axis=1)
    expect, _ = np.histogram(gain, bins=20, range=(0.0, 1.0))
    assert hist["counts"] == expect.tolist() and sum(hist["counts"]) == 3000
    # random worlds (each class's shares of the true values) is the base-table-alone attack
    rw = evaluate(base.probs, truth, threshold=0.8, known=prior)
    assert res["random_worlds"]["acc"] == pytest.approx(rw.acc)
    assert res["random_worlds"]["at_risk_share"] == pytest.approx(rw.at_risk_share)
    assert rep.verdict["level"] in (PASS, REVIEW, FAIL) and rep.verdict["reasons"]
    assert a["population_matches_release"]
    more = build(where / "rel", population=load_adult().take(np.arange(3001)),
                 config=parse_config({}))  # fmt: skip
    assert more.attribute["measured"] and not more.attribute["population_matches_release"]
    # the same people with two sexes swapped: every marginal without sex is unchanged, the
    # base table's counts are not, so the people are not the release's records
    df = people.to_pandas()
    i = int(np.flatnonzero(df["sex"] == "Male")[0])
    others = ["workclass", "salary", "race", SENSITIVE]
    j = int(np.flatnonzero((df["sex"] == "Female")
                           & (df[others] != df.loc[i, others]).all(axis=1))[0])  # fmt: skip
    df.loc[[i, j], "sex"] = ["Female", "Male"]
    swapped = build(where / "rel", population=Table.from_pandas(df), config=parse_config({}))
    assert not swapped.attribute["population_matches_release"]
    assert rep.identity["judged"]  # the base table's classes are what a person links to
    # the utility shown is read from the published counts: KL(max-ent || base's max-ent),
    # which by the Pythagorean identity of nested max-ent fits is the drop of KL(data ||
    # max-ent) along the search (measured on the data, kept in custody only)
    u = rep.utility["measures"]
    kl = rel.kl_path
    assert not [k for k in u if "data" in k]
    assert u["KL removed by the marginals (nats)"] == pytest.approx(kl[0] - kl[-1], rel=1e-6)
    assert "maximum-entropy" in rep.header["threat_model"]
    doc = json.loads(rep.to_json())
    assert set(doc) >= set(SECTIONS)
    assert _longest(doc) < 3000  # no per-person list in the report
    risk = pd.read_csv(where / "risk.csv")  # the per-person risks go to the custody only
    assert len(risk) == 3000
    np.testing.assert_allclose(risk["maxent_top_probability"], post.probs.max(axis=1), atol=1e-6)
    top = risk["maxent_top_probability"].to_numpy()
    assert (top == np.round(top, 6)).all() and (top != np.round(top, 5)).any()  # 6 places
    html = rep.to_html()
    assert f">{rep.verdict['level']}<" in html


def test_report_on_marginals_without_people_is_review(marginals_release):
    where, _ = marginals_release
    rep = build(where / "rel", custody=where / "custody", config=parse_config({}))
    assert not rep.attribute["measured"] and rep.verdict["level"] == REVIEW
    assert "--population" in rep.verdict["reasons"][0]


def _alphabeta(tmp_path, people, d, gamma=0.5, rng=3):
    rel = alphabeta(people, columns=list(QI), d=d, gamma=gamma, rng=rng)
    # a generator of the test's draws an experiment, written as such
    rel.save(
        tmp_path / "ab", custody=tmp_path / "abc", not_for_publication=not isinstance(rng, int)
    )
    return rel


def test_report_on_alphabeta_judges_the_membership_posterior(tmp_path, people):
    import warnings

    df = people.to_pandas()
    share = len(df[list(QI)].drop_duplicates()) / np.prod([people.schema[c].size for c in QI])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = _alphabeta(tmp_path, people, d=0.05)  # d far below the share of real tuples
    assert 0.3 < share < 0.55
    rep = build(tmp_path / "ab", custody=tmp_path / "abc", config=parse_config({}))
    a = rep.attribute
    assert a["measured"] and a["n"] == rel.n_rows and a["sensitive"] == "real"
    at_d = a["attacks"]["membership"]
    est = a["attacks"]["membership-estimated-prior"]
    # at the release's d the posterior is gamma exactly (Thm 4.3 taken with equality): no
    # tuple reaches 0.8; the adversary who estimates n/m from the view is far surer
    assert at_d["diagnostics"]["max_posterior"] == pytest.approx(0.5)
    assert at_d["summary"]["at_risk_share"] == 0.0
    assert est["diagnostics"]["prior"] > 0.3 and est["summary"]["at_risk_share"] == 1.0
    assert a["strongest"] == "membership-estimated-prior"
    # being surely inserted discloses no one: only "real" has a threshold to reach
    from privlab.attacks.alphabeta import VALUES

    for res in (at_d, est):
        assert res["threshold_per_value"] == {VALUES[0]: 1.0, VALUES[1]: 0.8}
    assert rep.verdict["level"] == FAIL and "real with probability" in rep.verdict["reasons"][0]
    assert "share of real tuples" in rep.verdict["next_step"]
    assert not rep.identity["judged"] and "unique" in rep.identity["why_not_judged"]
    # the accuracy is the share of real rows at the attack's top guesses, computed again here
    real = rel.with_custody(tmp_path / "abc", None).is_real
    assert est["summary"]["acc"] == pytest.approx(real.mean())
    # the curves: the share of tuples whose probability of being real reaches each point,
    # for the attack and for random worlds (each group's share of real tuples)
    from privlab.attacks.alphabeta import alphabeta_attack, estimated_prior
    from privlab.metrics.calibration import random_worlds_probs
    from privlab.report.build import SURVIVAL_X

    def survival(p):
        return [round(float((p >= x - 1e-9).mean()), 6) for x in SURVIVAL_X]

    held = rel.with_custody(tmp_path / "abc", None)
    post = alphabeta_attack(held, prior=estimated_prior(held))
    curves = a["top_survival"]
    assert curves["membership-estimated-prior attack"] == survival(post.probs[:, 1])
    rw = random_worlds_probs(post.group_id, real.astype(np.int64), 2)
    assert curves["no learning (random worlds)"] == survival(rw[:, 1])
    assert survival(rw[:, 1]) != survival(rw[:, 0])  # the real column, not the inserted one
    # a view has no classes of people to disclose a value of: max_disclosure is 0
    assert held.privacy().max_disclosure is None and a["max_disclosure"] == 0.0
    # no secret: neither the salt nor which rows are real
    custody = json.loads((tmp_path / "abc" / "custody.json").read_text())
    salt = str(custody["seed"]["salt"])
    text, html = rep.to_json(), rep.to_html()
    assert len(salt) > 20 and salt not in text and salt not in html
    assert rel.n_rows not in _lengths(json.loads(text))  # no per-row list


def test_report_on_alphabeta_with_an_honest_d_passes_the_attribute_check(tmp_path, people):
    # d = 0.55 above the share of real tuples (0.47): the adversary at d is at gamma, the
    # one who estimates the share from the view near it, both below the 0.8 threshold
    # a Generator, used as given: an integer seed is salted with OS entropy, and this view of
    # a 160-cell domain is so small (about 30 rows) that n~/m swings from 0.02 to 0.93
    rel = _alphabeta(tmp_path, people, d=0.55, gamma=0.75, rng=np.random.default_rng(3))
    rep = build(tmp_path / "ab", custody=tmp_path / "abc", config=parse_config({}))
    attacks = rep.attribute["attacks"]
    assert attacks["membership"]["diagnostics"]["max_posterior"] == pytest.approx(0.75)
    for res in attacks.values():
        assert res["diagnostics"]["max_posterior"] < 0.8
        assert res["summary"]["at_risk_share"] == 0.0
    assert rep.verdict["level"] in (PASS, REVIEW)
    assert rel.n_rows > 0


def test_report_on_alphabeta_without_custody_is_review(tmp_path, people):
    _alphabeta(tmp_path, people, d=0.55, gamma=0.75)
    rep = build(tmp_path / "ab", config=parse_config({}))
    assert not rep.attribute["measured"] and rep.verdict["level"] == REVIEW
    assert "custody" in rep.verdict["reasons"][0]


def test_report_command_on_marginals(run, marginals_release, people, tmp_path):
    where, _ = marginals_release
    src = tmp_path / "people.csv"
    people.to_pandas().to_csv(src, index=False)
    r = run("report", where / "rel", "--population", src, "--out", tmp_path / "r.html")
    assert r.returncode == 0, r.stderr
    assert "verdict:" in r.stdout
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["attribute"]["measured"] and doc["verdict"]["level"] in (PASS, REVIEW, FAIL)


# -- --attacks on a release attacked through its model ---------------------------------------
def test_attacks_option_is_honoured_or_refused_on_marginals(marginals_release, people):
    from privlab.errors import ParameterError

    where, _ = marginals_release
    cfg = parse_config({})
    named = build(where / "rel", population=people, config=cfg, attacks=("maxent",))
    default = build(where / "rel", population=people, config=cfg)
    assert set(named.attribute["attacks"]) == {"maxent"}
    # equal, NaN included (an at-risk precision with nobody at risk)
    np.testing.assert_equal(named.attribute["attacks"], default.attribute["attacks"])
    cases = {("definetti",): "definetti", ("em",): "em", ("maxent", "em"): "em",
             ("membership",): "membership"}  # fmt: skip
    for bad, named_bad in cases.items():
        with pytest.raises(
            ParameterError, match=f"attack '{named_bad}' does not apply to a marginals release"
        ):
            build(where / "rel", population=people, config=cfg, attacks=bad)


def test_attacks_option_on_alphabeta_and_a_model_attack_elsewhere(tmp_path, people):
    from privlab.errors import ParameterError
    from privlab.publish.generalization import generalize

    _alphabeta(tmp_path, people, d=0.55, gamma=0.75)
    cfg = parse_config({})
    rep = build(tmp_path / "ab", custody=tmp_path / "abc", config=cfg, attacks=("membership",))
    assert set(rep.attribute["attacks"]) == {"membership", "membership-estimated-prior"}
    with pytest.raises(ParameterError, match="'definetti' does not apply to an alphabeta release"):
        build(tmp_path / "ab", custody=tmp_path / "abc", config=cfg, attacks=("definetti",))
    gen = generalize(people, qi=list(QI), sensitive=SENSITIVE, k=5, dataset="adult")
    with pytest.raises(ParameterError, match="'maxent' does not apply to a generalization"):
        build(gen, config=cfg, attacks=("maxent",))


def test_report_command_refuses_an_attack_a_marginals_release_does_not_take(
    run, marginals_release, people, tmp_path
):
    from conftest import fails

    where, _ = marginals_release
    src = tmp_path / "people.csv"
    people.to_pandas().to_csv(src, index=False)
    before = sorted(p.name for p in tmp_path.iterdir())
    for bad in ("definetti", "em", "maxent,em"):
        fails(
            run("report", where / "rel", "--population", src, "--attacks", bad,
                "--out", tmp_path / "r.html"),
            "does not apply to a marginals release", "--attacks maxent",
        )  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written
    r = run("report", where / "rel", "--population", src, "--attacks", "maxent",
            "--out", tmp_path / "r.html")  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    assert set(doc["attribute"]["attacks"]) == {"maxent"}


def test_report_shows_k_combinatorial_and_the_largest_max_ent_posterior(marginals_release):
    """The report's figures carry k-combinatorial anonymity (the exact ILP: 840 leaf cells)
    and the largest max-ent posterior F2(s | q) (privlab issue 31)."""
    from privlab.publish.marginals import k_combinatorial

    where, rel = marginals_release
    rep = build(where / "rel", config=parse_config({}))
    u = rep.utility["measures"]
    holds, maxima = k_combinatorial(rel.marginals, rel.names, rel.sizes, SENSITIVE, 10)
    assert u["k_combinatorial_checked"] is True and u["k_combinatorial"] is holds is True
    assert u["k_combinatorial_min"] == maxima[maxima > 0].min() >= 10
    probs = np.moveaxis(rel.maxent().probs, rel.names.index(SENSITIVE), -1)
    probs = probs.reshape(-1, probs.shape[-1])
    mass = probs.sum(axis=1)
    top = (probs[mass > 1e-9] / mass[mass > 1e-9, None]).max()
    assert u["maxent_max_posterior"] == pytest.approx(top, rel=1e-9)
    assert rep.to_json()  # serializable with the new figures


def test_the_release_trained_model_is_laplace_smoothed_naive_bayes_over_group_shares(
    tmp_path, people, monkeypatch
):
    """The utility section's release-trained learner (random worlds on Anatomy): each
    published row weighted by its group's share of every sensitive value, ``alpha = 1``.
    Its fitted parameters are checked against the closed form computed here with numpy,
    so a wrong weighting (shares times sizes) or smoothing (alpha 0) shows."""
    import importlib

    import sklearn.naive_bayes as skl_nb

    from privlab.publish.anatomy import anatomize

    build_mod = importlib.import_module("privlab.report.build")

    fitted = []

    class Spy(skl_nb.CategoricalNB):
        def fit(self, X, y, sample_weight=None):
            fitted.append((self, np.asarray(X), np.asarray(y), sample_weight))
            return super().fit(X, y, sample_weight=sample_weight)

    monkeypatch.setattr(skl_nb, "CategoricalNB", Spy)
    qi, s = ("sex", "race"), "relationship"
    rel = anatomize(people.take(np.arange(600)), l=2, qi=list(qi), sensitive=s, rng=5)
    part = rel.partition()
    hold = tmp_path / "hold.csv"
    people.take(np.arange(600, 1400)).to_pandas()[[*qi, s]].to_csv(hold, index=False)
    out = build_mod._anatomy_learner(rel, part, str(hold))
    assert len(fitted) == 2  # on the release, then on the truth in custody
    model = fitted[0][0]
    # closed form: weighted counts n[c, j, k] = sum of the shares of value c of the rows
    # whose QI j is k; log P(k | c) = log (n + 1) / (n_c + K_j)
    sizes = np.bincount(part.group_of, minlength=part.counts.shape[0])
    share = part.counts / sizes[:, None]  # (groups, m)
    w = share[part.group_of]  # (n, m)
    codes = rel.quasi_identifiers().codes
    m = part.counts.shape[1]
    n_c = w.sum(axis=0)
    present = np.flatnonzero(n_c > 0)
    np.testing.assert_allclose(np.exp(model.class_log_prior_), n_c[present] / n_c.sum())
    for j, K in enumerate(rel.quasi_identifiers().schema.sizes):
        n = np.zeros((m, K))
        for c in range(m):
            np.add.at(n[c], codes[:, j], w[:, c])
        expect = (n + 1.0) / (n.sum(axis=1, keepdims=True) + K)
        np.testing.assert_allclose(np.exp(model.feature_log_prob_[j]), expect[present])
    assert out["tested_on"] + out["dropped"] == 800
    assert 0.0 <= out["accuracy_release"] <= 1.0
    majority = int(np.argmax(n_c))
    test_s = people.take(np.arange(600, 1400)).decode(s)
    assert out["majority_baseline"] == pytest.approx(
        np.mean(test_s == part.sensitive.domain[majority])
    )


def test_report_on_alphabeta_without_d_runs_the_estimated_prior_attack_alone(tmp_path, people):
    """An alpha-beta view published from alpha and beta alone states no ``d``: there is no
    guaranteed prior to attack at, so only the adversary who estimates the share of real
    tuples from the view is run and judged."""
    import warnings

    with warnings.catch_warnings():  # the domain read from the data: not this test's point
        warnings.simplefilter("ignore")
        rel = alphabeta(people, columns=list(QI), alpha=0.3, beta=0.2,
                        rng=np.random.default_rng(3))  # fmt: skip
    assert rel.d is None
    rel.save(tmp_path / "ab", custody=tmp_path / "abc", not_for_publication=True)
    rep = build(tmp_path / "ab", custody=tmp_path / "abc", config=parse_config({}))
    a = rep.attribute
    assert a["measured"] and a["n"] == rel.n_rows
    assert list(a["attacks"]) == ["membership-estimated-prior"]
    assert a["strongest"] == "membership-estimated-prior"
    assert list(rep.diagnostics["attacks"]) == ["membership-estimated-prior"]


def test_a_single_marginal_removes_no_kl_and_the_report_shows_none(people, tmp_path):
    """With one marginal (the base table alone; k = 1,000 admits no other) nothing is fitted
    beyond it: the utility section shows no "KL removed" figure (with two or more it does,
    test_report_on_marginals_attacks_the_people)."""
    rel = publish_marginals(people, qi=QI, sensitive=SENSITIVE, k=1000, l=2, dataset="adult")
    assert len(rel.marginals) == 1 and len(rel.kl_path) == 1
    rel.save(tmp_path / "one", custody=tmp_path / "one.custody")
    rep = build(tmp_path / "one", config=parse_config({}))
    assert not any("KL removed" in k for k in rep.utility["measures"])
    assert rep.utility["measures"]  # the other measures are there
