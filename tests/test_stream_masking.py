"""The stream engine of the per-row masking methods (issue 35): noise (additive, correlated,
Kim) and top/bottom coding at given codes over a Parquet file read in batches.

Oracles: the memory engine's moments (``numpy.cov``, its weighted covariance) for the first
pass, exact to rounding; the custody's truth, row-aligned with the release, for the noise's
distribution (fixed generators, large n, explicit tolerances: the true sd accepted, a 30%
wrong one rejected) and for the deterministic limits (noise 0 is the identity, codes clip
exactly as in memory); the memory engine's ``numeric_utility`` for the information loss."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from privlab.errors import MissingValuesError, ParameterError, PrivlabError, SchemaError
from privlab.metrics.numeric_utility import numeric_utility
from privlab.publish import masking_core as core
from privlab.publish.masking import MaskedRelease, add_noise, top_bottom_code
from privlab.publish.stream_masking import StreamedMaskedRelease, column_moments
from privlab.release.base import EngineRelease, load_release

COLS = ["a", "b", "c"]


def _frame(n: int, seed: int = 0) -> pd.DataFrame:
    """Three correlated numeric columns far from 0 (a large offset tests the moments), an
    integer one, a category, a group and positive weights."""
    g = np.random.default_rng(seed)
    z = g.standard_normal((n, 3))
    a = 1e4 + 3.0 * z[:, 0]
    b = 50.0 + 2.0 * z[:, 0] + 1.5 * z[:, 1]
    c = g.integers(18, 90, n)  # integers, many ties
    return pd.DataFrame({
        "a": a, "b": b, "c": c, "s": g.choice(["x", "y", "z"], n),
        "k": g.integers(0, 4, n), "w": g.uniform(1.0, 4.0, n),
    })  # fmt: skip


@pytest.fixture
def parquet(tmp_path):
    def make(n: int = 2000, seed: int = 0, row_group: int = 700, frame=None):
        df = _frame(n, seed) if frame is None else frame
        path = tmp_path / f"in-{n}-{seed}.parquet"
        df.to_parquet(path, row_group_size=row_group, index=False)
        return path, df

    return make


def _pairs(release) -> tuple[np.ndarray, np.ndarray]:
    """(true values, published values) of the masked columns, row-aligned (custody)."""
    return release.truth_values(), release.values()


# -- the first pass: exact moments -------------------------------------------------------------
@pytest.mark.parametrize("batch_rows", [1, 7, 333, 2000, 5000])
def test_the_first_pass_gives_the_memory_engines_moments(parquet, batch_rows):
    """Batches of any size, merged by Chan's update: the covariance (so each sd, ddof 1) is
    numpy.cov's to 1e-12 relative; weighted, the memory engine's weighted one."""
    path, df = parquet(2000)
    x = df[COLS].to_numpy(dtype=float)
    m = column_moments(path, COLS, batch_rows=batch_rows)
    assert m.n == 2000 and m.total == 2000.0
    np.testing.assert_allclose(m.mean, x.mean(axis=0), rtol=1e-14)
    np.testing.assert_allclose(np.sqrt(np.diag(m.cov())), x.std(axis=0, ddof=1), rtol=1e-12)
    _same_cov(m.cov(), np.cov(x, rowvar=False))
    np.testing.assert_array_equal(m.low, x.min(axis=0))
    np.testing.assert_array_equal(m.high, x.max(axis=0))
    w = df["w"].to_numpy()
    mw = column_moments(path, COLS, weights="w", batch_rows=batch_rows)
    mean, cov, total = core._moments(x, w)
    np.testing.assert_allclose(mw.mean, mean, rtol=1e-14)
    np.testing.assert_allclose(np.diag(mw.cov()), np.diag(cov), rtol=1e-12)
    _same_cov(mw.cov(), cov)
    assert mw.total == pytest.approx(total, rel=1e-14)
    # a summary travels as a flat vector (Spark's partitions) and merges the same
    back = core.Moments.from_state(m.state(), 3)
    np.testing.assert_array_equal(back.cov(), m.cov())
    half = core.Moments(3).add(x[:900]).merge(core.Moments(3).add(x[900:]))
    _same_cov(half.cov(), np.cov(x, rowvar=False))


def _same_cov(got: np.ndarray, want: np.ndarray) -> None:
    """Equal to 1e-12 on the scale of the entries' sds (an entry near 0, two independent
    columns, has a larger relative error after thousands of merges)."""
    scale = np.sqrt(np.outer(np.diag(want), np.diag(want)))
    np.testing.assert_allclose(got / scale, want / scale, rtol=0, atol=1e-12)


def test_the_loss_from_moments_is_the_memory_engines_without_the_pmse():
    g = np.random.default_rng(3)
    x = g.normal(size=(3000, 3)) * [1.0, 10.0, 100.0] + [5.0, -3.0, 1e3]
    y = x + g.normal(size=x.shape)
    w = g.uniform(1, 2, 3000)
    for weights in (None, w):
        acc = core.LossSums(3, weights is not None)
        for lo in range(0, 3000, 700):
            acc.add(x[lo : lo + 700], y[lo : lo + 700],
                    None if weights is None else weights[lo : lo + 700])  # fmt: skip
        got, want = acc.utility(), numeric_utility(x, y, weights=weights).to_dict()
        for key in ("il1s", "il1s_mean", "eigen", "amean", "acov", "acor"):
            assert got[key] == pytest.approx(want[key], rel=1e-9), key
        np.testing.assert_allclose(got["il1s_columns"], want["il1s_columns"], rtol=1e-9)
        assert got["pmse"]["value"] is None and got["pmse"]["computed"] is False
        assert got["weighted"] is (weights is not None)
    assert "computed" not in numeric_utility(x, y).to_dict()["pmse"]  # memory: unchanged
    const = core.LossSums(1, False)
    const.add(np.ones((5, 1)), np.ones((5, 1)))
    assert const.utility() == {}  # a constant column: not measured, as in memory


# -- the noise's distribution ------------------------------------------------------------------
def test_additive_noise_has_sd_noise_over_100_times_the_columns(parquet):
    """e = published - true, row-aligned by the custody: e_j / (k s_j) is N(0, 1) (the
    variance's chi-square test and the KS test accept k s_j and reject 1.3 k s_j and 0.7 k
    s_j); the columns' noises are independent; the release shuffles the input's order."""
    n = 60_000
    frame = _frame(n, seed=1).sort_values("b").reset_index(drop=True)
    path, df = parquet(n, frame=frame, row_group=9000)
    with pytest.warns(Warning):  # the caller's generator: an experiment
        s = add_noise(path, COLS, noise=50.0, engine="stream", rng=np.random.default_rng(11),
                      batch_rows=7000)  # fmt: skip
    rel = s.collect()
    truth, pub = _pairs(rel)
    e = pub - truth
    sd = df[COLS].to_numpy(float).std(axis=0, ddof=1) * 0.5
    for j in range(3):
        for factor, accept in ((1.0, True), (1.3, False), (0.7, False)):
            stat = np.sum(e[:, j] ** 2) / (factor * sd[j]) ** 2  # chi2(n), mean known 0
            p = 2 * min(stats.chi2.cdf(stat, n), stats.chi2.sf(stat, n))
            ks = stats.kstest(e[:, j] / (factor * sd[j]), "norm").pvalue
            if accept:
                assert p > 1e-3 and ks > 1e-3, (j, p, ks)
            else:
                assert p < 1e-12 and ks < 1e-12, (j, factor, p, ks)
    r = np.corrcoef(e, rowvar=False)
    assert np.abs(r[np.triu_indices(3, 1)]).max() < 5 / math.sqrt(n)
    # the input was sorted by b: the published order says nothing of it
    rho = stats.spearmanr(truth[:, 1], np.arange(n)).statistic
    assert abs(rho) < 5 / math.sqrt(n)


@pytest.mark.parametrize("method", ["correlated", "kim"])
def test_correlated_and_kim_noise_follow_alpha_times_the_covariance(parquet, method):
    """The noise's covariance is alpha S (S the data's, from the first pass): each entry
    within 5 sd of alpha S_jk, and a 30% wrong alpha rejected; Kim's transformation is
    undone with its c and the mean."""
    n = 40_000
    path, df = parquet(n, seed=2, row_group=5000)
    x = df[COLS].to_numpy(float)
    alpha = 0.8
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = add_noise(path, COLS, noise=100 * alpha, method=method, engine="stream",
                        rng=np.random.default_rng(5), batch_rows=6000).collect()  # fmt: skip
    truth, pub = _pairs(rel)
    mean, cov, total = core._moments(x, None)
    if method == "kim":
        c = math.sqrt((total - 1.0) / (total * (1.0 + alpha) - 1.0))
        pub = (pub - (1.0 - c) * mean) / c
    e = pub - truth
    got = e.T @ e / n  # mean 0 known
    sd = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov**2) / n) * alpha
    assert np.all(np.abs(got - alpha * cov) < 5 * sd), (got, alpha * cov)
    wrong = 1.3 * alpha * cov
    assert np.any(np.abs(got - wrong) > 20 * sd)
    # the sd of a column's noise: accepted at sqrt(alpha) s_j, rejected 30% off
    for j in range(3):
        s_j = math.sqrt(alpha * cov[j, j])
        for factor, accept in ((1.0, True), (1.3, False)):
            stat = np.sum(e[:, j] ** 2) / (factor * s_j) ** 2
            p = 2 * min(stats.chi2.cdf(stat, n), stats.chi2.sf(stat, n))
            assert (p > 1e-3) if accept else (p < 1e-12), (j, factor, p)


# -- the deterministic limits ------------------------------------------------------------------
@pytest.mark.parametrize("method", ["additive", "correlated", "kim"])
def test_noise_zero_publishes_each_row_unchanged(parquet, method):
    path, df = parquet(900, row_group=200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = add_noise(path, COLS, noise=0.0, method=method, keep=["s"], engine="stream",
                        rng=np.random.default_rng(1), batch_rows=128).collect()  # fmt: skip
    truth, pub = _pairs(rel)
    np.testing.assert_array_equal(pub, truth)
    rows = sorted(map(tuple, np.column_stack([truth, rel.table.column("s")]).tolist()))
    codes = rel.table.schema["s"].encode(df["s"].to_numpy())
    assert rows == sorted(map(tuple, np.column_stack([df[COLS].to_numpy(float), codes]).tolist()))


def test_codes_clip_exactly_as_in_memory(parquet):
    """Top/bottom coding at given codes: each published value is the memory engine's for
    its record (the same (true, published, kept) rows), the parameters are its."""
    path, df = parquet(1500, row_group=400)
    kw = dict(top=[10_003.0, 52.0, 65], bottom=[9_997.0, 48.0, 20], keep=["k"], sensitive="s")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = top_bottom_code(path, COLS, engine="stream", rng=np.random.default_rng(0),
                            batch_rows=256, **kw)  # fmt: skip
        mem = top_bottom_code(df, COLS, rng=np.random.default_rng(0), **kw)
    rel = s.collect()
    assert s.parameters == mem.parameters() and s.metadata == mem.metadata()
    truth, pub = _pairs(rel)
    np.testing.assert_array_equal(pub, np.clip(truth, [9_997.0, 48.0, 20], [10_003.0, 52.0, 65]))

    def rows(r):
        t, p = _pairs(r)
        kept = np.column_stack([r.table.decode(c) for c in ("k", "s")]).astype(str)
        return sorted(zip(map(tuple, t.tolist()), map(tuple, p.tolist()), map(tuple, kept)))

    assert rows(rel) == rows(mem)
    assert rel.table.schema == mem.table.schema  # the same domains and roles
    # codes that code nothing: the identity
    none = top_bottom_code(path, ["a"], top=math.inf, engine="stream", rng=np.random.default_rng(0))
    t, p = _pairs(none.collect())
    np.testing.assert_array_equal(t, p)


# -- the release -------------------------------------------------------------------------------
def test_the_saved_release_is_the_memory_engines_layout(parquet, tmp_path):
    """save() writes masked.parquet and release.json (custody: truth.parquet): load_release
    reads a MaskedRelease with its custody, equal to collect() row for row; the truth is
    the input's rows; the information loss is in custody only; the report judges it."""
    from privlab.report import build

    path, df = parquet(3000, seed=4)
    s = add_noise(path, COLS, noise=80.0, keep=["k"], sensitive="s", weights="w", rng=5,
                  engine="stream", batch_rows=700)  # fmt: skip
    assert isinstance(s, StreamedMaskedRelease) and isinstance(s, EngineRelease)
    assert "salt" not in repr(s) and s.source.names == ("s", "k", "w")  # kept columns only
    s.save(tmp_path / "rel", custody=tmp_path / "cd")
    assert sorted(p.name for p in (tmp_path / "rel").iterdir()) == ["masked.parquet",
                                                                    "release.json"]  # fmt: skip
    assert sorted(p.name for p in (tmp_path / "cd").iterdir()) == ["custody.json",
                                                                   "truth.parquet"]  # fmt: skip
    back = load_release(tmp_path / "rel", custody=tmp_path / "cd")
    assert isinstance(back, MaskedRelease) and back.technique == "noise"
    assert back.parameters() == {"technique": "noise", "method": "additive", "noise": 80.0,
                                 "weights": "w"}  # fmt: skip
    roles = {a.name: a.role.value for a in back.table.schema.attributes}
    assert roles == {"a": "qi", "b": "qi", "c": "qi", "s": "sensitive", "k": "insensitive",
                     "w": "insensitive"}  # fmt: skip
    mem = s.collect()
    np.testing.assert_array_equal(back.values(), mem.values())
    np.testing.assert_array_equal(back.truth_values(), mem.truth_values())
    np.testing.assert_array_equal(back.weights(), mem.weights())
    assert back.public_schema() == mem.public_schema()
    truth = back.truth_values()
    x = df[COLS].to_numpy(float)
    assert sorted(map(tuple, truth.tolist())) == sorted(map(tuple, x.tolist()))
    # the kept columns and weights travel with their records
    got = sorted(zip(map(tuple, truth.tolist()), back.table.decode("s"), back.weights()))
    want = sorted(zip(map(tuple, x.tolist()), df["s"], df["w"]))
    assert got == want
    # the information loss: the memory engine's measures (weighted), from the moments
    loss = back.custody.input_measures["utility"]
    want_loss = numeric_utility(truth, back.values(), weights=back.weights()).to_dict()
    for key in ("il1s", "il1s_mean", "eigen", "amean", "acov", "acor"):
        assert loss[key] == pytest.approx(want_loss[key], rel=1e-9), key
    assert "il1s" not in (tmp_path / "rel" / "release.json").read_text()
    custody = json.loads((tmp_path / "cd" / "custody.json").read_text())
    assert custody["input_file_sha256"] and custody["seed"]["salt"]
    rep = build(tmp_path / "rel", custody=tmp_path / "cd")
    assert rep.identity["linkage"]["columns"] == COLS
    assert rep.identity["linkage"]["n_masked"] == 3000


def test_a_streamed_masking_release_replays_from_its_custody(parquet, tmp_path):
    from privlab.release.base import Custody

    path, _ = parquet(800, row_group=150)
    kw = dict(noise=60.0, keep=["k"], engine="stream", batch_rows=100)
    add_noise(path, COLS, rng=7, **kw).save(tmp_path / "one", custody=tmp_path / "one.cd")
    again = add_noise(path, COLS, rng=Custody.load(tmp_path / "one.cd").replay(), **kw)
    again.save(tmp_path / "two", custody=tmp_path / "two.cd")
    for name in ("masked.parquet", "release.json"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    with pytest.raises(PrivlabError, match="already has 1 release"):  # a fresh draw is refused
        add_noise(path, COLS, rng=7, **kw).save(tmp_path / "three")


def test_refusals_are_one_line(parquet, tmp_path):
    path, df = parquet(300)
    with pytest.raises(ParameterError, match=r"does not sort the columns.*--top"):
        top_bottom_code(path, ["a"], top_quantile=0.9, engine="stream")
    with pytest.raises(ParameterError, match="'s' is not numeric"):
        add_noise(path, ["a", "s"], engine="stream")
    with pytest.raises(SchemaError, match="unknown column 'nope'"):
        add_noise(path, ["a"], keep=["nope"], engine="stream")
    with pytest.raises(SchemaError, match="both masked and kept"):
        add_noise(path, ["a"], keep=["a"], engine="stream")
    with pytest.raises(ParameterError, match="method must be one of"):
        add_noise(path, ["a"], method="magic", engine="stream")
    with pytest.raises(ParameterError, match="reads a Parquet file: give its path"):
        add_noise(df, ["a"], engine="stream")
    with pytest.raises(ParameterError, match="schema= applies"):
        from privlab.data.schema import Schema

        add_noise(df, ["a"], schema=Schema(()))
    with pytest.raises(ParameterError, match="engine must be one of"):
        add_noise(path, ["a"], engine="gpu")
    const = df.assign(a=1.0)
    const.to_parquet(tmp_path / "const.parquet")
    with pytest.raises(ParameterError, match="'a' is constant"):
        add_noise(tmp_path / "const.parquet", ["a", "b"], engine="stream")
    bad = df.assign(b=df["b"].where(df.index != 250))  # a missing value (null in Parquet)
    bad.to_parquet(tmp_path / "na.parquet")
    with pytest.raises(MissingValuesError, match="'b'"):
        add_noise(tmp_path / "na.parquet", ["a", "b"], engine="stream")
    inf = df.assign(b=np.where(df.index == 250, np.inf, df["b"]))
    inf.to_parquet(tmp_path / "inf.parquet")
    with pytest.raises(ParameterError, match=r"'b' holds a non-finite value.*record 251"):
        add_noise(tmp_path / "inf.parquet", ["a", "b"], engine="stream", batch_rows=100)
    neg = df.assign(w=np.where(df.index == 7, -1.0, df["w"]))
    neg.to_parquet(tmp_path / "neg.parquet")
    with pytest.raises(ParameterError, match=r"weights 'w' must be positive.*record 8"):
        add_noise(tmp_path / "neg.parquet", ["a"], weights="w", engine="stream")
    # top coding has no first pass: the error comes while writing, and nothing is left
    coded = top_bottom_code(tmp_path / "inf.parquet", ["b"], top=50.0, engine="stream",
                            batch_rows=100)  # fmt: skip
    with pytest.raises(ParameterError, match="record 251"):
        coded.save(tmp_path / "out", custody=tmp_path / "out.cd")
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.cd").exists()


def test_cli_mask_engine_stream(run, parquet, tmp_path):
    path, df = parquet(1200)
    out, cd = tmp_path / "n", tmp_path / "n.cd"
    r = run("mask", "noise", path, "--columns", "a,b", "--keep", "k", "--sensitive", "s",
            "--noise", "40", "--out", out, "--custody", cd, "--seed", "2", "--engine", "stream",
            "--batch-rows", "250")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "added additive noise (40) of 1,200 records (a, b, streamed)" in r.stdout
    assert "il1s" in r.stdout and "not published (no role): c, w" in r.stderr
    back = load_release(out, custody=cd)
    assert back.n_rows == 1200 and back.masked == ("a", "b")
    r = run("report", out, "--custody", cd, "--out", tmp_path / "r.html", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1])["level"] in ("PASS", "REVIEW", "FAIL")
    r = run("mask", "topcode", path, "--columns", "c", "--top", "70", "--bottom", "25",
            "--out", tmp_path / "t", "--engine", "stream", "--republish")  # fmt: skip
    assert r.returncode == 0, r.stderr
    t = pd.read_parquet(tmp_path / "t" / "masked.parquet")
    assert t["c"].max() == 70 and t["c"].min() == 25
    assert sorted(t["c"]) == sorted(np.clip(df["c"], 25, 70))
    for args, needle in (
        (["topcode", path, "--columns", "c", "--top-quantile", "0.9"], "--top"),
        (["noise", path, "--columns", "a", "--replay", cd], "--replay"),
        (["noise", tmp_path / "in.csv", "--columns", "a"], "Parquet"),
        (["noise", path, "--columns", "a", "--seed", "3"], "--custody"),
    ):
        r = run("mask", *args, "--out", tmp_path / "bad", "--engine", "stream")
        assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr, args
        assert not (tmp_path / "bad").exists()
