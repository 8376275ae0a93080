"""A tiny HTTP server on 127.0.0.1 that misbehaves the way a broken server or proxy does: absurd
``Retry-After`` values, the request's key echoed back, bytes trickled one a second. What it does is chosen
by the first segment of the path, so one server serves every case: ``base_url=f"{origin}/<mode>"``."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import Counter
from typing import Callable

#: A key shaped as the service makes them; the tests check it never appears in what the client raises.
KEY = "shelf_live_" + "Zq9" * 14 + "x" + "Ab3D5f"
SECRET = KEY[len("shelf_live_") :]

Send = Callable[[bytes], None]


def head(status: str, headers: dict[str, str], length: int | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status}", "connection: close", *(f"{k}: {v}" for k, v in headers.items())]
    if length is not None:
        lines.append(f"content-length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def whole(status: str, body: str, headers: dict[str, str] | None = None) -> bytes:
    data = body.encode()
    return head(status, {"content-type": "application/json", **(headers or {})}, len(data)) + data


def error(status: str, code: str, message: str, headers: dict[str, str] | None = None) -> bytes:
    return whole(status, json.dumps({"error": code, "message": message}), headers)


def trickle(send: Send, data: bytes, every: float = 1.0) -> None:
    """One byte, then a pause: each read of the client gets something well within any per-read timeout."""
    for i in range(len(data)):
        send(data[i : i + 1])
        time.sleep(every)


def answer(mode: str, authorization: str, send: Send) -> None:
    secret_echo = authorization.removeprefix("Bearer shelf_live_")
    if mode == "huge-retry-after":
        send(error("503 Service Unavailable", "service_unavailable", "down", {"retry-after": "99999999"}))
    elif mode == "date-retry-after":
        send(error("429 Too Many Requests", "rate_limited", "slow down", {"retry-after": "Fri, 31 Dec 9999 23:59:59 GMT"}))
    elif mode == "retry-after-2":
        send(error("503 Service Unavailable", "service_unavailable", "down", {"retry-after": "2"}))
    elif mode == "echo":
        # A debugging proxy: the whole Authorization header in the message and the request id, the bare
        # secret (no prefix) in the code.
        body = error(
            "503 Service Unavailable",
            secret_echo,
            f"refused {authorization} (secret {secret_echo})",
            {"x-request-id": authorization, "retry-after": "0", "ratelimit": authorization},
        )
        send(body)
    elif mode == "echo-html":
        page = f"<h1>Bad gateway</h1><pre>{authorization}</pre>"
        send(head("502 Bad Gateway", {"content-type": "text/html", "x-request-id": secret_echo}, len(page)) + page.encode())
    elif mode == "echo-2xx":
        page = f"<pre>{authorization}</pre>"
        send(head("200 OK", {"content-type": "text/html", "x-request-id": authorization}, len(page)) + page.encode())
    elif mode == "echo-csv":
        csv = f"masterItemId,{authorization}\r\n1,2\r\n"
        send(head("200 OK", {"content-type": "text/csv"}, len(csv)) + csv.encode())
    elif mode == "trickle-body":
        body = json.dumps({"plan": "x" * 40}).encode()
        send(head("200 OK", {"content-type": "application/json"}, len(body)))
        trickle(send, body)
    elif mode == "trickle-headers":
        trickle(send, head("200 OK", {"x-padding": "p" * 40}, 2) + b"{}")
    else:
        send(error("404 Not Found", "not_found", f"no mode {mode!r}"))


class MisbehavingServer:
    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.origin = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        #: Requests received, by mode.
        self.requests: Counter[str] = Counter()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._closed = True
        self._listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        with connection:
            received = b""
            while b"\r\n\r\n" not in received:
                chunk = connection.recv(4096)
                if not chunk:
                    return
                received += chunk
            lines = received.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
            path = lines[0].split(" ")[1]
            headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
            mode = path.split("/")[1]
            self.requests[mode] += 1
            try:
                answer(mode, headers.get("authorization", ""), connection.sendall)
            except OSError:
                pass  # the client gave up (that is what the timeout tests want)
