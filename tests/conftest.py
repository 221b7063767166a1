"""Shared fixtures. The Kafka fixture starts the project's own real broker (ingest.broker) once per
session, in a private state folder, and stops it at the end; tests marked `kafka` use it."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

import pytest

from ingest.catalog import default_catalog
from ingest.pipeline import Pipeline

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus"


@pytest.fixture(scope="session")
def catalog():
    return default_catalog()


@pytest.fixture(scope="session")
def pipeline(catalog):
    return Pipeline(catalog)


@pytest.fixture(autouse=True)
def _root_logging():
    """The root logger's handlers and level as before each test: a command run in process (``setup_logging``) leaves
    a handler on the stderr pytest captured for it, closed by the next test ("--- Logging error --- I/O operation
    on closed file" in a CI run's output)."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:], root.level = handlers, level


@pytest.fixture(scope="session")
def kafka(tmp_path_factory):
    """A real Apache Kafka broker (KRaft, 127.0.0.1): yields its bootstrap address."""
    from ingest import broker

    state = tmp_path_factory.mktemp("kafka-state")
    st = broker.start(state, timeout_s=180)
    try:
        yield st.bootstrap
    finally:
        broker.stop(state)
        assert broker.status(state) is None


def run(coro):
    return asyncio.run(coro)
