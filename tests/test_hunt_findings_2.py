"""Findings of the second round of adversarial hunts (2026-12-05): writes and the session
layer, the Python surfaces (DB-API, interop, the builder), SQL semantics in unusual positions,
and file sources. Each test fails on the code before its fix."""

from __future__ import annotations

import pytest

import pqe


def test_csv_conversion_error_names_the_column_and_the_way_out(tmp_path):
    # a value past the first block that the inferred type does not take: the error names the
    # column (Arrow's message gives only its index) and how to read it as text
    path = tmp_path / "t.csv"
    path.write_text("b,a\n" + "".join(f"x,{i}\n" for i in range(300_000)) + "q,abc\n")
    ctx = pqe.Context()
    ctx.register_csv("t", str(path))
    assert ctx.sql("select count(b) as n from t").to_arrow().column("n").to_pylist() == [300_001]
    with pytest.raises(pqe.Error) as e:
        ctx.sql("select max(a) from t").to_arrow()
    text = str(e.value)
    assert "\n" not in text and "column 'a' is read as int64" in text and "abc" not in text
    ctx.register_csv("u", str(path), schema={"a": "string"})
    assert ctx.sql("select max(a) as m from u").to_arrow().column("m").to_pylist() == ["abc"]
