"""Nothing leaks around the mechanisms (issue 29, parts 1-3 and 7): salted DP seeds, the
release registry and its epsilon ledger, experiment draws refused at save."""

from __future__ import annotations

import json
import multiprocessing
import warnings

import numpy as np
import pandas as pd
import pytest

from privlab._registry import (
    DEFAULT_EPSILON_TOTAL,
    NOT_FOR_PUBLICATION,
    Registry,
    default_dir,
    epsilon_total,
    registry_dir,
    use_registry,
    user_dir,
)
from privlab._rng import SeedRecord
from privlab.data import load_adult, load_nursery
from privlab.dp.histogram import noisy_histogram
from privlab.errors import (
    CustodyError,
    ExperimentWarning,
    PrivacyWarning,
    PrivlabError,
    RepublicationError,
)
from privlab.learn.dp_naive_bayes import DPNaiveBayes, train_from_table
from privlab.learn.dp_tree import fit_table
from privlab.publish import anatomize, generalize, load_release, pram
from privlab.release.base import Custody

QI = ["parents", "has_nurs", "form"]


@pytest.fixture(scope="module")
def nursery():
    return load_nursery()


def _anatomy(table, rng=None, l=2):
    return anatomize(table, qi=QI, sensitive="class", l=l, rng=rng)


def _files(directory) -> str:
    return "".join(p.read_text() for p in directory.iterdir() if p.is_file())


# -- part 1: DP seeds are salted --------------------------------------------------------------
def test_seeded_dp_tree_brute_force_over_seeds_finds_none(nursery, tmp_path):
    """The attack of the issue, test-sized: a DP tree trained with a seed (and its custody);
    the adversary retrains with every seed 0..299 (as an unsalted seed drew the noise) and
    looks for a model equal to the published one.  Salted, none is; the same brute force
    does find the seed of an unsalted experiment, so the test can see the attack."""
    table = nursery.take(np.arange(0, nursery.n_rows, 12))
    kw = dict(epsilon=1.0, max_depth=2, criterion="max")
    published = fit_table(table, "class", rng=7, **kw)
    published.save(tmp_path / "tree.json", custody=tmp_path / "tree.custody")
    target = json.loads((tmp_path / "tree.json").read_text())
    assert "seed" not in json.dumps(target) and "salt" not in json.dumps(target)

    def consistent(model: dict) -> list[int]:
        found = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyWarning)
            for s in range(300):
                guess = fit_table(table, "class", rng=np.random.default_rng(s), **kw)
                if guess.to_dict() == model:
                    found.append(s)
        return found

    assert consistent(target) == []
    with pytest.warns(ExperimentWarning):
        unsalted = fit_table(table, "class", rng=np.random.default_rng(7), **kw)
    assert consistent(unsalted.to_dict()) == [7]
    # the custody (seed and salt) replays the published model exactly
    again = fit_table(table, "class", rng=Custody.load(tmp_path / "tree.custody").replay(), **kw)
    assert again.to_dict() == target
    custody = json.loads((tmp_path / "tree.custody" / "custody.json").read_text())
    assert custody["seed"]["seed"] == 7 and int(custody["seed"]["salt"]) > 2**100
    assert custody["input_sha256"] == table.fingerprint()


def _one_more(table, row: int):
    """The table plus one more person (a copy of row ``row``)."""
    return table.take(np.r_[np.arange(table.n_rows), row])


def test_seeded_dp_pair_differs_in_more_than_the_persons_cells(nursery):
    """D and D + one person with the same seed: unsalted, the two naive Bayes models differ
    in exactly the person's cells (their whole record); salted, the noise is independent and
    most cells differ."""
    d, d1 = nursery, _one_more(nursery, 5)
    kw = dict(target="class", epsilon=0.1, estimator="ml")

    def changed(a, b) -> int:
        return int(np.count_nonzero(a.noisy_counts_ != b.noisy_counts_))

    n_features = len(nursery.names) - 1
    with pytest.warns(ExperimentWarning):
        a = train_from_table(d, rng=np.random.default_rng(7), **kw)
        b = train_from_table(d1, rng=np.random.default_rng(7), **kw)
    assert changed(a, b) == n_features  # the attack: exactly the person's cells
    a, b = train_from_table(d, rng=7, **kw), train_from_table(d1, rng=7, **kw)
    assert changed(a, b) > len(a.noisy_counts_) // 2
    # the same for a histogram: the person's cell is not singled out
    cols = ["parents", "class"]
    ha, hb = (noisy_histogram(t, cols, epsilon=0.5, rng=7, estimator="ml", clip=False)
              for t in (d, d1))  # fmt: skip
    assert np.count_nonzero(ha.counts != hb.counts) > 1


def test_salted_dp_noise_is_independent_across_draws_of_one_seed(nursery):
    """Statistical check (fixed table, 400 pairs): with one seed, the noise of two
    histograms is uncorrelated; unsalted it would be identical (correlation 1)."""
    cols = ["parents", "class"]
    exact = nursery.counts(cols).astype(float)
    a = np.array([noisy_histogram(nursery, cols, epsilon=1, rng=3, clip=False).counts
                  for _ in range(400)]) - exact  # fmt: skip
    b = np.array([noisy_histogram(nursery, cols, epsilon=1, rng=3, clip=False).counts
                  for _ in range(400)]) - exact  # fmt: skip
    r = np.corrcoef(a.ravel(), b.ravel())[0, 1]
    assert abs(r) < 0.05  # n = 6,000 pairs: sd of r about 0.013


def test_dp_output_of_a_generator_is_refused_unless_not_for_publication(nursery, tmp_path):
    with pytest.warns(ExperimentWarning, match="caller's own Generator"):
        h = noisy_histogram(nursery, ["parents"], epsilon=1, rng=np.random.default_rng(1))
    with pytest.raises(PrivlabError, match="not_for_publication=True"):
        h.save(tmp_path / "h.csv")
    assert list(tmp_path.iterdir()) == []
    h.save(tmp_path / "h.csv", not_for_publication=True)
    first = (tmp_path / "h.csv").read_text().splitlines()[0]
    assert first == f"# {NOT_FOR_PUBLICATION}"
    df = pd.read_csv(tmp_path / "h.csv", comment="#")
    assert list(df.columns) == ["parents", "count"]
    h.save(tmp_path / "h.parquet", not_for_publication=True)
    import pyarrow.parquet as pq

    meta = pq.read_schema(tmp_path / "h.parquet").metadata
    assert meta[b"privlab.not_for_publication"].decode() == NOT_FOR_PUBLICATION
    # neither counts in the ledger
    assert Registry().entries(nursery.fingerprint()) == []


def test_a_seeded_estimator_is_an_experiment_and_train_from_table_salts(nursery, tmp_path):
    X = nursery.to_pandas().drop(columns="class")
    y = nursery.to_pandas()["class"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        seeded = DPNaiveBayes(epsilon=1, rng=0).fit(X, y)
        fresh = DPNaiveBayes(epsilon=1).fit(X, y)  # the OS CSPRNG: publishable
    with pytest.raises(PrivlabError, match="experiment"):
        seeded.save(tmp_path / "s.json")
    fresh.save(tmp_path / "f.json")
    salted = train_from_table(nursery, target="class", epsilon=1, rng=0)
    salted.save(tmp_path / "t.json", custody=tmp_path / "t.custody")
    kept = json.loads((tmp_path / "t.custody" / "custody.json").read_text())
    assert kept["seed"]["seed"] == 0 and int(kept["seed"]["salt"]) > 2**100
    assert kept["seed"]["salt"] not in (tmp_path / "t.json").read_text()
    # a refit forgets train_from_table's record: the estimator's own seed rules again
    salted.fit(X, y)
    with pytest.raises(PrivlabError, match="experiment"):
        salted.save(tmp_path / "t2.json")


# -- part 2: the registry --------------------------------------------------------------------
def test_a_second_release_of_an_input_is_refused_unless_acknowledged(nursery, tmp_path):
    first = _anatomy(nursery, rng=1)
    first.save(tmp_path / "a", custody=tmp_path / "a.c")
    second = _anatomy(nursery, rng=1, l=3)  # another draw, other parameters
    with pytest.raises(RepublicationError, match="reveal more together") as e:
        second.save(tmp_path / "b", custody=tmp_path / "b.c")
    assert "republish" in str(e.value) and "21%" in str(e.value)
    assert not (tmp_path / "b").exists() and not (tmp_path / "b.c").exists()
    # another kind of release of the same input (other roles) is refused too
    with pytest.raises(RepublicationError):
        pram(nursery, columns=["class"], keep=["health"], p=0.2).save(tmp_path / "p")
    second.save(tmp_path / "b", custody=tmp_path / "b.c", republish=True)
    entries = Registry().entries(nursery.fingerprint())
    assert [(e["kind"], e["method"], e["parameters"]["l"]) for e in entries] == [
        ("release", "anatomy", 2),
        ("release", "anatomy", 3),
    ]
    digest = json.loads((tmp_path / "b.c" / "custody.json").read_text())["release_sha256"]
    assert entries[1]["release_sha256"] == digest
    # the registry is the custodian's: no published file holds the input's fingerprint
    for d in ("a", "b"):
        assert nursery.fingerprint() not in _files(tmp_path / d)


def test_the_same_release_again_is_not_a_new_release(nursery, tmp_path):
    rel = _anatomy(nursery, rng=2)
    rel.save(tmp_path / "r", custody=tmp_path / "c")
    rel.save(tmp_path / "r2", format="parquet")  # another save of the same draw
    replay = load_release(tmp_path / "r", custody=tmp_path / "c").custody.replay()
    _anatomy(nursery, rng=replay).save(tmp_path / "again")  # a replay
    assert len(Registry().entries(nursery.fingerprint())) == 1
    # a deterministic release: the same parameters give the same release, others a new one
    adult = load_adult().take(np.arange(2000))
    kw = dict(qi=["age", "sex"], sensitive="salary", dataset="adult")
    generalize(adult, k=5, **kw).save(tmp_path / "g1")
    generalize(adult, k=5, **kw).save(tmp_path / "g2")
    with pytest.raises(RepublicationError):
        generalize(adult, k=10, **kw).save(tmp_path / "g3")
    assert len(Registry().entries(adult.fingerprint())) == 1


def test_drafts_and_experiments_neither_trip_nor_fill_the_registry(nursery, tmp_path):
    _anatomy(nursery, rng=1).save(tmp_path / "d1", draft=True)
    _anatomy(nursery, rng=2).save(tmp_path / "d2", draft=True)
    with pytest.warns(ExperimentWarning):
        exp = _anatomy(nursery, rng=np.random.default_rng(0))
    exp.save(tmp_path / "e", not_for_publication=True)
    assert Registry().entries(nursery.fingerprint()) == []
    _anatomy(nursery, rng=3).save(tmp_path / "real")  # the first publication
    assert len(Registry().entries(nursery.fingerprint())) == 1


def test_dp_outputs_compose_in_the_ledger_and_do_not_trip_the_release_guard(
    nursery, tmp_path, monkeypatch
):
    cols = ["parents", "class"]
    _anatomy(nursery, rng=1).save(tmp_path / "rel")  # a release of the input first
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)  # 0.4 + 0.5: within the default 1.0
        noisy_histogram(nursery, cols, epsilon=0.4).save(tmp_path / "h1.csv")
        noisy_histogram(nursery, cols, epsilon=0.5).save(tmp_path / "h2.csv")
    with pytest.warns(PrivacyWarning, match=r"epsilon = 1\.2 together \(0\.4 \+ 0\.5 \+ 0\.3"):
        noisy_histogram(nursery, cols, epsilon=0.3).save(tmp_path / "h3.csv")
    reg = Registry()
    assert reg.epsilon(nursery.fingerprint()) == pytest.approx(1.2)
    assert [e["kind"] for e in reg.entries(nursery.fingerprint())] == ["release", *["dp"] * 3]
    # the total is configured by the environment; inf turns the note off
    monkeypatch.setenv("PRIVLAB_EPSILON_TOTAL", "inf")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        noisy_histogram(nursery, cols, epsilon=1).save(tmp_path / "h4.csv")
    monkeypatch.setenv("PRIVLAB_EPSILON_TOTAL", "-1")
    with pytest.raises(PrivlabError, match="PRIVLAB_EPSILON_TOTAL must be a positive"):
        epsilon_total()
    with pytest.raises(PrivlabError, match="PRIVLAB_EPSILON_TOTAL"):  # before anything is written
        noisy_histogram(nursery, cols, epsilon=1).save(tmp_path / "h5.csv")
    assert not (tmp_path / "h5.csv").exists()
    monkeypatch.delenv("PRIVLAB_EPSILON_TOTAL")
    assert epsilon_total() == DEFAULT_EPSILON_TOTAL == 1.0


def test_the_registry_lives_where_it_is_told(tmp_path, monkeypatch, registry):
    assert registry_dir() == registry  # the test's own (tests/conftest.py)
    monkeypatch.delenv("PRIVLAB_REGISTRY")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert registry_dir() == default_dir() == tmp_path / "xdg" / "privlab" / "registry"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_dir() == tmp_path / "home" / ".local" / "share" / "privlab" / "registry"
    # the cache (compiled programs) has its own base folder, never the data's
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert user_dir("cache") == tmp_path / "cache" / "privlab"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert user_dir("cache") == tmp_path / "home" / ".cache" / "privlab"
    assert user_dir("data") == tmp_path / "home" / ".local" / "share" / "privlab"
    use_registry(tmp_path / "given")
    try:
        assert registry_dir() == tmp_path / "given"
    finally:
        use_registry(None)


def test_a_corrupt_registry_file_is_one_clear_error(nursery, tmp_path, registry):
    _anatomy(nursery, rng=1).save(tmp_path / "r")
    path = registry / "inputs" / f"{nursery.fingerprint()}.json"
    path.write_text("{not json")
    with pytest.raises(PrivlabError, match="not readable as a privlab registry"):
        _anatomy(nursery, rng=2).save(tmp_path / "r2", republish=True)
    assert not (tmp_path / "r2").exists()


def _save_one(args) -> str:
    directory, registry, seed = args
    import os

    os.environ["PRIVLAB_REGISTRY"] = registry
    try:
        _anatomy(load_nursery(), rng=seed).save(directory)
    except RepublicationError:
        return "refused"
    return "saved"


def test_concurrent_releases_of_one_input_are_serialized(tmp_path, registry):
    """Four processes publish a release of one input at once: the registry's lock lets one
    through and refuses the others (none slips between another's check and record).

    The processes are spawned, not forked: a fork of a pytest worker whose earlier tests
    started pyarrow's (or another library's) thread pools copies their locks held, and a
    child that reads the data then waits on them forever (seen once in 2,300 tests' order)."""
    ctx = multiprocessing.get_context("spawn")
    jobs = [(str(tmp_path / f"r{i}"), str(registry), i) for i in range(4)]
    with ctx.Pool(4) as pool:
        results = pool.map(_save_one, jobs)
    assert sorted(results) == ["refused"] * 3 + ["saved"]
    assert len(Registry(registry).entries(load_nursery().fingerprint())) == 1
    assert sum((tmp_path / f"r{i}").exists() for i in range(4)) == 1


def test_the_input_fingerprint_ignores_roles_only(nursery):
    roled = nursery.with_roles(qi=["parents"], sensitive="class")
    assert roled.fingerprint() == nursery.fingerprint()
    assert nursery.take(np.arange(nursery.n_rows - 1)).fingerprint() != nursery.fingerprint()


# -- part 3: draws from the caller's stream are experiments ----------------------------------
def test_a_release_from_a_callers_generator_warns_and_save_refuses(tmp_path):
    adult = load_adult()
    kw = dict(qi=["workclass", "relationship", "sex", "salary"], sensitive="occupation", l=2)
    with pytest.warns(ExperimentWarning, match="an experiment") as w:
        rel = anatomize(adult, **kw, rng=np.random.default_rng(42))
    assert issubclass(w[0].category, PrivacyWarning)
    with pytest.raises(CustodyError, match="not_for_publication=True"):
        rel.save(tmp_path / "r", custody=tmp_path / "c")
    assert list(tmp_path.iterdir()) == []
    with pytest.warns(ExperimentWarning):
        p = pram(adult, columns=["occupation"], keep=["sex"], p=0.3, rng=np.random.default_rng(42))
    with pytest.raises(CustodyError, match="experiment"):
        p.save(tmp_path / "p")
    # opted in: written, and release.json says it must never be published
    rel.save(tmp_path / "r", custody=tmp_path / "c", not_for_publication=True)
    meta = json.loads((tmp_path / "r" / "release.json").read_text())
    assert meta["not_for_publication"] == NOT_FOR_PUBLICATION
    assert json.loads((tmp_path / "c" / "custody.json").read_text())["seed"]["experiment"]
    assert load_release(tmp_path / "r", custody=tmp_path / "c").n_rows == adult.n_rows


def test_the_correlated_release_bypass_is_refused(nursery, tmp_path):
    """``rng=custody.seed`` (or a record rebuilt from custody.json) draws from the stream of
    a published release: with other parameters, the pair is correlated.  It is an
    experiment now: warned, and refused at save; only ``replay()`` replays."""
    rel = _anatomy(nursery, rng=5)
    rel.save(tmp_path / "r", custody=tmp_path / "c")
    back = load_release(tmp_path / "r", custody=tmp_path / "c")
    rebuilt = SeedRecord.from_dict(
        json.loads((tmp_path / "c" / "custody.json").read_text())["seed"]
    )
    for record in (back.custody.seed, rebuilt):
        with pytest.warns(ExperimentWarning, match="Custody.replay"):
            other = _anatomy(nursery, rng=record, l=3)
        with pytest.raises(CustodyError, match="experiment"):
            other.save(tmp_path / "other", republish=True)
    assert not (tmp_path / "other").exists()
    # an experiment's custody replays an experiment (still refused without opting in)
    with pytest.warns(ExperimentWarning):
        exp = _anatomy(nursery, rng=back.custody.seed, l=3)
    exp.save(tmp_path / "e", custody=tmp_path / "ec", not_for_publication=True)
    again = load_release(tmp_path / "e", custody=tmp_path / "ec").custody.replay()
    with pytest.warns(ExperimentWarning, match="replay of an experiment"):
        exp2 = _anatomy(nursery, rng=again, l=3)
    with pytest.raises(CustodyError, match="experiment"):
        exp2.save(tmp_path / "e2")
