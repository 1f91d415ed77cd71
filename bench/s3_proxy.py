"""A counting HTTP proxy in front of an S3 server: every request a client sends to
``proxy.endpoint`` is forwarded to the server, and counted (by method, and by what it asks:
LIST, HEAD, GET of a range or a whole object, PUT, DELETE) with the bytes of its response
body. Runs in a thread of the benchmark on 127.0.0.1 (a free port); :meth:`stop` ends it.

    proxy = CountingProxy("http://127.0.0.1:5000")
    before = proxy.snapshot()
    ...  # a query with endpoint=proxy.endpoint
    print(proxy.since(before))  # {"requests": 7, "bytes": 81234, "GET range": 5, ...}
    print(proxy.log_since(before))  # [("LIST", "/bucket?list-type=2&prefix=...", 1234), ...]
"""

from __future__ import annotations

import http.client
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade"}


class CountingProxy:
    def __init__(self, upstream: str):
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname, parts.port or 80)
        self.counts: Counter[str] = Counter()
        self.log: list[tuple[str, str, int]] = []  # (kind, path and query, response bytes), in order
        self._lock = threading.Lock()
        self._local = threading.local()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    body = _read_chunked(self.rfile)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                if body is not None:
                    headers["Content-Length"] = str(len(body))
                conn = proxy._connection()
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    response = conn.getresponse()
                    data = response.read()
                except (OSError, http.client.HTTPException):
                    proxy._local.conn = None
                    conn = proxy._connection()
                    conn.request(self.command, self.path, body=body, headers=headers)
                    response = conn.getresponse()
                    data = response.read()
                proxy._count(self.command, self.path, self.headers, len(data))
                self.send_response(response.status, response.reason)
                head = self.command == "HEAD"  # (its Content-Length is the object's: keep it)
                for key, value in response.getheaders():
                    if key.lower() not in _HOP and (head or key.lower() != "content-length"):
                        self.send_header(key, value)
                if not head:
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = http.client.HTTPConnection(*self.upstream, timeout=60)
        return conn

    def _count(self, method: str, path: str, headers, size: int) -> None:
        if method == "GET" and ("list-type=" in path or "delimiter=" in path or path.rstrip("/").count("/") <= 1 and "?" in path):
            kind = "LIST"
        elif method == "GET":
            kind = "GET range" if headers.get("Range") else "GET whole"
        else:
            kind = method
        with self._lock:
            self.counts["requests"] += 1
            self.counts["bytes"] += size
            self.counts[kind] += 1
            self.log.append((kind, path, size))

    def snapshot(self) -> Counter[str]:
        with self._lock:
            return Counter(self.counts)

    def log_since(self, before: Counter[str]) -> list[tuple[str, str, int]]:
        """The requests made since ``before`` (a :meth:`snapshot`), in order: what each asked."""
        with self._lock:
            return self.log[before["requests"] :]

    def since(self, before: Counter[str]) -> dict[str, int]:
        now = self.snapshot()
        return {k: now[k] - before.get(k, 0) for k in now if now[k] - before.get(k, 0)}

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _read_chunked(stream) -> bytes:
    out = bytearray()
    while True:
        line = stream.readline().strip()
        size = int(line.split(b";")[0], 16)
        if size == 0:
            stream.readline()
            return bytes(out)
        out += stream.read(size)
        stream.readline()
