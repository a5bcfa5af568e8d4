"""Fixtures for the Mission Control tests (defined in helpers.py)."""

from mission_control.helpers import anyio_backend, driver, workspace

__all__ = ["anyio_backend", "driver", "workspace"]
