"""Misbehaving peers on real loopback sockets: a receiver that drips its answer a byte at a
time, one that answers a given prefix of a reply and hangs up, and a small SMTP server that
can hold its answer to DATA (to kill the sender mid-send)."""

from __future__ import annotations

import select
import socket
import threading
import time
from dataclasses import dataclass, field


def _read_request(conn: socket.socket) -> bytes:
    """Read one HTTP request (headers and a Content-Length body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


class _Server:
    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.requests: list[bytes] = []
        self.lock = threading.Lock()
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self._stop.set()
        self.sock.close()

    def __enter__(self) -> _Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class DripServer(_Server):
    """Answers every request with a valid reply, one byte every `interval` seconds, for ever
    (the reply is long). Records each connection's (start, end) and how many were open at
    once."""

    def __init__(self, interval: float = 1.0) -> None:
        self.interval = interval
        self.connections: list[list[float]] = []
        self.open_now = 0
        self.most_open = 0
        super().__init__()

    def _serve(self, conn: socket.socket) -> None:
        with self.lock:
            span = [time.monotonic(), 0.0]
            self.connections.append(span)
            self.open_now += 1
            self.most_open = max(self.most_open, self.open_now)
        reply = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 100000
        try:
            self.requests.append(_read_request(conn))
            for i in range(len(reply)):
                conn.sendall(reply[i : i + 1])
                # Between bytes, notice at once when the client hangs up.
                readable, _, _ = select.select([conn], [], [], self.interval)
                if (readable and not conn.recv(1024)) or self._stop.is_set():
                    break
        except OSError:
            pass  # the client gave up: what we are here to see
        finally:
            conn.close()
            with self.lock:
                span[1] = time.monotonic()
                self.open_now -= 1


class CutServer(_Server):
    """Answers every request with `reply` (a prefix of an HTTP response) and hangs up."""

    def __init__(self, reply: bytes) -> None:
        self.reply = reply
        super().__init__()

    def _serve(self, conn: socket.socket) -> None:
        try:
            self.requests.append(_read_request(conn))
            conn.sendall(self.reply)
        finally:
            conn.close()


class KeepAliveServer(_Server):
    """Answers requests on a connection one after another, each with the next of `replies`
    (the last repeats), and keeps it open unless told (`close_after` answers per connection).
    Records which connection (a number) each request came on."""

    def __init__(self, replies: list[bytes], close_after: int | None = None) -> None:
        self.replies = replies
        self.close_after = close_after
        self.served = 0
        self.on_connection: list[int] = []  # the connection of each request
        self.connections = 0
        self.closed = 0  # connections it has hung up
        super().__init__()

    def _serve(self, conn: socket.socket) -> None:
        with self.lock:
            self.connections += 1
            number = self.connections
        answered = 0
        try:
            while True:
                request = _read_request(conn)
                if not request:
                    return
                with self.lock:
                    self.requests.append(request)
                    self.on_connection.append(number)
                    reply = self.replies[min(self.served, len(self.replies) - 1)]
                    self.served += 1
                conn.sendall(reply)
                answered += 1
                if self.close_after is not None and answered >= self.close_after:
                    return
        except OSError:
            return
        finally:
            conn.close()
            with self.lock:
                self.closed += 1


@dataclass
class SmtpServer:
    """A small SMTP server on 127.0.0.1. A message counts as accepted when its 250 reply to
    the end of DATA is sent. While `hold` is set, that reply is withheld (`in_data` is set):
    the sender waits, and if it dies meanwhile the message is dropped, as SMTP has it."""

    accepted: list[bytes] = field(default_factory=list)
    drip: float = 0.0  # > 0: every answer is sent a byte at a time, this many seconds apart
    hold: threading.Event = field(default_factory=threading.Event)
    in_data: threading.Event = field(default_factory=threading.Event)
    dropped: int = 0

    def __post_init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb")

        def say(line: str) -> None:
            data = line.encode() + b"\r\n"
            if not self.drip:
                conn.sendall(data)
            for i in range(len(data) if self.drip else 0):
                conn.sendall(data[i : i + 1])
                time.sleep(self.drip)

        try:
            say("220 localhost test SMTP")
            while True:
                line = reader.readline()
                if not line:
                    return
                verb = line.strip().split(b" ")[0].upper()
                if verb in (b"EHLO", b"HELO"):
                    say("250 localhost")
                elif verb in (b"MAIL", b"RCPT", b"RSET", b"NOOP"):
                    say("250 OK")
                elif verb == b"DATA":
                    say("354 go ahead")
                    message = b""
                    while (line := reader.readline()) not in (b".\r\n", b""):
                        message += line
                    if self.hold.is_set():
                        self.in_data.set()
                        if not conn.recv(1):  # the sender is gone before our answer
                            self.dropped += 1
                            return
                    self.accepted.append(message)
                    say("250 accepted")
                elif verb == b"QUIT":
                    say("221 bye")
                    return
                else:
                    say("502 not implemented")
        except OSError:
            return
        finally:
            conn.close()

    def close(self) -> None:
        self.sock.close()


def self_signed(host: str, directory: str) -> tuple[str, str]:
    """A certificate for `host` and its key, as files in `directory`: (cert, key)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = f"{directory}/cert.pem", f"{directory}/key.pem"
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    return cert_path, key_path


class TlsServer(_Server):
    """Answers every request over TLS with `reply`; `silent`: accepts and says nothing (not
    even its part of the handshake)."""

    def __init__(self, cert: str, key: str, reply: bytes = b"", silent: bool = False) -> None:
        import ssl

        self.reply = reply or b"HTTP/1.1 204 No Content\r\n\r\n"
        self.silent = silent
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert, key)
        self.server_names: list[str | None] = []
        self.context.sni_callback = lambda sock, name, ctx: self.server_names.append(name)
        super().__init__()

    def _serve(self, conn: socket.socket) -> None:
        try:
            if self.silent:
                conn.recv(65536)
                self._stop.wait(30)
                return
            with self.context.wrap_socket(conn, server_side=True) as tls:
                self.requests.append(_read_request(tls))
                tls.sendall(self.reply)
        except OSError:
            pass  # a client that refused our certificate
        finally:
            conn.close()
