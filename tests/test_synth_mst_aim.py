"""DP synthetic data (issue 36): the coding of columns, the sampler, the workload error, MST
and AIM over private-pgm, the release, and `privlab synth`."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from privlab.data.table import Table
from privlab.dp.accountant import ZCDPAccountant
from privlab.dp.mechanisms import Exponential
from privlab.dp.zcdp import epsilon_from_rho
from privlab.errors import MissingDependencyError, ParameterError, PrivacyWarning, SchemaError
from privlab.metrics.workload import workload_error
from privlab.publish.synthetic_core import (
    coding,
    draw_column,
)

pytest.importorskip("mbi")

DOMAINS = {"a": ("a0", "a1", "a2"), "b": ("b0", "b1", "b2"), "c": ("c0", "c1", "c2", "c3")}


def small_table(n: int = 3000, seed: int = 0) -> Table:
    g = np.random.default_rng(seed)
    a = g.integers(0, 3, n)
    b = (a + (g.random(n) < 0.2)) % 3  # b follows a
    c = g.integers(0, 4, n)
    x = np.clip(np.round(g.normal(40 + 10 * a, 8, n)), 0, 100)  # x follows a
    df = pd.DataFrame({"a": [f"a{v}" for v in a], "b": [f"b{v}" for v in b],
                       "c": [f"c{v}" for v in c], "x": x})  # fmt: skip
    return Table.from_pandas(df, domains=DOMAINS)


# -- the coding of columns --------------------------------------------------------------------
def test_a_categorical_domain_read_from_the_data_is_refused_unless_accepted():
    t = Table.from_pandas(pd.DataFrame({"a": ["u", "v", "u"], "b": ["p", "q", "q"]}))
    with pytest.raises(ParameterError, match="read from the data"):
        coding(t, ["a", "b"])
    with pytest.warns(PrivacyWarning, match="'a', 'b'"):
        cod = coding(t, ["a", "b"], domain_from_data=True)
    assert cod.shape == (2, 2) and cod.read_from_data() == ["a", "b"]


def test_numeric_bins_on_public_bounds_clip_and_decode_inside_their_bin():
    t = Table.from_pandas(pd.DataFrame({"x": [-5.0, 0.0, 49.0, 50.0, 100.0, 250.0],
                                        "a": ["u"] * 6}), domains={"a": ("u",)})  # fmt: skip
    with pytest.raises(ParameterError, match="no public bounds"):
        coding(t, ["x", "a"])
    cod = coding(t, ["x", "a"], bounds={"x": (0, 100)}, bins=4)
    x = cod.columns[0]
    assert x.numeric and x.size == 4 and x.edges == (0.0, 25.0, 50.0, 75.0, 100.0)
    # clipped to the bounds; 50 opens the third bin; 100 closes the last one
    assert cod.encode(t)[:, 0].tolist() == [0, 0, 1, 2, 3, 3]
    codes = np.repeat(np.arange(4), 500)
    v = x.decode(codes, np.random.default_rng(0))
    assert np.all(v >= np.array(x.edges)[codes]) and np.all(v <= np.array(x.edges)[codes + 1])
    assert np.all(v == np.round(v))  # integer input, integer bounds: integers out
    assert set(v[codes == 0]) == set(range(0, 25))  # every integer of the bin is drawn
    assert set(v[codes == 3]) == set(range(75, 101))  # the last bin is closed


def test_an_integer_column_with_few_values_keeps_one_bin_per_integer():
    t = Table.from_pandas(pd.DataFrame({"e": [1.0, 5.0, 16.0], "a": ["u"] * 3}),
                          domains={"a": ("u",)})  # fmt: skip
    cod = coding(t, ["e", "a"], bounds={"e": (1, 16)}, bins=32)
    e = cod.columns[0]
    assert e.size == 16 and cod.encode(t)[:, 0].tolist() == [0, 4, 15]
    assert np.array_equal(e.decode(np.arange(16), np.random.default_rng(0)), np.arange(1, 17))


def test_bounds_of_an_unknown_or_categorical_column_are_refused():
    t = small_table(50)
    with pytest.raises(SchemaError, match="not synthesized"):
        coding(t, ["a", "x"], bounds={"b": (0, 1)})
    with pytest.raises(ParameterError, match="not numeric"):
        coding(t, ["a", "x"], bounds={"a": (0, 1), "x": (0, 100)})
    with pytest.raises(ParameterError, match="LO < HI"):
        coding(t, ["a", "x"], bounds={"x": (5, 5)})


# -- the sampler ------------------------------------------------------------------------------
def test_draw_column_follows_a_deterministic_conditional_exactly():
    cond = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    parent = np.array([0, 1, 0, 1, 2, 2, 2])
    out = draw_column(cond, parent, np.random.default_rng(0))
    assert out[:4].tolist() == [1, 2, 1, 2]
    assert set(out[4:]) <= {0, 1, 2}  # a row of zeros is drawn uniformly


def test_draw_column_is_stratified_counts_within_two_of_expected_per_group():
    # a category's interval of the CDF holds every slice inside it (one uniform each) and
    # at most one more at each end: |count - m p| < 2, where independent draws stray by
    # sqrt(m p (1 - p)) (about 30 here)
    g = np.random.default_rng(3)
    cond = g.dirichlet(np.ones(5), size=4)
    parent = g.integers(0, 4, 20_000)
    out = draw_column(cond, parent, g)
    for p in range(4):
        rows = parent == p
        counts = np.bincount(out[rows], minlength=5)
        assert np.all(np.abs(counts - cond[p] * rows.sum()) < 2.0)


def test_draw_column_distribution_accepts_the_truth_and_rejects_a_30_percent_wrong_one():
    g = np.random.default_rng(5)
    p = np.array([0.5, 0.3, 0.2])
    # one record a group: no stratification helps, each draw is a plain draw from p
    out = draw_column(np.tile(p, (40_000, 1)), np.arange(40_000), g)
    counts = np.bincount(out, minlength=3)
    assert stats.chisquare(counts, p * counts.sum()).pvalue > 1e-3
    wrong = np.array([0.5 * 1.3, 0.3, 0.2 - 0.15])
    wrong /= wrong.sum()
    assert stats.chisquare(counts, wrong * counts.sum()).pvalue < 1e-6


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 5), st.integers(1, 300), st.integers(0, 2**32 - 1))
def test_draw_column_stays_in_range_and_never_draws_a_zero_probability(n_par, size, rows, seed):
    g = np.random.default_rng(seed)
    cond = g.random((n_par, size)) * (g.random((n_par, size)) < 0.7)
    parent = g.integers(0, n_par, rows)
    out = draw_column(cond, parent, g)
    assert out.shape == (rows,) and out.min() >= 0 and out.max() < size
    has = cond.sum(axis=1) > 0
    ok = ~has[parent] | (cond[parent, out] > 0)
    assert ok.all()


# -- the workload error -----------------------------------------------------------------------
def test_workload_error_exact_values():
    real = np.array([[0, 0], [0, 1], [1, 1], [1, 1]])
    same = real[::-1]
    assert workload_error(real, same, (2, 2), degrees=(1, 2)).mean(2) == 0.0
    other = np.array([[0, 0], [0, 0]])
    w = workload_error(real, other, (2, 2), names=["u", "v"], degrees=(1, 2))
    # u: real (1/2, 1/2) vs (1, 0): 1/2; v: (1/4, 3/4) vs (1, 0): 3/4
    assert w.errors[1] == {("u",): 0.5, ("v",): 0.75}
    assert w.mean(1) == 0.625 and w.worst(1) == (("v",), 0.75)
    assert w.errors[2][("u", "v")] == 0.75  # only cell (0,0) holds 1/4 of the real rows
    assert w.to_dict()["2-way"]["marginals"] == 1
    assert list(w.to_pandas().columns) == ["degree", "marginal", "tvd"]
    with pytest.raises(ParameterError, match="outside the domain"):
        workload_error(real, np.array([[0, 2]]), (2, 2))
    with pytest.raises(ParameterError, match="degree 3"):
        workload_error(real, real, (2, 2), degrees=(3,))


# -- mechanisms: the exponential mechanism in zCDP --------------------------------------------
def test_the_exponential_mechanism_costs_epsilon_squared_over_8_in_zcdp():
    acc = ZCDPAccountant(1.0)
    Exponential(0.4).select(np.array([0.0, 1.0]), rng=np.random.default_rng(0), accountant=acc)
    assert acc.spent == pytest.approx(0.4**2 / 8, rel=1e-15)
    assert acc.ledger[0].epsilon == 0.4


# -- MST and AIM ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fitted():
    from privlab.publish.synthetic import aim, mst

    t = small_table()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = {
            "table": t,
            "mst_hi": mst(t, epsilon=1e4, delta=1e-6, bounds={"x": (0, 100)}, bins=10,
                          iters=400, rng=np.random.default_rng(1)),
            "mst_lo": mst(t, epsilon=0.05, delta=1e-6, bounds={"x": (0, 100)}, bins=10,
                          iters=400, rng=np.random.default_rng(1)),
            "aim": aim(t, epsilon=2.0, delta=1e-6, bounds={"x": (0, 100)}, bins=10,
                       iters=60, rounds=16, max_model_size=1.0, rng=np.random.default_rng(2)),
        }  # fmt: skip
    return out


def test_mst_spends_exactly_its_budget_and_states_the_guarantee_from_the_ledger(fitted):
    r = fitted["mst_hi"]
    p = r.params
    assert p["rho"] <= p["rho_budget"] * (1 + 1e-12)
    assert p["rho"] == pytest.approx(p["rho_budget"], rel=1e-9)
    assert p["epsilon"] == pytest.approx(epsilon_from_rho(p["rho"], 1e-6), rel=1e-12)
    assert p["epsilon"] <= 1e4 * (1 + 1e-9)
    # 4 one-way marginals, then a spanning tree: 3 two-way marginals
    sizes = [len(m["clique"]) for m in p["measurements"]]
    assert sizes == [1, 1, 1, 1, 2, 2, 2]
    assert r.epsilon == p["epsilon"] and r.rho == p["rho"] and r.delta == 1e-6


def test_mst_at_a_large_epsilon_learns_the_tree_the_data_follows(fitted):
    r = fitted["mst_hi"]
    edges = {frozenset(m["clique"]) for m in r.params["measurements"] if len(m["clique"]) == 2}
    assert frozenset({"a", "b"}) in edges and frozenset({"a", "x"}) in edges
    err = r.workload_error()
    assert err["1-way"]["mean"] < 0.01 and err["2-way"]["mean"] < 0.03


def test_a_small_epsilon_gives_a_larger_workload_error(fitted):
    hi, lo = fitted["mst_hi"].workload_error(), fitted["mst_lo"].workload_error()
    assert lo["2-way"]["mean"] > 2 * hi["2-way"]["mean"]


def test_the_synthetic_rows_hold_only_public_values(fitted):
    r = fitted["mst_hi"]
    df = r.to_pandas()
    assert list(df.columns) == ["a", "b", "c", "x"]
    for c, dom in DOMAINS.items():
        assert set(df[c]) <= set(dom)
    assert df["x"].between(0, 100).all() and (df["x"] == df["x"].round()).all()
    assert r.n_rows == pytest.approx(3000, abs=5)  # the model's (noisy) total


def test_aim_spends_its_whole_budget_in_rounds(fitted):
    r = fitted["aim"]
    p = r.params
    assert p["rho"] == pytest.approx(p["rho_budget"], rel=1e-9)
    assert p["rho"] <= p["rho_budget"] * (1 + 1e-12)
    assert p["rounds"] >= 1 and len(p["measurements"]) == 4 + p["rounds"]
    assert p["epsilon"] == pytest.approx(2.0, rel=1e-9)


def test_a_release_saves_loads_and_replays_from_custody(fitted, tmp_path, monkeypatch):
    from privlab.publish.synthetic import SyntheticRelease, mst
    from privlab.release.base import load_release

    monkeypatch.setenv("PRIVLAB_REGISTRY", str(tmp_path / "registry"))
    t = fitted["table"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = mst(t, epsilon=1.0, delta=1e-6, bounds={"x": (0, 100)}, bins=10, iters=200, rng=7)
        r.save(tmp_path / "rel", custody=tmp_path / "cus")
    meta = json.loads((tmp_path / "rel" / "release.json").read_text())
    assert meta["method"] == "dp-synthetic" and meta["parameters"]["synthesizer"] == "mst"
    text = (tmp_path / "rel" / "release.json").read_text()
    assert "seed" not in text and "salt" not in text and "workload" not in text
    back = load_release(tmp_path / "rel", custody=tmp_path / "cus")
    assert isinstance(back, SyntheticRelease)
    pd.testing.assert_frame_equal(back.to_pandas(), r.to_pandas())
    assert back.workload_error() == r.workload_error()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = mst(t, epsilon=1.0, delta=1e-6, bounds={"x": (0, 100)}, bins=10, iters=200,
                    rng=back.custody.replay())  # fmt: skip
    pd.testing.assert_frame_equal(again.to_pandas(), r.to_pandas())
    # the registry counts it as a DP output of the input, with its epsilon
    from privlab._registry import Registry

    entries = Registry().entries(t.fingerprint())
    assert [e["kind"] for e in entries] == ["dp"]
    assert entries[0]["epsilon"] == pytest.approx(r.epsilon)


def test_bad_parameters_are_refused_in_one_sentence():
    from privlab.publish.synthetic import aim, mst

    t = small_table(100)
    for kw, match in (({"epsilon": 0.0}, "epsilon"), ({"epsilon": math.inf}, "finite"),
                      ({"epsilon": 1.0, "delta": 0.0}, "delta"),
                      ({"epsilon": 1.0, "columns": ["a"]}, "at least 2 columns"),
                      ({"epsilon": 1.0, "columns": ["a", "a"]}, "twice"),
                      ({"epsilon": 1.0, "bins": 1}, "bins")):  # fmt: skip
        with pytest.raises((ParameterError, SchemaError), match=match):
            mst(t, bounds={"x": (0, 100)}, **kw)
    with pytest.raises(ParameterError, match="max_model_size"):
        aim(t, epsilon=1.0, bounds={"x": (0, 100)}, max_model_size=0.0)


def test_without_mbi_the_error_says_how_to_install(monkeypatch):
    import builtins

    from privlab.publish import synthetic

    real = builtins.__import__

    def fake(name, *a, **k):
        if name == "mbi" or name.startswith("mbi."):
            raise ImportError("No module named 'mbi'", name="mbi")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(MissingDependencyError, match=r"privlab\[synth\]"):
        synthetic.import_mbi()


# -- the command line -------------------------------------------------------------------------
def test_privlab_synth_mst_writes_a_release_and_its_custody(tmp_path, cli):
    src = tmp_path / "in.csv"
    small_table(600).to_pandas().to_csv(src, index=False)
    dom = ["--domain", "a=a0|a1|a2", "--domain", "b=b0|b1|b2", "--domain", "c=c0|c1|c2|c3"]
    code, out, err = cli("synth", "mst", src, "--epsilon", "2", "--out", tmp_path / "out",
                         "--custody", tmp_path / "cus", "--bounds", "x=0:100", "--bins", "8",
                         "--iters", "100", "--sensitive", "c", "--qi", "a,b", *dom)  # fmt: skip
    assert code == 0, err
    assert "synthetic records of 4 columns" in out + err and "workload error" in out + err
    meta = json.loads((tmp_path / "out" / "release.json").read_text())
    roles = {a["name"]: a["role"] for a in meta["schema"]["attributes"]}
    assert roles == {"a": "qi", "b": "qi", "c": "sensitive", "x": "insensitive"}
    assert (tmp_path / "cus" / "custody.json").is_file()
    # a numeric column without bounds: one line, exit 2, nothing written
    code, out, err = cli("synth", "mst", src, "--epsilon", "1", "--out", tmp_path / "out2", *dom)
    assert code == 2
    assert "no public bounds" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out2").exists()


def test_numpy_marginals_equal_private_pgm_s_own(fitted):
    """ModelMarginals (NumPy) against private-pgm's ``project`` on a fitted model: marginals
    inside a clique, and across cliques (variable elimination)."""
    import itertools

    from privlab.publish import synthetic
    from privlab.publish.synthetic_core import ModelMarginals

    mbi = synthetic.import_mbi()
    t = fitted["table"]
    cod = coding(t, ["a", "b", "c", "x"], bounds={"x": (0, 100)}, bins=10)
    codes = cod.encode(t)
    domain = mbi.Domain(list(cod.names), list(cod.shape))
    ms = []
    for cl in (("a", "b"), ("b", "x"), ("c",)):
        idx = [cod.names.index(c) for c in cl]
        dims = [cod.shape[i] for i in idx]
        x = np.bincount(np.ravel_multi_index(tuple(codes[:, i] for i in idx), dims),
                        minlength=int(np.prod(dims))).astype(float)  # fmt: skip
        ms.append(mbi.LinearMeasurement(x, cl, stddev=1.0))
    with synthetic._float64():
        model = mbi.estimation.MirrorDescent().estimate(domain, ms, iters=200)
        mine = ModelMarginals(model)
        for r in (1, 2, 3):
            for cl in itertools.combinations(cod.names, r):
                ref = np.asarray(model.project(cl).datavector(flatten=False))
                np.testing.assert_allclose(mine.project(cl), ref, rtol=1e-8, atol=1e-8)


def test_the_custody_keeps_the_noise_actually_added(fitted):
    """One record a measured marginal, in ``release.json``'s order, with the sigma stated
    there; the noise's pooled mean square is the discrete Gaussian's (about sigma^2 here)."""
    r = fitted["mst_lo"]
    noise = r.custody.input_measures["noise"]
    public = r.params["measurements"]
    assert len(noise) == len(public)
    assert [n["sigma"] for n in noise] == [m["sigma"] for m in public]
    assert [n["marginal"] for n in noise][:4] == ["1-way a", "1-way b", "1-way c", "1-way x"]
    cells = np.array([n["cells"] for n in noise])
    ms = np.array([n["rms"] ** 2 for n in noise])
    s2 = np.array([n["sigma"] ** 2 for n in noise])
    assert 0.6 < (cells * ms).sum() / (cells * s2).sum() < 1.5
    assert "noise" not in json.dumps(r.parameters()).replace("noise_halved", "")


def test_pooled_repeats_fit_the_same_model_as_separate_measurements():
    """AIM measures a marginal again in a later round; the fit sees one inverse-variance
    pooled measurement per clique.  The model must equal the fit of the separate
    measurements (private-pgm's squared loss: the same gradients), and a pooled pair of
    different sigmas must weigh the precise one more."""
    from privlab.publish import synthetic

    mbi = synthetic.import_mbi()
    g = np.random.default_rng(7)
    domain = mbi.Domain(["a", "b", "c"], [3, 4, 2])
    truth = g.dirichlet(np.ones(24)).reshape(3, 4, 2) * 5000
    ab, c = truth.sum(2).ravel(), truth.sum((0, 1))
    measured = {("a", "b"): [(ab + g.normal(0, 4, 12), 4.0), (ab + g.normal(0, 1, 12), 1.0)],
                ("c",): [(c + g.normal(0, 2, 2), 2.0)]}  # fmt: skip
    separate = [mbi.LinearMeasurement(y, cl, stddev=s) for cl, ys in measured.items()
                for y, s in ys]  # fmt: skip
    pooled = synthetic._pooled(mbi, measured)
    assert [m.clique for m in pooled] == [("a", "b"), ("c",)]
    (y0, _), (y1, _) = measured[("a", "b")]
    np.testing.assert_allclose(pooled[0].noisy_measurement, (y0 / 16 + y1) / (1 / 16 + 1))
    assert pooled[0].stddev == pytest.approx((1 / 16 + 1) ** -0.5, rel=1e-12)
    with synthetic._float64():
        one = mbi.estimation.MirrorDescent().estimate(domain, separate, iters=300)
        two = mbi.estimation.MirrorDescent().estimate(domain, pooled, iters=300)
        for cl in (("a", "b"), ("c",), ("a",)):
            np.testing.assert_allclose(two.project(cl).datavector(), one.project(cl).datavector(),
                                       rtol=1e-6, atol=1e-6)  # fmt: skip


def test_jax_keeps_its_programs_in_privlab_s_cache_folder_unless_told_otherwise(tmp_path):
    """The first import of private-pgm points JAX's persistent cache at privlab's cache
    folder (``$PRIVLAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/privlab``), keeps every program
    however fast it compiled, and caps the folder; a folder the user gave JAX stays."""
    import os
    import subprocess
    import sys

    code = (
        "import jax, privlab.publish.synthetic as s; s.import_mbi(); c = jax.config; "
        "print(c.jax_compilation_cache_dir, c.jax_persistent_cache_min_compile_time_secs, "
        "c.jax_compilation_cache_max_size)"
    )
    base = {k: v for k, v in os.environ.items()
            if k not in ("PRIVLAB_CACHE_DIR", "JAX_COMPILATION_CACHE_DIR")}  # fmt: skip

    def cache(**env):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={**base, **env}, timeout=120, check=True)  # fmt: skip
        return r.stdout.split()

    from privlab.publish.synthetic import CACHE_MAX_BYTES

    assert cache(PRIVLAB_CACHE_DIR=str(tmp_path / "c")) == [
        str(tmp_path / "c" / "jax"), "0.0", str(CACHE_MAX_BYTES)]  # fmt: skip
    assert cache(XDG_CACHE_HOME=str(tmp_path / "x"))[0] == str(tmp_path / "x" / "privlab" / "jax")
    mine = cache(XDG_CACHE_HOME=str(tmp_path / "x"), JAX_COMPILATION_CACHE_DIR=str(tmp_path / "u"))
    assert mine == [str(tmp_path / "u"), "0.0", "-1"]
