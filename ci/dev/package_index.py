"""A real package index on 127.0.0.1 for the release rehearsal and the publishing tests:
pypiserver (the `release` dependency group), optionally behind a proxy that enforces PyPI's
per-project file-size limit.

    with package_index(work) as index:                 # index: its URL (twine uploads here)
        index.simple                                   # its simple API, <url>/simple/
    with package_index(work, size_limits={"pytinytensor-cu12-libs": 100 << 20}) as index:
        ...                                            # an upload above 100 MiB is refused
        index.set_limit("pytinytensor-cu12-libs", 700 << 20)   # as a granted limit request

pypiserver takes uploads of any size, so by itself it cannot show what PyPI does to a release
whose library wheel is above the project's limit (100 MiB unless raised on request). The proxy
(standard library, threaded) reads each request whole, as PyPI does, and answers an upload whose
file is above its project's limit with HTTP 400 and PyPI's message ("File too large. Limit for
project 'pytinytensor-cu12-libs' is 100 MB."), forwarding nothing; every other request (uploads
within the limit, the simple pages, downloads) goes to pypiserver unchanged. The limits can change
while it runs, to model a limit raised between two publishing runs.
"""

from __future__ import annotations

import contextlib
import http.client
import http.server
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

from ci import commands
from ci.project_paths import link_or_copy

MIB = 1 << 20
# Per connection, not forwarded (RFC 9110 7.6.1); the proxy sets its own length.
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade"}


log = commands.logger("package-index")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def normalized(project: str) -> str:
    return re.sub(r"[-_.]+", "-", project).lower()


def form_fields(body: bytes, boundary: bytes):
    """(name, start, end) of each part of a multipart/form-data body: its field name and where
    its value lies in `body` (not copied: a library wheel is hundreds of MB)."""
    delimiter = b"--" + boundary
    pos = body.find(delimiter)
    while pos != -1:
        start = pos + len(delimiter)
        if body[start : start + 2] == b"--":  # the closing delimiter
            return
        head_end = body.find(b"\r\n\r\n", start)
        end = body.find(b"\r\n" + delimiter, head_end + 4)
        if head_end == -1 or end == -1:
            return
        head = body[start:head_end].decode("latin-1")
        m = re.search(r'content-disposition:[^\r\n]*?\bname="([^"]*)"', head, re.I)
        yield (m.group(1) if m else ""), head_end + 4, end
        pos = end + 2


class SizeLimitProxy(http.server.ThreadingHTTPServer):
    """In front of an index at `upstream` (host, port): refuses uploads above their project's limit."""

    daemon_threads = True

    def __init__(self, upstream: tuple[str, int], limits: dict[str, int], log_path: Path) -> None:
        self.upstream = upstream
        self.limits = {normalized(k): v for k, v in limits.items()}
        self.lock = threading.Lock()
        self.log_file = open(log_path, "a", buffering=1)
        super().__init__(("127.0.0.1", 0), ProxyHandler)

    def limit(self, project: str) -> int | None:
        with self.lock:
            return self.limits.get(normalized(project))

    def set_limit(self, project: str, size: int | None) -> None:
        with self.lock:
            if size is None:
                self.limits.pop(normalized(project), None)
            else:
                self.limits[normalized(project)] = size

    def server_close(self) -> None:
        super().server_close()
        self.log_file.close()


class ProxyHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: SizeLimitProxy

    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        self.server.log_file.write(f"{self.address_string()} {format % args}\n")

    def read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def too_large(self, body: bytes) -> str | None:
        """PyPI's message when this is an upload above its project's limit, else None."""
        m = re.search(r'boundary="?([^";]+)"?', self.headers.get("Content-Type", ""))
        if self.command != "POST" or not m or "multipart/form-data" not in self.headers.get("Content-Type", ""):
            return None
        project, size = "", 0
        for name, start, end in form_fields(body, m.group(1).encode("latin-1")):
            if name == "name":
                project = body[start:end].decode("utf-8", "replace").strip()
            elif name == "content":
                size = end - start
        limit = self.server.limit(project) if project else None
        if limit is None or size <= limit:
            return None
        return f"File too large. Limit for project {normalized(project)!r} is {limit // MIB} MB."

    def forward(self) -> None:
        body = self.read_body() if self.command in ("POST", "PUT", "PATCH") else b""
        refusal = self.too_large(body)
        if refusal:
            self.server.log_file.write(f"refused: {refusal}\n")
            data = (refusal + "\n").encode()
            self.send_response(400, refusal)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        upstream = http.client.HTTPConnection(*self.server.upstream, timeout=600)
        try:
            upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for key, value in self.headers.items():
                if key.lower() not in HOP_BY_HOP | {"content-length"}:
                    upstream.putheader(key, value)
            if self.command in ("POST", "PUT", "PATCH"):
                upstream.putheader("Content-Length", str(len(body)))
            upstream.endheaders(body or None)
            response = upstream.getresponse()
            data = response.read()
        finally:
            upstream.close()
        self.send_response(response.status, response.reason)
        for key, value in response.getheaders():
            if key.lower() not in HOP_BY_HOP | {"content-length", "server", "date"}:
                self.send_header(key, value)
        # a HEAD answer has no body but the length of the GET one
        length = response.getheader("Content-Length", "0") if self.command == "HEAD" else str(len(data))
        self.send_header("Content-Length", length)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_HEAD = do_POST = do_PUT = forward


class PackageIndex(str):
    """The index's URL (what twine uploads to), with its simple API, its logs and, behind the
    size-limiting proxy, a way to change a project's limit while it runs."""

    log: Path
    proxy: SizeLimitProxy | None

    @property
    def simple(self) -> str:
        return f"{self}/simple/"

    def set_limit(self, project: str, size: int | None) -> None:
        """Uploads for `project` above `size` bytes are refused from now on (None: no limit)."""
        if self.proxy is None:
            raise RuntimeError("this index has no size limits: start it with size_limits={...}")
        self.proxy.set_limit(project, size)


@contextlib.contextmanager
def package_index(
    work: Path,
    name: str = "index",
    files: tuple[Path, ...] = (),
    overwrite: bool = True,
    size_limits: dict[str, int] | None = None,
    wait_s: float = 60,
):
    """pypiserver on 127.0.0.1 (uploads without authentication, no fallback to other indexes),
    serving `files` and whatever is uploaded to it; with `overwrite`, an upload may replace a
    file (PyPI never does). With `size_limits` (project -> bytes, changeable while it runs with
    set_limit), behind the size-limiting proxy. Fails, naming its log, if it does not answer
    within `wait_s` seconds."""
    server_exe = shutil.which("pypi-server")
    if server_exe is None:
        raise RuntimeError("pypi-server is not on PATH: install the `release` group (ci/release/locks/release.txt)")
    packages = work / f"{name}-packages"
    packages.mkdir()
    for f in files:
        link_or_copy(f, packages / f.name)
    port = free_port()
    log_path = work / f"{name}-pypiserver.log"
    command = [server_exe, "run", "-i", "127.0.0.1", "-p", str(port), "-a", ".", "-P", ".", "--disable-fallback"]
    with open(log_path, "w") as log_file:
        server = subprocess.Popen(
            command + (["--overwrite"] if overwrite else []) + [str(packages)],
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    proxy = None
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + wait_s
        while True:
            try:
                urllib.request.urlopen(f"{url}/simple/", timeout=2).close()
                break
            except OSError:
                if server.poll() is not None:
                    why = f"exited with status {server.returncode}"
                elif time.monotonic() > deadline:
                    why = f"did not answer at {url}/simple/ within {wait_s:g} s"
                else:
                    time.sleep(0.2)
                    continue
                raise RuntimeError(f"pypiserver {name} {why}; its log, {log_path}:\n{log_path.read_text()}") from None
        if size_limits is not None:
            proxy = SizeLimitProxy(("127.0.0.1", port), size_limits, work / f"{name}-proxy.log")
            threading.Thread(target=proxy.serve_forever, name=f"{name}-proxy", daemon=True).start()
            url = f"http://127.0.0.1:{proxy.server_address[1]}"
        index = PackageIndex(url)
        index.log, index.proxy = log_path, proxy
        limits = f", size limits {size_limits}" if size_limits is not None else ""
        log(f"{name} up at {url} (pypiserver pid {server.pid}{limits})")
        yield index
    finally:
        if proxy is not None:
            proxy.shutdown()
            proxy.server_close()
        server.terminate()
        server.wait(timeout=30)
        log(f"{name} stopped")
