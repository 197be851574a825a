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


# -- today's from_pandas against the one before issue 38 (tests/table_reference.py) -------
def _random_frame(data, n: int) -> pd.DataFrame:
    """A frame of 1-6 columns of every kind from_pandas reads: integers, floats (NaN, rarely
    an infinity), pandas' text (markers, None), Python objects (text, numbers, None, a
    marker), booleans, categories, nullable integers, dates."""
    from hypothesis import strategies as st

    words = st.sampled_from(["a", "b", "B", "10", "9", "?", "", "nan", "x y", "é"])
    kinds = data.draw(st.lists(st.sampled_from(
        ["int", "float", "text", "object", "bool", "category", "Int64", "date"]),
        min_size=1, max_size=6))  # fmt: skip
    cols: dict[str, object] = {}
    for j, kind in enumerate(kinds):
        if kind == "int":
            v = data.draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n))
        elif kind == "float":
            v = data.draw(st.lists(st.sampled_from([0.5, 1.0, -2.25, np.nan, 7.0, np.inf]),
                                   min_size=n, max_size=n))  # fmt: skip
        elif kind in ("text", "category"):
            v = data.draw(st.lists(st.one_of(words, st.none()), min_size=n, max_size=n))
        elif kind == "object":
            v = data.draw(st.lists(st.one_of(words, st.none(), st.integers(0, 11),
                                             st.sampled_from([1.0, 2.5])),
                                   min_size=n, max_size=n))  # fmt: skip
        elif kind == "bool":
            v = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
        elif kind == "Int64":
            v = data.draw(st.lists(st.one_of(st.integers(0, 4), st.none()), min_size=n,
                                   max_size=n))  # fmt: skip
        else:
            v = data.draw(st.lists(st.sampled_from(["2024-01-01", "2023-05-06", None]),
                                   min_size=n, max_size=n))  # fmt: skip
        name = f"c{j}"
        if kind == "text":
            cols[name] = pd.Series(v, dtype="str")
        elif kind == "object":
            cols[name] = pd.Series(v, dtype=object)
        elif kind == "category":
            cols[name] = pd.Series(v, dtype="category")
        elif kind == "Int64":
            cols[name] = pd.Series(v, dtype="Int64")
        elif kind == "date":
            cols[name] = pd.to_datetime(pd.Series(v))
        else:
            cols[name] = pd.Series(v)
    return pd.DataFrame(cols)


def _outcome(f, df, **kw):
    try:
        t = f(df, **kw)
    except PrivlabError as e:
        return type(e).__name__, str(e)
    return t.codes.tolist(), t.schema.to_dict()


def test_from_pandas_reads_every_frame_as_before_issue_38():
    """On random frames (every column kind, missing values, markers, infinities), with and
    without ``drop_missing`` and a declared domain: the same codes and schema as the
    implementation before (which converted every text cell), or the same error."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    import table_reference

    @settings(max_examples=150, deadline=None)
    @given(st.data())
    def check(data):
        n = data.draw(st.integers(0, 12))
        df = _random_frame(data, n)
        kw = {"drop_missing": data.draw(st.booleans())}
        if data.draw(st.booleans()):
            name = data.draw(st.sampled_from(list(df.columns)))
            kw["domains"] = {name: data.draw(st.sampled_from(
                [["a", "b", "B", "10", "9", "x y", "é"], [-3, -2, -1, 0, 1, 2, 3]]))}  # fmt: skip
        got = _outcome(Table.from_pandas, df, **kw)
        want = _outcome(table_reference.from_pandas, df, **kw)
        assert got == want, (df, kw)

    check()


def test_to_pandas_gives_back_the_values_and_pandas_own_text_dtype():
    """Decoded text columns have the dtype pandas gives a column of strings (pyarrow's
    strings under pandas 3) and the values of the domain; numbers stay numbers."""
    df = pd.DataFrame({"w": pd.Series(["b", "a", "b", "c"], dtype="str"), "n": [3, 1, 2, 3]})
    back = Table.from_pandas(df).to_pandas()
    assert back["w"].dtype == pd.Series(["x"]).dtype
    assert back["w"].tolist() == ["b", "a", "b", "c"] and back["n"].tolist() == [3, 1, 2, 3]
    mixed = Table(np.array([[0], [1]]), Schema((Attribute("m", ("a", 5), numeric=False),)))
    assert mixed.to_pandas()["m"].tolist() == ["a", 5]  # a domain not all text: objects


def test_a_checked_table_skips_only_the_range_check_of_int32_codes():
    """Table.checked keeps the codes (read-only, C-contiguous) without reading their range
    again; the wrong shape, and codes of another type, still get the full check."""
    schema = Schema((Attribute("a", ("x", "y")), Attribute("b", ("p", "q", "r"))))
    codes = np.array([[0, 2], [1, 0]], dtype=np.int32)
    t = Table.checked(codes, schema)
    assert t.codes.flags.c_contiguous and not t.codes.flags.writeable
    assert t.decode("b").tolist() == ["r", "p"] and t.schema is schema
    assert t.fingerprint() == Table(codes, schema).fingerprint()
    # a caller's promise is not re-checked: out-of-range int32 codes are kept as given
    assert Table.checked(np.array([[5, 0]], dtype=np.int32), schema).codes[0, 0] == 5
    with pytest.raises(SchemaError, match="outside its domain"):
        Table.checked(np.array([[5, 0]], dtype=np.int64), schema)  # another type: checked
    with pytest.raises(SchemaError, match="shape"):
        Table.checked(np.zeros((2, 3), dtype=np.int32), schema)
