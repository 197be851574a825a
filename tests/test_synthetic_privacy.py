"""Distance to closest record (SDMetrics' DCR), exact-match share, NNDR and the
closer-to-training share: against a full pairwise distance matrix written out here from
SDMetrics' definition, by hand, on exact copies, statistically (a synthetic set drawn like
the training and control sets against one that copies training rows), invariance to row
order, and bad input; the compiled nearest-record kernel against a brute-force distance
matrix (hypothesis)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from privlab.errors import ParameterError
from privlab.metrics import _nearest_kernel as nearest_kernel
from privlab.metrics import synthetic as synthetic_module
from privlab.metrics.synthetic import distance_to_closest_record


def pairwise(a: pd.DataFrame, b: pd.DataFrame, ref: pd.DataFrame, numeric, categorical):
    """The full matrix of SDMetrics' calculate_dcr distances: per numeric column
    min(|x - y| / range, 1) with the range of ``ref`` (1(x != y) for a range of 0), per
    categorical column 1(x != y) (two missing values agree), averaged over the columns."""
    total = np.zeros((len(a), len(b)))
    for c in numeric:
        r = ref[c].max() - ref[c].min()
        x, y = a[c].to_numpy(float)[:, None], b[c].to_numpy(float)[None, :]
        total += (x != y) if r == 0 else np.minimum(np.abs(x - y) / r, 1.0)
    for c in categorical:
        x, y = a[c].to_numpy(object)[:, None], b[c].to_numpy(object)[None, :]
        same = (x == y) | (pd.isna(x) & pd.isna(y))
        total += ~same
    return total / (len(numeric) + len(categorical))


def table(rng, n, shift=0.0, spread=1.0):
    return pd.DataFrame({
        "age": np.round(rng.normal(40 + shift, 10 * spread, n)),
        "income": rng.gamma(2.0, 10.0 * spread, n) + shift,
        "sex": rng.choice(["f", "m"], n),
        "region": rng.choice(["n", "s", "e", "w", None], n),
        "flat": np.full(n, 3.0),  # constant in the original: compares as a category
    })  # fmt: skip


@pytest.mark.parametrize("algorithm", ["kd_tree", "ball_tree", "brute", "auto"])
@pytest.mark.parametrize("seed", [0, 1])
def test_dcr_matches_the_full_distance_matrix(seed, algorithm, monkeypatch):
    rng = np.random.default_rng(seed)
    original = table(rng, 60)
    control = table(rng, 45, shift=3.0)  # some control values beyond the original's range
    synthetic = table(rng, 50, shift=2.0, spread=1.5)  # and synthetic ones
    synthetic.loc[:4, "flat"] = [3.0, 4.0, 3.0, 2.0, 3.0]
    synthetic.iloc[5:8] = original.iloc[10:13].to_numpy()  # exact copies
    num, cat = ["age", "income", "flat"], ["sex", "region"]
    d_orig = pairwise(synthetic, original, original, num, cat)
    d_ctrl = pairwise(synthetic, control, original, num, cat)  # the original's ranges
    two = np.sort(d_orig, axis=1)[:, :2]
    for tile in (nearest_kernel.TILE, 7):  # and the kernel's reference in small tiles
        monkeypatch.setattr(nearest_kernel, "TILE", tile)
        got = distance_to_closest_record(synthetic, original, control=control,
                                         algorithm=algorithm)  # fmt: skip
        assert got.numeric == ("age", "income", "flat") and got.categorical == ("sex", "region")
        np.testing.assert_allclose(got.dcr, two[:, 0], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(got.second, two[:, 1], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(got.dcr_control, d_ctrl.min(axis=1), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(got.nndr, two[:, 0] / two[:, 1], rtol=1e-12)
        assert got.exact_match.tolist() == (two[:, 0] == 0).tolist()
        assert got.exact_match[5:8].all() and got.exact_match_share == (two[:, 0] == 0).mean()
        closer = d_orig.min(axis=1) < d_ctrl.min(axis=1) - 1e-12
        assert got.closer.tolist() == closer.tolist()
    outside = ((synthetic["income"] > original["income"].max())
               | (synthetic["age"] > original["age"].max())).sum()  # fmt: skip
    assert outside > 0  # the capped pass ran


def brute_nearest(q_num, q_cat, r_num, r_cat, k):
    """The ``k`` smallest capped distances from a full numpy matrix, terms added in the
    kernel's order (numeric columns, then categorical ones), padded with inf."""
    dist = np.zeros((q_num.shape[0], r_num.shape[0]))
    for j in range(q_num.shape[1]):
        dist += np.minimum(np.abs(q_num[:, j][:, None] - r_num[:, j][None, :]), 1.0)
    for j in range(q_cat.shape[1]):
        dist += q_cat[:, j][:, None] != r_cat[:, j][None, :]
    padded = np.concatenate([np.sort(dist, axis=1), np.full((q_num.shape[0], k), np.inf)], 1)
    return padded[:, :k]


# values on a coarse grid (ties, equal rows) and beyond [0, 1] (capped terms), or any float
_values = st.one_of(st.sampled_from([-1.5, -0.25, 0.0, 0.25, 0.5, 1.0, 1.75, 3.0]),
                    st.floats(-3.0, 4.0, allow_nan=False))  # fmt: skip


@st.composite
def mixed_tables(draw):
    n_q, n_r = draw(st.integers(0, 9)), draw(st.integers(0, 12))
    d, c = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    num = [draw(hnp.arrays(np.float64, (n, d), elements=_values)) for n in (n_q, n_r)]
    cat = [draw(hnp.arrays(np.int64, (n, c), elements=st.integers(0, 2))) for n in (n_q, n_r)]
    return num[0], cat[0], num[1], cat[1]


@settings(max_examples=300)
@given(tables=mixed_tables(), k=st.integers(1, 10), tile=st.integers(1, 5))
def test_nearest_kernel_matches_brute_force(tables, k, tile):
    """Exactly the brute force's k smallest (same order of addition), whatever the tile;
    k beyond the reference pads with inf, an empty reference gives inf only."""
    q_num, q_cat, r_num, r_cat = tables
    got = nearest_kernel.nearest_distances(
        q_num, q_cat, np.ascontiguousarray(r_num.T), np.ascontiguousarray(r_cat.T), k, tile
    )
    want = brute_nearest(q_num, q_cat, r_num, r_cat, k)
    assert got.shape == (q_num.shape[0], k)
    np.testing.assert_array_equal(got, want)
    assert np.isinf(got[:, r_num.shape[0] :]).all()


@settings(max_examples=50)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 4))
def test_capped_distance_is_the_l1_of_one_hot_features_inside_the_range(seed, k):
    """The search the kernel replaced: inside the original's range no numeric term reaches
    the cap, so the capped distance is the L1 distance of numeric values over the range and
    categorical columns one-hot times 1/2 (what a k-d tree searched); to 1e-12."""
    rng = np.random.default_rng(seed)
    original = table(rng, 30).drop(columns="flat")
    inside = original.sample(25, replace=True, random_state=seed).reset_index(drop=True)
    inside["income"] = rng.uniform(original["income"].min(), original["income"].max(), 25)
    enc, n_cats, _ = synthetic_module._encode(
        {"q": inside, "r": original}, ["age", "income"], ["sex", "region"], "r"
    )
    q, r = enc["q"], enc["r"]
    assert q.inside.all() and r.inside.all()

    def features(e):
        onehot = [np.eye(n)[e.cat[:, j]] * 0.5 for j, n in enumerate(n_cats)]
        return np.column_stack([e.num, *onehot])

    l1 = np.abs(features(q)[:, None, :] - features(r)[None, :, :]).sum(axis=2)
    got = synthetic_module._nearest(q, r, k, n_cats, "kd_tree")
    np.testing.assert_allclose(got, np.sort(l1, axis=1)[:, :k], rtol=0, atol=1e-12)


def test_dcr_by_hand():
    """Original (0, a), (10, b): range 10.  Synthetic (5, a): (0.5 + 0) / 2 = 0.25 to the
    first, (0.5 + 1) / 2 = 0.75 to the second; NNDR 1/3.  Synthetic (30, b), beyond the
    range: min(20/10, 1) = 1 -> (1 + 0) / 2 = 0.5 to (10, b) and (1 + 1) / 2 = 1 to (0, a)
    (uncapped: 1.0 and 2.0); NNDR 0.5.  Synthetic (10, b) is a copy: 0, and (1 + 1) / 2 = 1
    to (0, a); NNDR 0."""
    original = pd.DataFrame({"x": [0.0, 10.0], "c": ["a", "b"]})
    synthetic = pd.DataFrame({"x": [5.0, 30.0, 10.0], "c": ["a", "b", "b"]})
    got = distance_to_closest_record(synthetic, original)
    assert got.dcr.tolist() == [0.25, 0.5, 0.0]
    assert got.second.tolist() == [0.75, 1.0, 1.0]
    np.testing.assert_allclose(got.nndr, [1 / 3, 0.5, 0.0])
    assert got.exact_match_share == pytest.approx(1 / 3)
    assert got.ranges == (10.0,)
    d = got.to_dict()
    assert d["dcr"]["min"] == 0.0 and d["dcr"]["median"] == 0.25
    assert "closer_to_training" not in d and d["n_control"] is None
    assert got.closer is None and got.closer_to_training is None and got.p_value is None
    df = got.to_pandas()
    assert list(df.columns) == ["dcr", "second", "nndr", "exact_match"]
    # the original as its own control: every distance ties, and a tie is not closer
    # (SDMetrics' strict dcr_real < dcr_holdout): share 0, SDMetrics' score min(2, 1) = 1
    tie = distance_to_closest_record(synthetic, original, control=original)
    assert tie.closer_to_training[0] == 0.0 and tie.ties == 1.0
    assert tie.overfitting_protection == 1.0 and tie.expected_share == 0.5
    assert list(tie.to_pandas().columns)[-2:] == ["dcr_control", "closer_to_training"]
    # x as a category instead: 5 != 0 and 5 != 10 -> (1 + 0) / 2, (1 + 1) / 2
    cat = distance_to_closest_record(synthetic, original, categorical=["x", "c"])
    assert cat.dcr.tolist() == [0.5, 0.5, 0.0] and cat.numeric == ()


def test_exact_copies_and_duplicates():
    rng = np.random.default_rng(3)
    original = table(rng, 200)
    got = distance_to_closest_record(original, original)
    assert not got.dcr.any() and got.exact_match_share == 1.0
    assert (got.nndr == 0).mean() > 0.9  # a copy of a row not duplicated in the original
    doubled = pd.concat([original, original], ignore_index=True)
    again = distance_to_closest_record(original, doubled)
    assert not again.second.any() and (again.nndr == 1).all()  # 0/0: as close to both


def test_row_order_does_not_matter():
    rng = np.random.default_rng(4)
    original, control, synthetic = table(rng, 80), table(rng, 70, shift=5), table(rng, 60, 2)
    got = distance_to_closest_record(synthetic, original, control=control)
    perm = rng.permutation(60)
    moved = distance_to_closest_record(
        synthetic.iloc[perm],
        original.sample(frac=1, random_state=1),
        control=control.sample(frac=1, random_state=2),
    )
    np.testing.assert_array_equal(moved.dcr, got.dcr[perm])
    np.testing.assert_array_equal(moved.second, got.second[perm])
    np.testing.assert_array_equal(moved.dcr_control, got.dcr_control[perm])
    assert moved.closer_to_training == got.closer_to_training


def _numeric(rng, n):
    return pd.DataFrame({f"x{j}": rng.normal(size=n) for j in range(4)})


def test_closer_to_training_share_statistically():
    """Synthetic rows drawn like training and control (n = 4000 each): the share is 0.5 up
    to sampling (sd sqrt(0.25 / 4000) = 0.0079; tolerance 0.03, about 3.8 sd) and the exact
    test does not reject it.  A generator that copies 30 % of its rows from training with a
    little noise (share about 0.3 + 0.7 * 0.5 = 0.65, 19 sd away) is rejected, and one that
    copies all of them gets a share near 1 and SDMetrics' score near 0."""
    rng = np.random.default_rng(2024)
    n = 4000
    training, control = _numeric(rng, n), _numeric(rng, n)
    fresh = distance_to_closest_record(_numeric(rng, n), training, control=control)
    share, low, high = fresh.closer_to_training
    assert abs(share - 0.5) < 0.03 and low < 0.5 < high
    assert fresh.expected_share == 0.5 and fresh.p_value > 0.001 and fresh.ties == 0
    assert fresh.overfitting_protection > 0.9
    copied = training.sample(n=int(0.3 * n), random_state=0) + rng.normal(0, 0.01, (1200, 4))
    partly = pd.concat([copied, _numeric(rng, n - 1200)], ignore_index=True)
    leak = distance_to_closest_record(partly, training, control=control)
    assert 0.6 < leak.closer_to_training[0] < 0.7 and leak.p_value < 1e-6
    assert leak.closer_to_training[1] > 0.55
    noisy = training + rng.normal(0, 0.01, (n, 4))
    full = distance_to_closest_record(noisy, training, control=control)
    assert full.closer_to_training[0] > 0.99 and full.overfitting_protection < 0.05
    d = full.to_dict()["closer_to_training"]
    assert d["share"] == full.closer_to_training[0] and d["expected"] == 0.5


def test_expected_share_follows_the_set_sizes():
    """Training three times the control: a fresh synthetic row's closest real row is in the
    training set with probability 3/4, not 1/2."""
    rng = np.random.default_rng(7)
    got = distance_to_closest_record(_numeric(rng, 3000), _numeric(rng, 3000),
                                     control=_numeric(rng, 1000))  # fmt: skip
    assert got.expected_share == 0.75
    assert abs(got.closer_to_training[0] - 0.75) < 0.03 and got.p_value > 0.001


def test_other_frame_libraries():
    pa = pytest.importorskip("pyarrow")
    original = pd.DataFrame({"x": [0.0, 1.0, 2.0], "c": ["a", "b", "a"]})
    synthetic = pd.DataFrame({"x": [0.5], "c": ["b"]})
    want = distance_to_closest_record(synthetic, original).dcr
    got = distance_to_closest_record(pa.Table.from_pandas(synthetic),
                                     pa.Table.from_pandas(original)).dcr  # fmt: skip
    np.testing.assert_array_equal(got, want)


def test_bad_input_is_refused():
    a = pd.DataFrame({"x": [0.0, 1.0, 2.0], "c": ["a", "b", "a"]})
    cases = [
        (dict(synthetic=pd.DataFrame({"y": [1]}), original=a), "share no column"),
        (dict(synthetic=a.iloc[:0], original=a), "synthetic table is empty"),
        (dict(synthetic=a, original=a.iloc[:0]), "original table is empty"),
        (dict(synthetic=a, original=a, control=a.iloc[:0]), "control table is empty"),
        (dict(synthetic=a, original=a.iloc[:1]), "at least 2 rows"),
        (dict(synthetic=a.assign(x=[0.0, np.nan, 1.0]), original=a),
         "numeric column 'x' of the synthetic table holds missing"),
        (dict(synthetic=a, original=a.assign(x=[0.0, np.inf, 1.0])),
         "numeric column 'x' of the original table holds missing or infinite"),
        (dict(synthetic=a, original=a, numeric=["c"]), "numeric column 'c' of the synthetic "
         "table holds non-numbers"),
        (dict(synthetic=a, original=a, columns=["x", "z"]), "synthetic table has no column 'z'"),
        (dict(synthetic=a, original=a, columns=[]), "columns is empty"),
        (dict(synthetic=a, original=a, columns=["x", "x"]), "names a column twice"),
        (dict(synthetic=a, original=a, numeric=["q"]), "numeric column 'q' is not a column"),
        (dict(synthetic=a, original=a, numeric=["x"], categorical=["x", "c"]),
         "'x' is named both"),
        (dict(synthetic=a, original=a, numeric=["x"], categorical=[]), "'c' is named neither"),
        (dict(synthetic=a.to_numpy(), original=a), "synthetic table must be a pandas"),
        (dict(synthetic=a, original=a, level=1.0), "level must lie in"),
        (dict(synthetic=a, original=a, algorithm="annoy"), "algorithm must be"),
    ]  # fmt: skip
    for kwargs, message in cases:
        with pytest.raises(ParameterError, match=message) as info:
            distance_to_closest_record(**kwargs)
        assert "\n" not in str(info.value)
