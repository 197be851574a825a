"""Quick runs of the reproductions that the other test modules do not run end to end.

Each asserts the result.json row fields the issues name and the paper's qualitative finding
at quick size (the full runs and their numbers are in the closing notes, not in tests).
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from privlab.experiments import run_experiment
from reproduction_checks import check_id3_rows


def _run(tmp_path, experiment_id):
    res = run_experiment(experiment_id, quick=True, seed=0, out=tmp_path / "r", progress=False)
    on_disk = json.loads((tmp_path / "r" / "result.json").read_text())
    assert on_disk["experiment"] == experiment_id and on_disk["rows"] == res.rows
    for plot in res.plots:
        assert (tmp_path / "r" / plot).read_bytes()[:4] == b"\x89PNG"
    return res


def _by(rows, *keys):
    return {tuple(r[k] for k in keys): r for r in rows}


def test_definetti_table7_quick(tmp_path):
    from privlab.experiments.definetti_table7 import CEILING_DRAWS, DRAWS

    res = _run(tmp_path, "definetti-table7")
    draws = DRAWS[True]
    # the attacked draws' rows (draws beyond them carry the ceiling alone)
    per_draw = [r for r in res.rows if isinstance(r["draw"], int) and r["draw"] < draws]
    mean = _by([r for r in res.rows if r["draw"] == "mean"], "group_size", "grouping", "run")
    runs = {"min", "max", "pooled", "baseline", "nb-true"}
    for d in range(draws):
        rows = _by([r for r in per_draw if r["draw"] == d and r["grouping"] == "xiao-tao"],
                   "group_size", "run")  # fmt: skip
        pairs = _by([r for r in per_draw if r["draw"] == d and r["grouping"] == "random pairs"],
                    "run")  # fmt: skip
        assert set(pairs) == {(r,) for r in runs}
        assert pairs[("baseline",)]["acc"] == pytest.approx(0.5, abs=0.03)
        for l in (2, 3, 4):
            for run in runs:
                assert {"abs", "ssq", "acc", "seconds", "value_sets"} <= set(rows[(l, run)])
            assert rows[(l, "baseline")]["acc"] == pytest.approx(1 / l, abs=0.03)
            assert rows[(l, "pooled")]["acc"] > rows[(l, "baseline")]["acc"] + 0.05
            assert rows[(l, "pooled")]["abs"] < rows[(l, "baseline")]["abs"]
            assert rows[(l, "min")]["acc"] <= rows[(l, "max")]["acc"]
            # the perfectly learned model is the better attacker on every release
            assert rows[(l, "nb-true")]["acc_all_tuples"] > rows[(l, "pooled")]["acc_all_tuples"]
    # the summary rows are the mean and range of the draws' rows
    for (l, grouping, run), m in mean.items():
        acc = [r["acc"] for r in per_draw
               if (r["group_size"], r["grouping"], r["run"]) == (l, grouping, run)]  # fmt: skip
        assert m["draws"] == len(acc) == draws
        assert (m["acc_min"], m["acc_max"]) == (min(acc), max(acc))
        assert m["acc"] == pytest.approx(np.mean(acc), abs=1e-4)
    assert {(l, "xiao-tao", "pooled") for l in (2, 3, 4)} <= set(mean)
    # the ceiling over every draw: the attacked releases' first, then ceiling-only draws
    for l in (2, 3, 4):
        over = next(r for r in res.rows if r["run"] == "nb-true" and r["group_size"] == l
                    and str(r["draw"]).startswith("all"))  # fmt: skip
        mine = [r["acc_all_tuples"] for r in per_draw if r["run"] == "nb-true"
                and r["grouping"] == "xiao-tao" and r["group_size"] == l]  # fmt: skip
        assert over["draws"] == CEILING_DRAWS[True] == len(over["per_draw"])
        assert over["per_draw"][:draws] == mine
        assert over["acc_all_tuples_min"] == min(over["per_draw"])
    assert "over 2 draws" in res.notes and "naive-Bayes ceiling" in res.notes


def test_definetti_table7_true_parameter_ceiling_by_hand():
    """The nb-true posterior at l = 2 against naive Bayes counted with pandas on the true
    table and the two assignments of each pair enumerated by hand."""
    from privlab.data.datasets import load_adult
    from privlab.experiments._adult import QI, SENSITIVE, adult_release
    from privlab.experiments.definetti_table7 import true_parameter_posterior, value_sets

    release = adult_release(2, np.random.default_rng(3))
    probs = true_parameter_posterior(release, load_adult())
    df = load_adult().to_pandas()
    occ = list(release.partition().sensitive.domain)
    n_s = df[SENSITIVE].value_counts()
    cond = {q: df.groupby([SENSITIVE, q], observed=True).size() for q in QI}
    qit = release.quasi_identifiers().to_pandas()

    def score(row: int, s: str) -> float:
        return n_s[s] * np.prod([cond[q].get((s, qit.at[row, q]), 0) / n_s[s] for q in QI])

    part = release.partition()
    for g in np.random.default_rng(0).choice(part.n_groups, 40, replace=False):
        a, b = np.flatnonzero(part.group_of == g)
        u, v = (occ[i] for i in np.flatnonzero(part.counts[g]))
        keep, swap = score(a, u) * score(b, v), score(a, v) * score(b, u)
        assert probs[a, occ.index(u)] == pytest.approx(keep / (keep + swap), rel=1e-6)
        assert probs[b, occ.index(u)] == pytest.approx(swap / (keep + swap), rel=1e-6)
    pairs = {frozenset(np.flatnonzero(c)) for c in part.counts}
    assert value_sets(release) == len(pairs)


def test_em_table43_quick(tmp_path):
    res = _run(tmp_path, "em-table4.3")
    for l in (2, 3, 4):
        base = [r for r in res.rows if r["group_size"] == l and r["run"] == "baseline"]
        mean = [r for r in res.rows if r["group_size"] == l and r["run"] == "mean"]
        assert base[0]["acc"] == pytest.approx(100 / l, abs=0.01)
        assert mean and all(r["acc"] > base[0]["acc"] for r in mean if r["init"] != "dirichlet")
        assert {"min", "max"} <= {r["run"] for r in res.rows if r["group_size"] == l}


def test_calibration_table51_quick(tmp_path):
    from privlab.experiments.calibration_table5 import CAP, RESTARTS

    res = _run(tmp_path, "calibration-table5.1")
    rows = _by(res.rows, "group_size", "e_step", "stopping", "probabilities")
    for l in (2, 3, 4):
        for rule in ("thesis", "tolerance"):
            raw = rows[(l, "approximate", rule, "raw")]
            cal = rows[(l, "approximate", rule, "calibrated")]
            for r in (raw, cal):
                assert 0 <= r["cal"] <= r["bs"] and 0 <= r["ref"] <= r["bs"]
                assert len(r["bs_restarts"]) == RESTARTS[True] == r["restarts"]
                assert r["bs_min"] <= r["bs"] <= r["bs_max"]
                # the restart kept is the one the release's likelihood (groups summed out)
                # prefers; the blind log posterior's pick is reported beside it
                keep = int(np.argmax(r["release_loglik_restarts"]))
                blind = int(np.argmax(r["log_posterior_restarts"]))
                assert r["selected_restart"] == keep and r["bs"] == r["bs_restarts"][keep]
                assert r["bs_by_log_posterior"] == r["bs_restarts"][blind]
            # Table 5.1: Ch. 5.3's calibration lowers both the Brier score and its CAL term
            assert cal["bs"] < raw["bs"] and cal["cal"] < raw["cal"]
        thesis = rows[(l, "approximate", "thesis", "raw")]
        assert all(i % 10 == 0 and i <= CAP[True] for i in thesis["iterations_restarts"])
        assert all(i <= 300 for i in rows[(l, "approximate", "tolerance", "raw")]
                   ["iterations_restarts"])  # fmt: skip
        assert rows[(l, "exact", "tolerance", "raw")]["bs"] < thesis["bs"]
    assert "Sec. 4.5" in res.notes and len(res.plots) == 3


def test_approximate_em_restart_follows_fit_em():
    """The experiments' approximate-EM loop is fit_em's path: the tolerance stop equals
    fit_em(max_iter=300, tol=1e-9), the thesis's stop fit_em run for as many steps, and the
    fast assignment count the attack's Hungarian assignment (on ties-free responsibilities)."""
    from privlab.attacks._layout import layout_of
    from privlab.attacks.em import fit_em, most_probable_assignment
    from privlab.experiments._adult import AssignmentHits, adult_release, approximate_em_restart

    for l in (2, 4):
        release = adult_release(l, np.random.default_rng(1))
        lay, truth = layout_of(release), release.truth
        out = approximate_em_restart(lay, truth, np.random.default_rng(7), cap=250)
        ref = fit_em(lay, approximate=True, init="dirichlet", max_iter=300, tol=1e-9,
                     rng=np.random.default_rng(7))  # fmt: skip
        tol = out["tolerance"]
        assert np.array_equal(ref.psi, tol.psi) and np.array_equal(ref.w, tol.w)
        assert ref.log_posterior == tol.log_posterior and ref.converged == tol.by_rule
        assert tol.accuracy == np.mean(ref.assignment == truth)
        thesis = out["thesis"]
        assert thesis.iterations == 250 and not thesis.by_rule  # the cap
        ref = fit_em(lay, approximate=True, init="dirichlet", max_iter=250, tol=-1.0,
                     rng=np.random.default_rng(7))  # fmt: skip
        assert np.array_equal(ref.psi, thesis.psi) and np.allclose(ref.gamma, thesis.gamma)
        gamma = np.random.default_rng(l).random((truth.size, lay.n_values))
        hits = AssignmentHits(lay, truth, np.arange(truth.size))(gamma)
        assert hits == int((most_probable_assignment(gamma, lay) == truth).sum())


def test_dptree_deeper_and_adult_quick(tmp_path):
    res = _run(tmp_path / "deeper", "dptree-deeper")
    assert {r["criterion"] for r in res.rows} >= {"info_gain", "gini", "max", "noisy_counts"}
    assert all({"records", "criterion", "accuracy"} <= set(r) for r in res.rows)
    res = _run(tmp_path / "adult", "dptree-adult")
    assert {r["epsilon"] for r in res.rows} == {0.5, 1.0, 2.0, 5.0, 10.0}
    at = _by(res.rows, "epsilon", "model")
    for eps in (0.5, 1.0, 2.0, 5.0, 10.0):
        for m in ("info_gain", "gini", "max", "noisy_counts", "non-private"):
            assert {"accuracy", "std"} <= set(at[(eps, m)])
        # better than the majority class (75.2%) and below the non-private tree
        assert 0.76 < at[(eps, "max")]["accuracy"] <= at[(eps, "non-private")]["accuracy"] + 0.01


def test_compare_to_peers_says_what_diffprivlib_trees_are():
    from privlab.experiments.dptree import CRITERIA, PEER_CAVEAT, compare_to_peers

    rows = [{"epsilon": 1.0, "model": m, "accuracy": 0.80} for m in CRITERIA]
    rows += [{"epsilon": 1.0, "model": "diffprivlib-tree", "accuracy": 0.76},
             {"epsilon": 1.0, "model": "diffprivlib-forest", "accuracy": 0.75}]  # fmt: skip
    text = compare_to_peers(rows)
    assert text.startswith("privlab's default criterion (max, fixed in advance) beats both")
    assert text.endswith(PEER_CAVEAT) and "says nothing about learning" in PEER_CAVEAT
    rows[list(CRITERIA).index("max")]["accuracy"] = 0.70
    assert "does NOT beat both" in compare_to_peers(rows)


def test_dptree_dpforest_adult_quick(tmp_path, monkeypatch):
    """Quick run without diffprivlib (its rows are skipped with a note), then the diffprivlib
    model alone when it is installed."""
    import numpy as np

    from privlab.experiments import dptree

    peers = dptree.diffprivlib_models()
    monkeypatch.setattr(dptree, "diffprivlib_models", lambda: None)
    res = _run(tmp_path, "dpforest-adult")
    monkeypatch.undo()
    assert "diffprivlib is not installed" in res.notes and "over 2 noise draws" in res.notes
    at = _by(res.rows, "epsilon", "model")
    models = {"privlab-tree", "privlab-forest-10", "privlab-forest-3", "non-private-tree"}
    assert {m for _, m in at} == models and {e for e, _ in at} == {0.1, 1.0}
    for eps in (0.1, 1.0):
        ref = at[(eps, "non-private-tree")]["accuracy"]
        assert 0.83 < ref < 0.85
        for m in models - {"non-private-tree"}:
            r = at[(eps, m)]
            assert r["draws"] == 2 and 0.75 <= r["accuracy"] <= ref + 0.01
    assert at[(1.0, "privlab-tree")]["accuracy"] > 0.80  # measured 0.827 +- 0.005 (20 draws)
    assert at[(1.0, "privlab-forest-3")]["accuracy"] > 0.80  # 0.824 +- 0.009
    if peers is not None:
        _, _, X, y, sizes, bounds = dptree.adult_forest_data()
        model = dptree.forest_models(1.0, 0, sizes, bounds)["diffprivlib-forest-10"]
        model.fit(X[:3000], y[:3000])
        assert 0.7 < np.mean(model.predict(X[3000:]) == y[3000:]) < 0.85


def test_cost_of_privacy_quick(tmp_path):
    res = _run(tmp_path, "cost-of-privacy")
    fields = {"workload", "model", "parameter", "a_know", "a_acc", "u_base", "u_san", "u_max"}
    assert all(fields <= set(r) for r in res.rows)
    occ = [r for r in res.rows if r["workload"] == "occupation"]
    for r in occ:
        assert 0 <= r["u_base"] <= r["u_max"] <= 1 and 0 <= r["a_acc"] <= 1
    # Brickell & Shmatikov: where the miner gains over U_base the adversary gains as much
    assert all(r["a_acc"] >= r["u_san"] - r["u_base"] - 0.01 for r in occ)
    assert len(res.plots) == 1
    # the neutral workload: salary for every release and model, the same privacy columns
    neu = _by([r for r in res.rows if r["workload"] == "salary"], "parameter", "model")
    assert set(neu) == {(r["parameter"], r["model"]) for r in occ}
    for r in occ:
        n = neu[(r["parameter"], r["model"])]
        assert (n["a_know"], n["a_acc"], n["node"]) == (r["a_know"], r["a_acc"], r["node"])
        assert n["u_base"] == max(n["u_base_s"], n["u_base_q"])
        assert 0.75 <= n["u_base_s"] <= n["u_max"] <= 0.85  # Adult: 75% earn <= 50K
    for m in ("decision_tree", "naive_bayes"):  # no sanitization: U_san is U_max
        assert neu[("original", m)]["u_san"] == neu[("original", m)]["u_max"]


def test_pram_mgas_quick(tmp_path):
    res = _run(tmp_path, "pram-mgas")
    (e22,) = [r for r in res.rows if r["part"] == "E2.2"]
    assert e22["n"] == 100_000 and e22["min_group_count"] >= 1500
    assert e22["min_group_width"] >= 0.25 and 30 <= e22["n_groups"] <= 45  # thesis: 39
    assert e22["l1_density_em"] < 0.2  # accurate reconstruction (Fig. 2.3)
    sweep = [r for r in res.rows if r["part"] == "Fig 3.4b"]
    at = {(r["retention"], r["n"]): r["l1_density_em"] for r in sweep}
    assert at[(1.0, 100_000)] < at[(0.1, 100_000)]  # Fig 3.4b: L1 falls with retention


def test_generalization_peers_quick(tmp_path):
    res = _run(tmp_path, "generalization-peers")
    fields = {"tool", "k", "seconds", "discernibility", "avg_class_size", "suppressed"}
    assert all(fields <= set(r) for r in res.rows)
    by = {(r["tool"], r["k"]): r for r in res.rows}
    ours = by[("privlab", 10)]
    assert ours["min_class"] >= 10 and ours["suppressed"] == 0
    if ("anjana", 10) in by:  # bench extra installed
        assert ours["discernibility"] <= by[("anjana", 10)]["discernibility"]


def test_side_by_side_puts_the_paper_beside_privlab():
    from privlab.experiments import side_by_side

    rows = [
        {"group_size": 2, "run": "pooled", "acc": 0.7215, "seconds": 42.8},
        {"group_size": 2, "run": "baseline", "acc": 0.5},
        {"group_size": 3, "run": "pooled", "acc": 0.551},
    ]
    paper = [
        {"group_size": 2, "run": "pooled", "acc": 0.77},
        {"group_size": 2, "run": "baseline", "acc": 0.5},
    ]
    out = side_by_side(rows, paper)
    assert out == [
        {"group_size": 2, "run": "pooled", "acc": (0.7215, 0.77)},
        {"group_size": 2, "run": "baseline", "acc": (0.5, 0.5)},
    ]
    # nothing in common to compare: the caller prints the paper on its own
    assert side_by_side(rows, [{"finding": "qualitative"}]) is None
    assert side_by_side(rows, []) is None


def test_alphabeta_adult_quick(tmp_path):
    res = _run(tmp_path, "alphabeta-adult")
    util = [r for r in res.rows if r["part"] == "utility"]
    priv = [r for r in res.rows if r["part"] == "privacy"]
    assert util and len(util) == len(priv)
    for r in util:  # Thm 4.4: (rho, epsilon)-useful with privlab's bound
        assert r["within_rho"] >= r["target"] and r["rho_bernstein"] < r["rho_chebyshev"]
        assert r["empirical_rho"] <= r["rho_bernstein"]
    for r in priv:  # Thm 4.3 taken with equality: the posterior at prior d is gamma
        assert r["posterior_in_view"] == pytest.approx(r["gamma"], abs=1e-5)
        assert r["monte_carlo_in_view"] == pytest.approx(r["gamma"], abs=0.02)
        assert r["adult_share_real"] == pytest.approx(r["adult_posterior_exact"], abs=0.02)
        assert r["ratio_not_in_view"] >= r["d_over_gamma"]  # no negative leakage


def test_marginals_adult_quick(tmp_path):
    res = _run(tmp_path, "marginals-adult")
    summary = [r for r in res.rows if r["part"] == "summary"]
    assert {r["k"] for r in summary} == {10, 50}
    for r in summary:  # the seed: marginals lower KL against the single table
        assert r["marginals_added"] >= 1 and r["kl_with_marginals"] < r["kl_single_table"]
        assert r["base_k"] >= r["k"] and r["k_link_min_cell"] >= r["k"]
        assert r["maxent_distinct_l"] >= 2
        steps = [s["kl"] for s in res.rows if s["part"] == "search" and s["k"] == r["k"]]
        assert steps == sorted(steps, reverse=True) and steps[-1] == r["kl_with_marginals"]
    learn = _by([r for r in res.rows if r["part"] == "classifier"], "k", "target")
    assert set(learn) == {(k, t) for k in (10, 50) for t in ("salary", "occupation")}
    for r in learn.values():
        assert r["test_rows"] == 15060 and r["train_rows"] == 30162  # adult-test, all of adult
        for key in ("acc_original", "acc_single_table", "acc_with_marginals", "acc_majority"):
            assert 0 < r[key] < 1
        assert r["acc_original"] > r["acc_majority"]  # naive Bayes learns on the real data
        assert r["acc_original"] > max(r["acc_single_table"], r["acc_with_marginals"])
    for k in (10, 50):  # salary is generalized away in the base: the marginals restore it
        assert learn[(k, "salary")]["acc_with_marginals"] > (
            learn[(k, "salary")]["acc_single_table"] + 0.1
        )
    combi = [r for r in res.rows if r["part"] == "k-combinatorial"]
    assert combi and all(r["lp_minus_ilp_max"] >= 0 for r in combi)
    for r in combi:
        assert r["k_combinatorial"] == (r["combinations_below_k"] == 0)


def test_id3_fig78_quick(tmp_path):
    check_id3_rows(_run(tmp_path, "id3-fig7.8").rows)  # id3-fig7.9 runs in the README's tour


def test_sdc_tradeoff_quick(tmp_path):
    """Issue 35: on Adult's numbers the record-linkage risk falls and the information loss
    rises as MDAV's k or the noise grows (sdcMicro's documented behaviour)."""
    res = _run(tmp_path, "sdc-tradeoff")
    assert len(res.plots) == 1
    for tech in ("mdav", "additive noise"):
        rows = sorted((r for r in res.rows if r["technique"] == tech), key=lambda r: r["level"])
        assert len(rows) >= 3
        link = [r["linkage_rate"] for r in rows]
        loss = [r["il1s_mean"] for r in rows]
        assert all(a > b for a, b in itertools.pairwise(link)), link
        assert all(a < b for a, b in itertools.pairwise(loss)), loss
        for r in rows:
            assert r["linkage_low"] <= r["linkage_rate"] <= r["linkage_high"]
    # microaggregation keeps the means: its pMSE (main effects) is far below its null
    assert all(r["pmse_ratio"] < 0.05 for r in res.rows if r["technique"] == "mdav")
