"""The shared HTTP policy against a tiny local HTTP server: retries, timeouts, auth, TLS settings, secrets."""

from __future__ import annotations

import base64
import importlib.util
import io
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from fetchers.backends import BackendError, ParameterError
from fetchers.http import HTTP_PARAMETERS, HttpPolicy, download, get_json, mask_url, session_for

FAST = {"backoff_s": 0.01, "max_backoff_s": 0.05}


@dataclass
class Reply:
    status: int = 200
    body: bytes = b'{"ok": true}'
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


class Server:
    """Answers each path with its scripted replies in turn (the last one repeats) and records the requests."""

    def __init__(self) -> None:
        self.script: dict[str, list[Reply]] = {}
        self.requests: list[tuple[str, dict[str, str]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.partition("?")[0]
                server.requests.append((self.path, dict(self.headers.items())))
                replies = server.script.get(path) or [Reply(404, b"no such thing")]
                reply = replies.pop(0) if len(replies) > 1 else replies[0]
                time.sleep(reply.delay_s)
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def count(self, path: str) -> int:
        return sum(1 for requested, _ in self.requests if requested.partition("?")[0] == path)


@pytest.fixture
def server() -> Iterator[Server]:
    serving = Server()
    thread = threading.Thread(target=serving.httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield serving
    finally:
        serving.httpd.shutdown()
        serving.httpd.server_close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_503_then_success_is_retried_and_returns_the_json(server: Server) -> None:
    server.script["/apps"] = [Reply(503, b"busy"), Reply(502, b"bad gateway"), Reply(200, b'[{"id": "a"}]')]
    session = session_for(HttpPolicy(retries=3, **FAST))

    assert get_json(session, server.base + "/apps", status="completed") == [{"id": "a"}]
    assert server.count("/apps") == 3
    assert server.requests[0][0] == "/apps?status=completed"


def test_a_429_is_retried(server: Server) -> None:
    server.script["/apps"] = [Reply(429, b"slow down"), Reply(200, b"[]")]

    assert get_json(session_for(HttpPolicy(**FAST)), server.base + "/apps") == []
    assert server.count("/apps") == 2


def test_a_404_is_permanent_and_not_retried(server: Server) -> None:
    server.script["/missing"] = [Reply(404, b"no such app: x")]

    with pytest.raises(BackendError) as raised:
        get_json(session_for(HttpPolicy(**FAST)), server.base + "/missing")

    assert raised.value.permanent
    assert "404" in str(raised.value)
    assert "no such app: x" in str(raised.value)
    assert server.count("/missing") == 1


def test_a_server_error_that_persists_is_transient_after_all_retries(server: Server) -> None:
    server.script["/apps"] = [Reply(500, b"boom")]

    with pytest.raises(BackendError) as raised:
        get_json(session_for(HttpPolicy(retries=2, **FAST)), server.base + "/apps")

    assert not raised.value.permanent
    assert "500" in str(raised.value)
    assert server.count("/apps") == 3


def test_a_503_with_retry_after_waits_that_long(server: Server) -> None:
    server.script["/apps"] = [Reply(503, b"busy", {"Retry-After": "1"}), Reply(200, b"[]")]
    started = time.monotonic()

    assert get_json(session_for(HttpPolicy(**FAST)), server.base + "/apps") == []
    assert time.monotonic() - started >= 0.9
    assert server.count("/apps") == 2


def test_a_retry_after_longer_than_the_policy_allows_is_cut_short(server: Server) -> None:
    server.script["/apps"] = [Reply(503, b"busy", {"Retry-After": "3600"}), Reply(200, b"[]")]
    started = time.monotonic()

    assert get_json(session_for(HttpPolicy(max_retry_after_s=0.2, **FAST)), server.base + "/apps") == []
    assert time.monotonic() - started < 5


def test_a_server_slower_than_the_read_timeout_gives_a_transient_error(server: Server) -> None:
    server.script["/slow"] = [Reply(200, b"[]", delay_s=2)]
    started = time.monotonic()

    with pytest.raises(BackendError) as raised:
        get_json(session_for(HttpPolicy(read_timeout_s=0.3, **FAST)), server.base + "/slow")

    assert not raised.value.permanent
    assert "timed out" in str(raised.value)
    assert time.monotonic() - started < 1.9


def test_connection_refused_is_transient_and_quick() -> None:
    started = time.monotonic()

    with pytest.raises(BackendError) as raised:
        get_json(session_for(HttpPolicy(retries=2, **FAST)), f"http://127.0.0.1:{_free_port()}/apps")

    assert not raised.value.permanent
    assert "cannot connect" in str(raised.value)
    assert time.monotonic() - started < 5


def test_an_answer_that_is_not_json_is_a_clear_error(server: Server) -> None:
    server.script["/page"] = [Reply(200, b"<html>login</html>", {"Content-Type": "text/html"})]

    with pytest.raises(BackendError, match="not JSON"):
        get_json(session_for(HttpPolicy(**FAST)), server.base + "/page")


def test_basic_auth_sends_the_credentials(server: Server) -> None:
    server.script["/apps"] = [Reply(200, b"[]")]
    policy = HttpPolicy.from_params({"auth": "basic", "username": "ann", "password": "pw-1"})

    get_json(session_for(policy), server.base + "/apps")

    sent = server.requests[0][1]["Authorization"]
    assert sent == "Basic " + base64.b64encode(b"ann:pw-1").decode()


def test_bearer_auth_sends_the_token(server: Server) -> None:
    server.script["/apps"] = [Reply(200, b"[]")]
    policy = HttpPolicy.from_params({"auth": "bearer", "token": "tok-123"})

    get_json(session_for(policy), server.base + "/apps")

    assert server.requests[0][1]["Authorization"] == "Bearer tok-123"


def test_no_auth_sends_no_authorization_header(server: Server) -> None:
    server.script["/apps"] = [Reply(200, b"[]")]

    get_json(session_for(HttpPolicy.from_params({})), server.base + "/apps")

    assert "Authorization" not in server.requests[0][1]


def test_secrets_never_appear_in_error_messages_or_reprs(server: Server) -> None:
    basic = HttpPolicy.from_params({"auth": "basic", "username": "bob", "password": "s3cret-pw"})
    bearer = HttpPolicy.from_params({"auth": "bearer", "token": "tok-9"})
    url = server.base.replace("http://", "http://bob:url-pw@") + "/apps"

    messages = []
    for policy, secret in ((basic, "s3cret-pw"), (bearer, "tok-9")):
        # A hostile or careless server echoes the credentials back in its error page.
        server.script["/apps"] = [Reply(401, f"denied for {secret}, url-pw at http://bob:{secret}@x/".encode())]
        with pytest.raises(BackendError) as raised:
            get_json(session_for(policy), url)
        assert raised.value.permanent
        messages.append(str(raised.value))
    with pytest.raises(BackendError) as refused:
        get_json(session_for(replace(basic, **FAST)), f"http://bob:s3cret-pw@127.0.0.1:{_free_port()}/apps")
    messages.append(str(refused.value))

    shown = " ".join([*messages, repr(basic), repr(bearer), repr(session_for(basic)), repr(session_for(bearer))])
    for secret in ("s3cret-pw", "tok-9", "url-pw"):
        assert secret not in shown
    assert "HTTP 401" in messages[0]


def test_mask_url_hides_user_and_password() -> None:
    assert mask_url("https://bob:pw@hs.example:18080/api") == "https://********@hs.example:18080/api"
    assert mask_url("https://hs.example/api") == "https://hs.example/api"


def test_from_params_defaults_to_5_and_30_second_timeouts_3_retries_and_verification() -> None:
    policy = HttpPolicy.from_params({})

    assert (policy.connect_timeout_s, policy.read_timeout_s, policy.retries) == (5.0, 30.0, 3)
    assert session_for(policy).verify is True


def test_verify_false_and_a_ca_bundle_reach_the_session(tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")

    assert session_for(HttpPolicy.from_params({"verify": False})).verify is False
    assert session_for(HttpPolicy.from_params({"ca_bundle": str(bundle)})).verify == str(bundle)


def test_a_missing_ca_bundle_or_a_contradiction_is_a_parameter_error(tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("x")

    with pytest.raises(ParameterError, match="ca_bundle"):
        HttpPolicy.from_params({"ca_bundle": str(tmp_path / "absent.pem")})
    with pytest.raises(ParameterError, match="ca_bundle"):
        HttpPolicy.from_params({"ca_bundle": str(bundle), "verify": False})


@pytest.mark.parametrize(
    ("params", "complaint"),
    [
        ({"auth": "digest"}, "auth"),
        ({"auth": "basic", "username": "ann"}, "password"),
        ({"auth": "bearer"}, "token"),
        ({"retries": -1}, "retries"),
        ({"timeout_s": 0}, "timeout_s"),
    ],
)
def test_incomplete_or_unknown_http_settings_are_parameter_errors(params: dict[str, object], complaint: str) -> None:
    with pytest.raises(ParameterError, match=complaint):
        HttpPolicy.from_params(params)


def test_timeout_s_sets_the_read_timeout_and_caps_the_connect_timeout() -> None:
    assert HttpPolicy.from_params({"timeout_s": 2}).connect_timeout_s == 2
    assert HttpPolicy.from_params({"timeout_s": 60}).read_timeout_s == 60


def test_password_and_token_are_declared_sensitive() -> None:
    sensitive = {p.name for p in HTTP_PARAMETERS if p.sensitive}

    assert sensitive == {"password", "token"}


@pytest.mark.skipif(
    any(importlib.util.find_spec(name) for name in ("requests_gssapi", "requests_kerberos")),
    reason="a SPNEGO library is installed",
)
def test_spnego_without_its_optional_library_is_a_permanent_clear_error() -> None:
    with pytest.raises(BackendError, match="requests-gssapi") as raised:
        session_for(HttpPolicy.from_params({"auth": "spnego"}))

    assert raised.value.permanent


def test_download_streams_the_body_into_the_file(server: Server, tmp_path: Path) -> None:
    body = bytes(range(256)) * 12_000  # 3 MB: several chunks
    server.script["/logs"] = [Reply(200, body, {"Content-Type": "application/octet-stream"})]
    target = tmp_path / "logs.zip"

    with target.open("wb") as out:
        written = download(session_for(HttpPolicy(**FAST)), server.base + "/logs", out)

    assert written == len(body)
    assert target.read_bytes() == body


def test_download_of_a_missing_file_is_permanent(server: Server) -> None:
    server.script["/logs"] = [Reply(404, b"no such app: a/1")]

    with pytest.raises(BackendError, match="no such app") as raised:
        download(session_for(HttpPolicy(**FAST)), server.base + "/logs", io.BytesIO())

    assert raised.value.permanent


def test_download_beyond_the_size_limit_is_refused(server: Server) -> None:
    server.script["/logs"] = [Reply(200, b"x" * 5000)]

    with pytest.raises(BackendError, match="limit") as raised:
        download(session_for(HttpPolicy(**FAST)), server.base + "/logs", io.BytesIO(), max_bytes=1000)

    assert raised.value.permanent


def test_json_reply_is_decoded_with_unicode(server: Server) -> None:
    server.script["/apps"] = [Reply(200, json.dumps([{"name": "Über job"}]).encode())]

    assert get_json(session_for(HttpPolicy(**FAST)), server.base + "/apps") == [{"name": "Über job"}]


def test_a_json_answer_past_the_limit_is_refused_for_good_without_being_held_whole(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 15 item 4: a History Server or JobHistory Server answer is read as it comes and refused past the cap."""
    monkeypatch.setattr("fetchers.http.MAX_JSON_BYTES", 1000)
    server.script["/apps"] = [Reply(200, b"[" + b'"x",' * 2000 + b'"x"]')]

    with pytest.raises(BackendError, match="larger than the limit of 1000 bytes") as raised:
        get_json(session_for(HttpPolicy(**FAST)), server.base + "/apps")

    assert raised.value.permanent
    server.script["/small"] = [Reply(200, b'{"ok": true}')]
    assert get_json(session_for(HttpPolicy(**FAST)), server.base + "/small") == {"ok": True}
