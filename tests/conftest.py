"""Suite-wide test settings: hypothesis without per-example deadlines, since CI machines
share two cores and a slow example is not a failure of the property under test; and each test
starts with the network choice of the environment alone (startup makes `[network]` the
process's: providers/network.py)."""

from collections.abc import Iterator

import pytest
from hypothesis import settings

settings.register_profile("magi", deadline=None)
settings.load_profile("magi")


@pytest.fixture(autouse=True)
def network_of_the_environment() -> Iterator[None]:
    from magi_code.providers import network

    network._current = None
    yield
    network._current = None
