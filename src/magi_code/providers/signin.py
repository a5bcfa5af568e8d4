"""ChatGPT sign-in for Codex: the OAuth browser flow (PKCE, loopback callback) and the device
flow (RFC 8628), with every endpoint configurable so a local server can stand in.

Both end in `OAuthTokens` written to the credential store. Nothing here prints or logs a
token or an authorization code; the only thing shown is where to sign in (and the user code).
"""

import base64
import hashlib
import secrets
import sys
import time
import webbrowser
from collections.abc import Mapping
from typing import Literal
from urllib.parse import parse_qs, urlencode, urlsplit

import anyio
import anyio.abc

from magi_code import untrusted_json
from magi_code.config.credentials import OAuthTokens
from magi_code.errors import MagiError
from magi_code.providers.base import ProviderError
from magi_code.providers.codex import DEFAULT_CLIENT_ID, DEFAULT_TOKEN_URL, account_id_from_id_token
from magi_code.providers.limits import DEVICE_POLL_MIN_S, SIGN_IN_WAIT_S
from magi_code.providers.policy import HttpPolicy
from magi_code.providers.requests import control_request
from magi_code.records import record

DEFAULT_AUTHORIZE_URL = "https://auth.openai.com/oauth/authorize"
DEFAULT_DEVICE_URL = "https://auth.openai.com/oauth/device/code"
DEFAULT_CALLBACK_PORT = 1455
SCOPE = "openid profile email offline_access"
_DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
_REQUEST_HEAD_BYTES = 8192


@record
class Endpoints:
    client_id: str = DEFAULT_CLIENT_ID
    token_url: str = DEFAULT_TOKEN_URL
    authorize_url: str = DEFAULT_AUTHORIZE_URL
    device_url: str = DEFAULT_DEVICE_URL


class SignInFailed(MagiError):
    """Sign-in did not produce tokens (the text is a fixed phrase)."""

    code: Literal["sign_in_failed"] = "sign_in_failed"


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(64)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def tokens_from_grant(body: Mapping[str, object], now: float) -> OAuthTokens:
    access, refresh = body.get("access_token"), body.get("refresh_token")
    if not isinstance(access, str) or not access:
        raise SignInFailed("no access token in the answer")
    expires_in = body.get("expires_in")
    ok = isinstance(expires_in, int | float) and not isinstance(expires_in, bool)
    return OAuthTokens(
        access,
        refresh if isinstance(refresh, str) else "",
        now + (float(expires_in) if ok else 3600.0),  # type: ignore[arg-type]
        account_id_from_id_token(body.get("id_token")),
    )


async def _token_request(
    endpoints: Endpoints, form: dict[str, str], policy: HttpPolicy
) -> tuple[int, dict[str, object]]:
    answer = await control_request("POST", endpoints.token_url, policy, form=form)
    try:
        body = untrusted_json.loads(answer.body.text) if answer.body.complete else {}
    except ValueError:
        body = {}
    return answer.status, body if isinstance(body, dict) else {}


# ---- browser flow ---------------------------------------------------------------------------


async def browser_sign_in(
    endpoints: Endpoints,
    *,
    port: int = DEFAULT_CALLBACK_PORT,
    open_browser: bool = True,
    wait_s: float = SIGN_IN_WAIT_S,
    policy: HttpPolicy | None = None,
) -> OAuthTokens:
    """Listen on 127.0.0.1 for the authorization redirect, then exchange the code."""
    policy = policy or HttpPolicy()
    verifier, challenge = pkce_pair()
    state = secrets.token_urlsafe(32)
    # One loopback socket (IPv4): the redirect names "localhost", which browsers try there.
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port)
    async with listener:
        bound = listener.extra(anyio.abc.SocketAttribute.local_port)
        redirect_uri = f"http://localhost:{bound}/auth/callback"
        query = {
            "response_type": "code",
            "client_id": endpoints.client_id,
            "redirect_uri": redirect_uri,
            "scope": SCOPE,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": state,
        }
        url = f"{endpoints.authorize_url}?{urlencode(query)}"
        print(f"Sign in at: {url}", file=sys.stderr, flush=True)
        if open_browser:
            webbrowser.open(url)
        with anyio.fail_after(wait_s):
            code = await _await_callback(listener, state)
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "client_id": endpoints.client_id,
        "code_verifier": verifier,
    }
    status, body = await _token_request(endpoints, form, policy)
    if status != 200:
        raise SignInFailed("the code exchange was refused")
    return tokens_from_grant(body, time.time())


async def _await_callback(listener: anyio.abc.Listener[anyio.abc.SocketStream], state: str) -> str:
    """Answer loopback requests until one carries our state and either a code or an error."""
    outcome: list[str | None] = []
    async with anyio.create_task_group() as tg:

        async def handle(stream: anyio.abc.SocketStream) -> None:
            async with stream:
                result = await _answer(stream, state)
            if result is not _IGNORED and not outcome:
                outcome.append(result)
                tg.cancel_scope.cancel()

        tg.start_soon(listener.serve, handle)
    if outcome[0] is None:
        raise SignInFailed("sign-in was refused")
    return outcome[0]


_IGNORED = "\0ignored"


async def _answer(stream: anyio.abc.SocketStream, state: str) -> str | None:
    """The code of a matching callback, None for a matching refusal, else `_IGNORED`."""
    head = b""
    try:
        with anyio.move_on_after(5):
            while b"\r\n\r\n" not in head and len(head) < _REQUEST_HEAD_BYTES:
                head += await stream.receive(_REQUEST_HEAD_BYTES)
        result = _callback(head, state)
        ok = result is not _IGNORED and result is not None
        reply = "Signed in. You may close this tab." if ok else "Sign-in not completed."
        payload = reply.encode()
        await stream.send(
            f"HTTP/1.1 {'200 OK' if ok else '400 Bad Request'}\r\n"
            f"content-type: text/plain; charset=utf-8\r\ncontent-length: {len(payload)}\r\n"
            f"connection: close\r\n\r\n".encode()
            + payload
        )
    except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        return _IGNORED
    return result


def _callback(head: bytes, state: str) -> str | None:
    line = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
    if len(line) != 3 or line[0] != "GET":
        return _IGNORED
    target = urlsplit(line[1])
    params = parse_qs(target.query)
    got_state = params.get("state", [""])[0]
    if target.path != "/auth/callback" or not secrets.compare_digest(
        got_state.encode(), state.encode()
    ):
        return _IGNORED
    code = params.get("code", [""])[0]
    return code or None


# ---- device flow ----------------------------------------------------------------------------


async def device_sign_in(
    endpoints: Endpoints, *, wait_s: float = SIGN_IN_WAIT_S, policy: HttpPolicy | None = None
) -> OAuthTokens:
    policy = policy or HttpPolicy()
    start = await control_request(
        "POST",
        endpoints.device_url,
        policy,
        form={"client_id": endpoints.client_id, "scope": SCOPE},
    )
    ready = start.status == 200 and start.body.complete
    try:
        answer = untrusted_json.loads(start.body.text) if ready else {}
    except ValueError:
        answer = {}
    grant = answer if isinstance(answer, dict) else {}
    device_code, user_code = grant.get("device_code"), grant.get("user_code")
    if not isinstance(device_code, str) or not isinstance(user_code, str):
        raise SignInFailed("sign-in could not start")
    uri = grant.get("verification_uri_complete", grant.get("verification_uri"))
    print(f"Open {uri} and enter the code {user_code}", file=sys.stderr, flush=True)
    interval = grant.get("interval")
    delay = float(interval) if isinstance(interval, int | float) else 5.0
    form = {
        "grant_type": _DEVICE_GRANT,
        "device_code": device_code,
        "client_id": endpoints.client_id,
    }
    with anyio.fail_after(wait_s):
        while True:
            await anyio.sleep(max(delay, DEVICE_POLL_MIN_S))
            status, body = await _token_request(endpoints, form, policy)
            if status == 200:
                return tokens_from_grant(body, time.time())
            error = body.get("error")
            if error == "slow_down":
                delay += 5.0
            elif error != "authorization_pending":
                raise SignInFailed("sign-in was refused")


async def sign_in(
    endpoints: Endpoints,
    *,
    device: bool,
    port: int = DEFAULT_CALLBACK_PORT,
    open_browser: bool = True,
) -> OAuthTokens:
    """Either flow; every failure becomes `SignInFailed`."""
    try:
        if device:
            return await device_sign_in(endpoints)
        return await browser_sign_in(endpoints, port=port, open_browser=open_browser)
    except (ProviderError, TimeoutError, OSError):
        raise SignInFailed("sign-in failed") from None
