"""Configuration: MC_HOME paths, settings, credentials, and the admitted snapshot."""

from __future__ import annotations

from magi_code.errors import MagiError

TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:
    from typing import Literal

    ConfigCode = Literal["configuration_invalid", "settings_file_failed", "credentials_failed"]


class ConfigError(MagiError):
    """A settings or credentials file that cannot be used; the message is a fixed phrase."""

    code: ConfigCode = "configuration_invalid"
