"""The package under test is the wheel a user installs, on a host
without Rust (scripts/test-python.sh takes cargo and rustc off PATH and
sets ROTABLOOM_TEST_NO_RUST)."""

import os
import shutil

import pytest

import rotabloom
from rotabloom import _rotabloom, aio


@pytest.mark.skipif(
    not os.environ.get("ROTABLOOM_TEST_NO_RUST"),
    reason="only where scripts/test-python.sh took Rust off PATH",
)
def test_the_installed_wheel_runs_without_rust():
    assert shutil.which("cargo") is None and shutil.which("rustc") is None
    # Installed, not read from the source tree.
    assert "site-packages" in rotabloom.__file__.split(os.sep)
    # One extension for every CPython from 3.9 (the stable ABI).
    assert _rotabloom.__file__.endswith(".abi3.so")
    assert aio.BloomFilter.__module__ == "rotabloom.aio"
