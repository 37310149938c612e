from __future__ import annotations

import pytest

from helpers import duckdb_tpch, register_tpch, tpch_data

import pqe


@pytest.fixture(scope="session")
def tpch_dir():
    return tpch_data()


@pytest.fixture(scope="session")
def duck(tpch_dir):
    con = duckdb_tpch(tpch_dir)
    yield con
    con.close()


@pytest.fixture(scope="session")
def tpch_ctx(tpch_dir):
    """A default Context (threaded scheduler) with the TPC-H test tables."""
    ctx = register_tpch(pqe.Context(), tpch_dir)
    yield ctx
    ctx.close()


@pytest.fixture
def ctx():
    c = pqe.Context()
    yield c
    c.close()


def pytest_collection_modifyitems(config, items):
    """Tests marked `slow` (larger scale factors, fresh installs) run on demand: PQE_SLOW=1."""
    import os

    if os.environ.get("PQE_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: runs on demand with PQE_SLOW=1")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
