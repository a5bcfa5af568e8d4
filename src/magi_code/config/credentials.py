"""The credential store: API keys per provider id, Codex sign-in tokens, and the OAuth state of
MCP servers (under `mcp:<server name>`), in one JSON file in MC_HOME (dir 0700, file 0600),
replaced atomically.

It must never print, log or return secrets in str/repr; callers read them by explicit fields.
"""

from __future__ import annotations

import contextlib
import json
import os

from magi_code.config import ConfigError
from magi_code.records import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from magi_code.config import ConfigCode

FILE_NAME = "credentials.json"
MCP_PREFIX = "mcp:"  # entries of MCP servers, beside those of providers


class CredentialsError(ConfigError):
    """The store could not be read or written; the text is a fixed code, never a path."""

    code: ConfigCode = "credentials_failed"


@record
class OAuthTokens:
    """Sign-in tokens. Its repr shows no token and no account."""

    access_token: str = field(repr=False)
    refresh_token: str = field(repr=False)
    expires_at: float  # seconds since the epoch
    account_id: str | None = field(default=None, repr=False)


class CredentialStore:
    def __init__(self, mc_home: str | os.PathLike[str]) -> None:
        self.dir = os.fspath(mc_home)
        self.path = os.path.join(self.dir, FILE_NAME)

    def __repr__(self) -> str:
        return "CredentialStore()"

    def api_key(self, provider_id: str) -> str | None:
        value = self._entry(provider_id).get("api_key")
        return value if isinstance(value, str) and value else None

    def oauth(self, provider_id: str) -> OAuthTokens | None:
        raw = self._entry(provider_id).get("oauth")
        if not isinstance(raw, dict):
            return None
        access, refresh, expires = raw.get("access"), raw.get("refresh"), raw.get("expires_at")
        account = raw.get("account_id")
        if not isinstance(access, str) or not isinstance(refresh, str):
            return None
        if not isinstance(expires, int | float) or isinstance(expires, bool):
            return None
        return OAuthTokens(
            access, refresh, float(expires), account if isinstance(account, str) else None
        )

    def set_api_key(self, provider_id: str, key: str) -> None:
        data = self._load()
        data[provider_id] = {"api_key": key}
        self._save(data)

    def set_oauth(self, provider_id: str, tokens: OAuthTokens) -> None:
        data = self._load()
        oauth: dict[str, object] = {
            "access": tokens.access_token,
            "refresh": tokens.refresh_token,
            "expires_at": tokens.expires_at,
        }
        if tokens.account_id is not None:
            oauth["account_id"] = tokens.account_id
        data[provider_id] = {"oauth": oauth}
        self._save(data)

    def mcp_oauth(self, server: str) -> dict[str, object] | None:
        """The stored OAuth state of MCP server `server` (mcp/oauth.py reads its fields)."""
        state = self._entry(MCP_PREFIX + server).get("mcp_oauth")
        return state if isinstance(state, dict) else None

    def set_mcp_oauth(self, server: str, state: dict[str, object]) -> None:
        data = self._load()
        data[MCP_PREFIX + server] = {"mcp_oauth": state}
        self._save(data)

    def remove_mcp_oauth(self, server: str) -> bool:
        return self.remove(MCP_PREFIX + server)

    def remove(self, provider_id: str) -> bool:
        data = self._load()
        if provider_id not in data:
            return False
        del data[provider_id]
        self._save(data)
        return True

    def provider_ids(self) -> list[str]:
        return sorted(self._load())

    def _entry(self, provider_id: str) -> dict[str, object]:
        entry = self._load().get(provider_id)
        return entry if isinstance(entry, dict) else {}

    def _load(self) -> dict[str, object]:
        try:
            with open(self.path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return {}
        except OSError:
            raise CredentialsError("credentials_unreadable") from None
        try:
            data = json.loads(raw)
        except ValueError:
            raise CredentialsError("credentials_unreadable") from None
        if not isinstance(data, dict):
            raise CredentialsError("credentials_unreadable")
        return data

    def _save(self, data: dict[str, object]) -> None:
        import tempfile

        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        os.chmod(self.dir, 0o700)
        payload = json.dumps(data, indent=2, sort_keys=True).encode()
        fd, tmp = tempfile.mkstemp(prefix=".credentials.", dir=self.dir)  # created 0600
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(payload)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        _fsync_dir(self.dir)


class NoCredentials(CredentialStore):
    """The store a provider gets when no credential may go to it: always empty, never read."""

    def __init__(self) -> None:
        super().__init__("/nonexistent")

    def __repr__(self) -> str:
        return "NoCredentials()"

    def _load(self) -> dict[str, object]:
        return {}

    def _save(self, data: dict[str, object]) -> None:
        raise CredentialsError("credentials_unwritable")


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
