"""The one HTTP policy of every HTTP fetcher backend: timeouts, retries, TLS verification and authentication.

``HttpPolicy.from_params`` builds it from the parameters every HTTP backend declares (``HTTP_PARAMETERS``),
``session_for`` turns it into a ``requests.Session``, and ``get_json`` / ``download`` turn every failure into a
``BackendError``: permanent for a 4xx answer (the request itself is wrong; retrying will not help, except 429),
transient for everything else (connection refused, timeouts, 5xx). Retries (connect errors, 429 and 5xx, with
exponential backoff, jitter and the server's Retry-After) happen inside the session, through urllib3's ``Retry``.

Secrets (password, token, ``user:pass@`` in a URL) never appear in an error message, a repr or a log line.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final, Self
from urllib.parse import urlsplit, urlunsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3 import BaseHTTPResponse
from urllib3.util.retry import Retry

from fetchers.backends import BackendError, Parameter, ParameterError

__all__ = ("AUTH_MODES", "HTTP_PARAMETERS", "HttpPolicy", "download", "get_json", "mask_url", "session_for")

AUTH_MODES: Final = ("none", "basic", "bearer", "spnego")
RETRY_STATUSES: Final = frozenset({429, 500, 502, 503, 504})
CHUNK_SIZE: Final = 1 << 20
# The largest JSON answer read (History Server REST views, JobHistory Server job and conf views): a page of the
# History Server's task list at its largest page size is tens of MB; four times the 64 MiB WebHDFS listings get.
MAX_JSON_BYTES: Final = 256 << 20
_MASK: Final = "********"

HTTP_PARAMETERS: Final[tuple[Parameter, ...]] = (
    Parameter("timeout_s", float, "Seconds to wait for an answer (connecting waits at most 5 s)", default=30.0),
    Parameter("retries", int, "Retries after a connection error, 429 or 5xx answer", default=3),
    Parameter("verify", bool, "Verify the server's TLS certificate", default=True),
    Parameter("ca_bundle", str, "CA bundle file to verify the server's certificate with (instead of the system's)"),
    Parameter("auth", str, "Authentication: none, basic, bearer or spnego (Kerberos)", default="none"),
    Parameter("username", str, "User name for basic authentication"),
    Parameter("password", str, "Password for basic authentication", sensitive=True),
    Parameter("token", str, "Token for bearer authentication", sensitive=True),
)


@dataclass(frozen=True)
class HttpPolicy:
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 30.0
    retries: int = 3
    backoff_s: float = 0.5  # first retry waits about this long, then doubling
    max_backoff_s: float = 30.0
    max_retry_after_s: float = 120.0  # a server asking for longer is not waited for: the next run retries
    verify: bool | str = True  # or the path of a CA bundle
    auth: str = "none"
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.auth not in AUTH_MODES:
            raise ParameterError(f"auth: expected one of {', '.join(AUTH_MODES)}, got {self.auth!r}")
        if self.auth == "basic" and not (self.username and self.password):
            raise ParameterError("auth basic: username and password are required")
        if self.auth == "bearer" and not self.token:
            raise ParameterError("auth bearer: token is required")
        if self.retries < 0:
            raise ParameterError(f"retries: expected 0 or more, got {self.retries}")
        if self.connect_timeout_s <= 0 or self.read_timeout_s <= 0:
            raise ParameterError("timeout_s: expected a positive number of seconds")

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> HttpPolicy:
        """The policy from validated ``HTTP_PARAMETERS`` values (absent ones take their defaults)."""
        defaults = {p.name: p.default for p in HTTP_PARAMETERS}

        def value(name: str) -> Any:
            given = params.get(name)
            return defaults[name] if given is None else given

        timeout_s = float(value("timeout_s"))
        verify: bool | str = bool(value("verify"))
        ca_bundle = value("ca_bundle")
        if ca_bundle:
            if not verify:
                raise ParameterError("ca_bundle: given while verify is false; drop one of them")
            if not Path(ca_bundle).is_file():
                raise ParameterError(f"ca_bundle: no such file {ca_bundle!r}")
            verify = str(ca_bundle)
        return cls(
            connect_timeout_s=min(cls.connect_timeout_s, timeout_s),
            read_timeout_s=timeout_s,
            retries=int(value("retries")),
            verify=verify,
            auth=str(value("auth")).lower(),
            username=value("username"),
            password=value("password"),
            token=value("token"),
        )

    def secrets(self) -> tuple[str, ...]:
        return tuple(s for s in (self.password, self.token) if s)


class _CappedRetry(Retry):
    """urllib3's Retry, but a Retry-After longer than the policy allows is cut short."""

    max_retry_after_s: float = HttpPolicy.max_retry_after_s

    def new(self, **kw: Any) -> Self:
        renewed = super().new(**kw)  # urllib3 makes a new Retry per attempt, from its own fields only
        renewed.max_retry_after_s = self.max_retry_after_s
        return renewed

    def get_retry_after(self, response: BaseHTTPResponse) -> float | None:
        seconds = super().get_retry_after(response)
        return None if seconds is None else min(seconds, self.max_retry_after_s)


class _PolicyAdapter(HTTPAdapter):
    """Applies the policy's timeouts to every request that does not set its own."""

    def __init__(self, policy: HttpPolicy) -> None:
        retry = _CappedRetry(
            total=policy.retries,
            connect=policy.retries,
            read=0,  # a read timeout already waited long; the caller's next run retries
            status=policy.retries,
            other=0,
            allowed_methods=frozenset({"GET", "HEAD"}),
            status_forcelist=RETRY_STATUSES,
            backoff_factor=policy.backoff_s,
            backoff_max=policy.max_backoff_s,
            backoff_jitter=policy.backoff_s,
            respect_retry_after_header=True,
            raise_on_status=False,  # the last answer comes back and becomes a BackendError here
            raise_on_redirect=False,
        )
        retry.max_retry_after_s = policy.max_retry_after_s
        super().__init__(max_retries=retry)
        self.timeout = (policy.connect_timeout_s, policy.read_timeout_s)

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: float | tuple[float, float] | tuple[float, None] | None = None,
        verify: bool | str = True,
        cert: bytes | str | tuple[bytes | str, bytes | str] | None = None,
        proxies: Mapping[str, str] | None = None,
    ) -> requests.Response:
        return super().send(request, stream, timeout or self.timeout, verify, cert, proxies)


class PolicySession(requests.Session):
    """A ``requests.Session`` that knows its policy, to keep secrets out of the messages it causes."""

    def __init__(self, policy: HttpPolicy) -> None:
        super().__init__()
        self.policy = policy

    def __repr__(self) -> str:
        return f"PolicySession({self.policy!r})"


def session_for(policy: HttpPolicy) -> PolicySession:
    """A session applying ``policy``; BackendError(permanent) when SPNEGO is asked for but no library is there."""
    session = PolicySession(policy)
    adapter = _PolicyAdapter(policy)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.verify = policy.verify
    if policy.auth == "basic":
        session.auth = (policy.username or "", policy.password or "")
    elif policy.auth == "bearer":
        session.auth = _BearerAuth(policy.token or "")
    elif policy.auth == "spnego":
        session.auth = _spnego_auth()
    return session


class _BearerAuth(requests.auth.AuthBase):
    def __init__(self, token: str) -> None:
        self._token = token

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = f"Bearer {self._token}"
        return request

    def __repr__(self) -> str:
        return "_BearerAuth(********)"


def _spnego_auth() -> requests.auth.AuthBase:
    """SPNEGO (Kerberos) through requests-gssapi or requests-kerberos, whichever is installed (both optional)."""
    try:
        gssapi = importlib.import_module("requests_gssapi")
        auth: requests.auth.AuthBase = gssapi.HTTPSPNEGOAuth(mutual_authentication=gssapi.OPTIONAL)
        return auth
    except ImportError:
        pass
    try:
        kerberos = importlib.import_module("requests_kerberos")
        auth = kerberos.HTTPKerberosAuth(mutual_authentication=kerberos.OPTIONAL)
        return auth
    except ImportError:
        raise BackendError(
            "auth spnego needs the optional package requests-gssapi (or requests-kerberos); install one of them",
            permanent=True,
        ) from None


def get_json(session: requests.Session, url: str, **params: Any) -> Any:
    """The decoded JSON answer to GET ``url`` with query ``params``; BackendError on any failure.

    The answer is read as it comes and refused past MAX_JSON_BYTES (a permanent error): a server that sends
    without end must not take the worker's memory with it."""
    with _get(session, url, params=params, stream=True) as response:
        body = io.BytesIO()
        copy_body(
            response,
            body,
            max_bytes=MAX_JSON_BYTES,
            where=f"GET {_safe(session, url)}",
            reason=lambda error: _reason(session, error, url),
        )
        try:
            return json.loads(body.getvalue())
        except ValueError:
            raise BackendError(
                f"GET {_safe(session, url)}: the answer is not JSON "
                f"({response.headers.get('Content-Type', 'no content type')})",
                permanent=True,
            ) from None


def download(session: requests.Session, url: str, dest_file: IO[bytes], *, max_bytes: int | None = None) -> int:
    """Streams GET ``url`` into ``dest_file`` chunk by chunk; returns the bytes written. BackendError on failure."""
    with _get(session, url, params=None, stream=True) as response:
        return copy_body(
            response,
            dest_file,
            max_bytes=max_bytes,
            where=f"GET {_safe(session, url)}",
            reason=lambda error: _reason(session, error, url),
        )


def copy_body(
    response: requests.Response,
    dest_file: IO[bytes],
    *,
    max_bytes: int | None,
    where: str,
    reason: Callable[[requests.RequestException], str],
) -> int:
    """Copies a streamed answer into ``dest_file``; the bytes written. Permanent BackendError beyond ``max_bytes``
    (counted as they come, not trusted from headers), transient when the transfer breaks off."""
    written = 0
    try:
        for chunk in response.iter_content(chunk_size=CHUNK_SIZE):
            written += len(chunk)
            if max_bytes is not None and written > max_bytes:
                raise BackendError(f"{where}: larger than the limit of {max_bytes} bytes", permanent=True)
            dest_file.write(chunk)
    except requests.RequestException as error:
        raise BackendError(f"{where}: download broke off after {written} bytes ({reason(error)})") from None
    return written


def _get(session: requests.Session, url: str, *, params: Mapping[str, Any] | None, stream: bool) -> requests.Response:
    """The response to GET ``url`` once it is a 2xx; BackendError otherwise. The caller closes it."""
    where = f"GET {_safe(session, url)}"
    try:
        response = session.get(url, params=params, stream=stream)
    except requests.exceptions.SSLError as error:
        raise BackendError(f"{where}: TLS failed ({_reason(session, error, url)})", permanent=True) from None
    except (
        requests.exceptions.InvalidURL,
        requests.exceptions.MissingSchema,
        requests.exceptions.InvalidSchema,
    ) as error:
        raise BackendError(f"{where}: invalid URL ({_reason(session, error, url)})", permanent=True) from None
    except requests.exceptions.Timeout as error:
        raise BackendError(f"{where}: timed out ({_reason(session, error, url)})") from None
    except requests.RequestException as error:
        raise BackendError(f"{where}: cannot connect ({_reason(session, error, url)})") from None
    if response.ok:
        return response
    status = response.status_code
    detail = f"HTTP {status} {response.reason or ''}".rstrip()
    body = _body_start(response, stream)
    if body:
        detail += f": {_redact(session, body, url)}"
    permanent = 400 <= status < 500 and status != 429
    raise BackendError(f"{where}: {detail}", permanent=permanent, status=status)


def _body_start(response: requests.Response, streamed: bool) -> str:
    """The first 200 characters of an error answer, in one line (servers say there what was wrong)."""
    try:
        raw = response.raw.read(200, decode_content=True) if streamed else response.content[:200]
        return " ".join(raw.decode("utf-8", "replace").split())
    except (requests.RequestException, OSError, ValueError):
        return ""  # the body only decorates the message
    finally:
        response.close()


_USERINFO = re.compile(r"(?<=//)[^/@\s]+@")


def mask_url(url: str) -> str:
    """``url`` without the password of a ``user:pass@`` part (the user name is masked too: it may be a key)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return _USERINFO.sub(f"{_MASK}@", url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{_MASK}@{host}"))


def _redact(session: requests.Session, text: str, url: str = "") -> str:
    """``text`` without URL credentials, the policy's secrets or those written into ``url``."""
    text = _USERINFO.sub(f"{_MASK}@", text)
    policy = getattr(session, "policy", None)
    secrets = list(policy.secrets()) if isinstance(policy, HttpPolicy) else []
    with contextlib.suppress(ValueError):
        secrets += [urlsplit(url).password or ""]
    for secret in filter(None, secrets):
        text = text.replace(secret, _MASK)
    return text


def _safe(session: requests.Session, url: str) -> str:
    return _redact(session, mask_url(url), url)


def _reason(session: requests.Session, error: Exception, url: str) -> str:
    """The innermost cause of a requests error, in one line, secrets removed."""
    cause: BaseException = error
    for _ in range(10):
        inner = getattr(cause, "reason", None) or cause.__cause__ or cause.__context__
        if not isinstance(inner, BaseException) or inner is cause:
            break
        cause = inner
    text = " ".join(str(cause).split()) or type(cause).__name__
    return _redact(session, f"{type(cause).__name__}: {text}"[:300], url)
