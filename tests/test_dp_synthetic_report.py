"""The report of a DP synthetic release (issue 36): the guarantee against the policy, the
synthetic-data assessment with the membership test against the DP bound, the workload error
and the classifier trained on synthetic rows; `privlab report --original --control`."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from privlab.data.table import Table

pytest.importorskip("mbi")

DOMAINS = {"a": ("a0", "a1", "a2"), "b": ("b0", "b1", "b2"), "s": ("no", "yes")}


def people(n: int, seed: int) -> pd.DataFrame:
    g = np.random.default_rng(seed)
    a = g.integers(0, 3, n)
    b = (a + (g.random(n) < 0.2)) % 3
    s = (g.random(n) < 0.2 + 0.25 * a).astype(int)  # the sensitive value follows a
    x = np.clip(np.round(g.normal(40 + 8 * a, 10, n)), 0, 100)
    return pd.DataFrame({"a": [f"a{v}" for v in a], "b": [f"b{v}" for v in b],
                         "x": x, "s": np.array(["no", "yes"])[s]})  # fmt: skip


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    from privlab.publish.synthetic import mst

    where = tmp_path_factory.mktemp("dpsyn")
    members = people(1500, 1)
    control = people(1500, 2)
    t = Table.from_pandas(members, domains=DOMAINS)
    schema = t.schema.with_roles(qi=["a", "b", "x"], sensitive="s")
    t = Table(t.codes, schema)
    out = {}
    for eps in (1.0, 20.0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rel = mst(t, epsilon=eps, delta=1e-6, bounds={"x": (0, 100)}, bins=10, iters=300,
                      rng=np.random.default_rng(3))  # fmt: skip
            rel.save(where / f"eps{eps:g}", not_for_publication=True)
        out[eps] = where / f"eps{eps:g}"
    members.to_csv(where / "members.csv", index=False)
    control.to_csv(where / "control.csv", index=False)
    return where, out, members, control


def _report(directory, members, control, **kw):
    from privlab.report.dp_synthetic import report_dp_synthetic

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return report_dp_synthetic(directory, members, control=control, attack_salt=5, **kw)


def test_the_guarantee_is_judged_against_the_policy(released):
    from privlab.report.config import parse_config

    _, dirs, members, control = released
    rep = _report(dirs[1.0], members, control)
    first = rep.verdict["findings"][0]
    assert first["level"] == "PASS" and "epsilon = 1," in first["reason"]
    assert "delta = 1e-06" in first["reason"]
    # written as an experiment (the caller's own generator): FAIL, with the next step
    assert rep.verdict["level"] == "FAIL"
    assert any("experiment" in f["reason"] and f["level"] == "FAIL"
               for f in rep.verdict["findings"])  # fmt: skip
    strict = parse_config({"thresholds": {"max_epsilon": 0.5}})
    rep = _report(dirs[1.0], members, control, config=strict)
    assert rep.verdict["findings"][0]["level"] == "FAIL"
    assert "epsilon <= 0.5" in rep.verdict["next_step"]
    g = rep.header["guarantee"]
    assert g["synthesizer"] == "mst" and g["epsilon"] == pytest.approx(1.0)
    assert rep.header["method"] == "dp-synthetic"


def test_membership_stays_within_the_dp_bound(released):
    from privlab.attacks.membership_inference import dp_advantage_bound

    _, dirs, members, control = released
    rep = _report(dirs[1.0], members, control)
    m = rep.identity["membership"]
    assert m["measured"] and m["dp"]["bound"] == pytest.approx(dp_advantage_bound(1.0, 1e-6))
    assert not m["dp"]["violated"] and m["dp"]["consistent"]
    assert any("membership" in f["reason"].lower() or "advantage" in f["reason"]
               for f in rep.verdict["findings"])  # fmt: skip


def test_utility_workload_error_and_classifier(released):
    from privlab.metrics.workload import workload_error
    from privlab.publish.synthetic import SyntheticRelease
    from privlab.publish.synthetic_core import coding

    _, dirs, members, control = released
    rep = _report(dirs[20.0], members, control)
    w = rep.utility["workload"]
    assert set(w) == {"1-way", "2-way", "3-way"} and w["2-way"]["marginals"] == 6
    # the same figure as coding the real rows with the release's own bins
    rel = SyntheticRelease.load(dirs[20.0])
    t = Table.from_pandas(members, domains=DOMAINS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cod = coding(t, ["a", "b", "x", "s"], bounds={"x": (0, 100)}, bins=10)
        syn = Table.from_pandas(rel.to_pandas(), domains=DOMAINS)
    real = cod.encode(t)
    fake = np.stack([cod.columns[j].encode_values(syn.to_pandas()[c].to_numpy())
                     for j, c in enumerate(cod.names)], axis=1)  # fmt: skip
    ref = workload_error(real, fake, cod.shape, names=cod.names).to_dict()
    assert w["2-way"]["mean"] == pytest.approx(ref["2-way"]["mean"], abs=1e-12)
    c = rep.utility["classifier"]
    assert c["target"] == "s" and c["test_rows"] == 1500
    # at epsilon 20 the synthetic rows teach the classifier what the real ones do
    assert c["synthetic"]["value"] > c["majority"]["value"]
    assert abs(c["synthetic"]["value"] - c["real"]["value"]) < 0.05


def test_the_page_shows_the_guarantee_and_the_marginals(released):
    _, dirs, members, control = released
    page = _report(dirs[1.0], members, control).to_html()
    assert "differential privacy (MST)" in page and "zero-concentrated DP" in page
    assert "Marginals: how far" in page and "3-way" in page
    assert "Can one tell who it was made from?" in page


def test_privlab_report_of_a_synthetic_release(released, cli, tmp_path):
    where, dirs, _, _ = released
    code, out, err = cli("report", dirs[1.0], "--out", tmp_path / "r.html")
    assert code == 2 and "give --original" in err
    code, out, err = cli("report", dirs[1.0], "--out", tmp_path / "r.html", "--original",
                         where / "members.csv", "--control", where / "control.csv",
                         "--json")  # fmt: skip
    assert code == 0, err
    verdict = json.loads(out)
    assert verdict["level"] == "FAIL"  # an experiment's file
    assert (tmp_path / "r.html").is_file()
    code, out, err = cli("report", where / "nope", "--out", tmp_path / "x.html", "--control",
                         where / "control.csv")  # fmt: skip
    assert code == 2


@pytest.mark.parametrize("rows, limit, one_thread", [(600, 50_000, True), (600, 500, False)])
def test_the_classifiers_fit_on_one_openmp_thread_only_below_the_limit(
    monkeypatch, rows, limit, one_thread
):
    """Small training sets fit on one OpenMP thread (threads cost more than they gain there);
    from ``ONE_THREAD_BELOW`` rows on, scikit-learn's own threads, as outside the call.  The
    accuracy is the same either way (the gradient boosting draws nothing from the threads)."""
    import sklearn.ensemble  # noqa: F401  (loads scikit-learn's OpenMP library)
    from threadpoolctl import threadpool_info, threadpool_limits

    from privlab.report import dp_synthetic

    def openmp() -> set[int]:
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "openmp"}

    seen: list[set[int]] = []
    fit = dp_synthetic._classifier

    def watched(*args):
        seen.append(openmp())
        return fit(*args)

    g = np.random.default_rng(0)
    df = pd.DataFrame({"a": g.integers(0, 5, rows), "b": g.choice(list("xyz"), rows)})
    df["y"] = np.where(df["a"] + g.integers(0, 2, rows) > 3, "hi", "lo")
    monkeypatch.setattr(dp_synthetic, "_classifier", watched)
    monkeypatch.setattr(dp_synthetic, "ONE_THREAD_BELOW", limit)
    with threadpool_limits(limits=2, user_api="openmp"):
        outside = openmp()
        if not outside:
            pytest.skip("no OpenMP library found by threadpoolctl")
        out = dp_synthetic.train_synthetic_test_real(df, df, df, "y", ["a"])
        assert openmp() == outside  # restored after the call
    assert seen == [{1} if one_thread else outside] * 2
    assert out["real"]["value"] == out["synthetic"]["value"] > out["majority"]["value"]
