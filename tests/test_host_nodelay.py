"""The class server answers a kept-alive connection at once, not after a delayed ACK (issue 40).

uvicorn writes an answer's head and its body apart. With Nagle's algorithm on,
the body waits for the ACK of the head, which a browser (and httpx) delays by
~40 ms on a connection it keeps alive: every request of a page cost 45 ms on
an idle server. asyncio turns Nagle off only on sockets that say they are
TCP, and the host's own bound socket said protocol 0. Here a real uvicorn
serves the host's protocol on the host's socket, and the socket of every
connection it accepts must have TCP_NODELAY set, also on a listening socket
made the old way.
"""

from __future__ import annotations

import socket
import threading
import time

import httpx
import pytest
import uvicorn

from attn_practice.grader.host.connections import ConnectionGuard, guarded_protocol
from attn_practice.grader.host.server import _bind


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"ok"})


def old_way() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # protocol 0, as before the fix
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    return sock


@pytest.mark.parametrize("listening", [lambda: _bind("127.0.0.1", 0), old_way], ids=["host", "protocol-0"])
def test_every_accepted_connection_has_nagle_off(listening):
    seen: list[int] = []
    base = guarded_protocol(ConnectionGuard())

    class Recording(base):  # type: ignore[misc, valid-type]
        def connection_made(self, transport):
            super().connection_made(transport)
            seen.append(transport.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    sock = listening()
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, http=Recording, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60  # a ceiling on a loaded machine, not a timing target
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            for _ in range(3):  # one kept-alive connection
                assert client.get("/").text == "ok"
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            assert client.get("/").text == "ok"
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        sock.close()
    assert len(seen) == 2 and all(seen), seen


def test_the_hosts_listening_socket_says_it_is_tcp():
    sock = _bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()
