"""Suite-wide test settings and fixtures: the `workspace` and `home` most tests run in;
hypothesis without per-example deadlines, since CI machines share two cores and a slow example
is not a failure of the property under test; and each test starts with the network choice of
the environment alone (startup makes `[network]` the process's: providers/network.py)."""

from collections.abc import Iterator
from pathlib import Path

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


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The project folder a test's agent works in (a package may define its own)."""
    path = tmp_path / "workspace"
    path.mkdir()
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """MC_HOME, not yet made: the agent creates it as a new user's would be."""
    return tmp_path / "mc-home"


@pytest.fixture
def settings_folders(home: Path, workspace: Path) -> None:
    """`home` and `workspace/.magi-code` made, for a module whose tests begin by writing settings
    files: `pytestmark = pytest.mark.usefixtures("settings_folders")`."""
    home.mkdir()
    (workspace / ".magi-code").mkdir()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test marked slow says why (`@pytest.mark.slow("waits out the 60 s expiry")`)."""
    for item in items:
        marker = item.get_closest_marker("slow")
        if marker is not None and not (marker.args and isinstance(marker.args[0], str)):
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.slow needs its reason")
