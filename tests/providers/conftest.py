from collections.abc import Iterator

import pytest

from providers.local_server import LocalServer


@pytest.fixture
def server() -> Iterator[LocalServer]:
    with LocalServer() as s:
        yield s


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
