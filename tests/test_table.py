import numpy as np
import pandas as pd
import pytest

from privlab.data import Role, Table, read_table
from privlab.data.schema import Attribute, Schema
from privlab.errors import MissingValuesError, PrivlabError, SchemaError


def test_round_trip_pandas_keeps_values_and_order():
    df = pd.DataFrame({"a": ["x", "y", "x"], "n": [3, 1, 2]})
    t = Table.from_pandas(df, qi=["a"], sensitive="n")
    assert t.schema["a"].domain == ("x", "y")
    assert t.schema["n"].domain == (1, 2, 3) and t.schema["n"].numeric
    assert t.schema["a"].role is Role.QI and t.schema["n"].role is Role.SENSITIVE
    pd.testing.assert_frame_equal(t.to_pandas(), df)
    assert not t.codes.flags.writeable


def test_explicit_domain_order_and_outside_value():
    df = pd.DataFrame({"a": ["lo", "hi"]})
    t = Table.from_pandas(df, domains={"a": ("lo", "mid", "hi")})
    assert list(t.column("a")) == [0, 2]
    with pytest.raises(SchemaError, match="'hi'"):
        Table.from_pandas(df, domains={"a": ("lo",)})


def test_missing_values_error_names_column_and_count():
    df = pd.DataFrame({"a": ["x", None, "?"], "b": [1.0, 2.0, np.nan]})
    with pytest.raises(MissingValuesError, match=r"'a' \(2\), 'b' \(1\)"):
        Table.from_pandas(df)
    t = Table.from_pandas(df, drop_missing=True)
    assert t.n_rows == 1


def test_unknown_and_conflicting_columns():
    df = pd.DataFrame({"a": ["x"], "b": ["y"]})
    with pytest.raises(SchemaError, match="'zz'"):
        Table.from_pandas(df, qi=["zz"])
    with pytest.raises(SchemaError, match="both the sensitive attribute and a quasi-identifier"):
        Table.from_pandas(df, qi=["a"], sensitive="a")
    t = Table.from_pandas(df)
    with pytest.raises(SchemaError, match="unknown column 'c'"):
        t.column("c")


def test_codes_outside_domain_rejected():
    from privlab.data import Attribute, Schema

    schema = Schema((Attribute("a", ("x", "y")),))
    with pytest.raises(SchemaError, match="'a'"):
        Table(np.array([[2]]), schema)


def test_read_csv_and_parquet(tmp_path):
    df = pd.DataFrame({"a": ["x", "y"], "n": [1, 2]})
    df.to_csv(tmp_path / "t.csv", index=False)
    df.to_parquet(tmp_path / "t.parquet", index=False)
    for name in ("t.csv", "t.parquet"):
        t = read_table(tmp_path / name)
        pd.testing.assert_frame_equal(t.to_pandas(), df)


def test_read_errors(tmp_path):
    with pytest.raises(PrivlabError, match="not found"):
        read_table(tmp_path / "none.csv")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(PrivlabError, match="empty"):
        read_table(tmp_path / "empty.csv")
    (tmp_path / "q.csv").write_text("a,b\nx,?\ny,1\n")
    with pytest.raises(MissingValuesError, match=r"'b' \(1\)"):
        read_table(tmp_path / "q.csv")
    assert read_table(tmp_path / "q.csv", drop_missing=True).n_rows == 1


def test_take_select_and_empty():
    df = pd.DataFrame({"a": ["x", "y", "z"], "b": [1, 2, 3]})
    t = Table.from_pandas(df)
    assert t.select(["b"]).names == ("b",)
    assert t.take([2]).decode("a").tolist() == ["z"]
    with pytest.raises(PrivlabError, match="empty"):
        t.take(np.zeros(3, dtype=bool)).require_rows()


def test_encode_gives_unknown_values_a_code_only_when_asked():
    from privlab.data.schema import Attribute
    from privlab.errors import SchemaError

    a = Attribute("x", ("a", "b", "c"))
    np.testing.assert_array_equal(a.encode(["b", "zz", "a"], unknown=-1), [1, -1, 0])
    np.testing.assert_array_equal(a.encode(["zz"], unknown=3), [3])
    with pytest.raises(SchemaError, match="'zz' is not in the domain of 'x'"):
        a.encode(["b", "zz"])


@pytest.mark.parametrize("n", [1, 511, 512, 513, 2048, 5000])
def test_codes_outside_the_domain_are_found_in_every_row(n):
    """The domain check reads rows in folded blocks of 512 and a remainder: a bad code is
    found wherever it is, and the column it is in is named."""
    from privlab.data.table import _column_range

    rng = np.random.default_rng(n)
    sizes = [3, 7, 2, 5]
    codes = np.column_stack([rng.integers(0, k, n) for k in sizes]).astype(np.int32)
    lo, hi = _column_range(codes)
    np.testing.assert_array_equal(lo, codes.min(axis=0))
    np.testing.assert_array_equal(hi, codes.max(axis=0))
    schema = Schema(tuple(Attribute(f"c{j}", tuple(range(k))) for j, k in enumerate(sizes)))
    Table(codes, schema)
    for row in {0, n // 2, n - 1}:
        for col, value in ((1, 7), (2, -1)):
            bad = codes.copy()
            bad[row, col] = value
            with pytest.raises(SchemaError, match=f"column 'c{col}' has codes outside"):
                Table(bad, schema)


def test_encode_hashes_first_and_agrees_with_the_text_keys():
    """Attribute.encode factorizes numbers and text before building text keys: the codes are
    those of matching every value's key (integral floats as integers, NaN its own key), and
    the error names the first value outside the domain in row order."""
    import pandas as pd

    from privlab.data.schema import Attribute, Role, _keys

    rng = np.random.default_rng(0)
    attr = Attribute("x", (17, 18, 39, "nan", "a"), Role.QI)
    index = pd.Index(_keys(np.asarray(attr.domain, dtype=object)))
    cases = [
        np.array([17, 39, 18, 39, 17]),
        np.array([39.0, 17.0, np.nan, 18.0, -0.0 + 17]),
        np.array(["a", "17", "nan", "a", "39"], dtype=object),
        rng.choice(np.array([17, 18, 39]), 10_000),
    ]
    for vals in cases:
        expect = index.get_indexer(_keys(vals))
        np.testing.assert_array_equal(attr.encode(vals), expect)
    with pytest.raises(SchemaError, match="value 'b' is not in"):
        attr.encode(np.array(["a", "b", "c", "b"], dtype=object))
    with pytest.raises(SchemaError, match=r"value 40\.5 is not in"):
        attr.encode(np.array([17.0, 40.5, 41.5]))
    got = attr.encode(np.array([17, 99, 18]), unknown=-7)
    assert got.tolist() == [0, -7, 1]
