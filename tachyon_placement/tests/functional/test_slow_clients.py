"""The built-in server cuts a connection that has not sent its request
line and headers within ``[api] request_header_timeout`` (a slowloris:
300 half-sent requests held 300 of its threads for as long as their
clients liked), counted from the connection's acceptance, whether the
client sends nothing or trickles a byte at a time.  A client that sends
its request slowly but within the time is answered."""
import os
import socket
import time

import pytest

from tachyon_placement.tests.functional import served


@pytest.fixture
def api(tmp_path):
    server = served.ServedPlacement(
        tmp_path / 'api',
        extra_conf='\n[api]\nrequest_header_timeout = 2\n').start()
    yield server
    server.stop()


def _threads(pid):
    return len(os.listdir('/proc/%d/task' % pid))


def _cut(sock, deadline):
    """Whether the server closed ``sock`` before ``deadline``."""
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            if not sock.recv(4096):
                return True
        except socket.timeout:
            return False
        except OSError:
            return True
    return False


def test_half_sent_requests_are_cut_at_the_header_timeout(api):
    before = _threads(api.process.pid)
    half = b'GET /resource_providers HTTP/1.1\r\nHost: x\r\n'
    silent, trickling = [], []
    for number in range(60):
        sock = socket.create_connection(('127.0.0.1', api.port), timeout=10)
        sock.sendall(half)
        (silent if number % 2 else trickling).append(sock)
    opened = time.monotonic()
    time.sleep(0.5)
    assert _threads(api.process.pid) >= before + 30
    # Answered meanwhile, and a slow client within the time too.
    assert api.request('GET', '/resource_providers')[0] == 200
    slow = socket.create_connection(('127.0.0.1', api.port), timeout=10)
    for piece in (b'GET / HTTP/1.0\r\n', b'Accept: application/json\r\n',
                  b'\r\n'):
        slow.sendall(piece)
        time.sleep(0.3)
    assert slow.recv(64).startswith(b'HTTP/1.0 200 '), 'slow but in time'
    slow.close()
    # One header line every half second: cut all the same.
    while time.monotonic() - opened < 1.8:
        for sock in trickling:
            sock.sendall(b'X-Slow: 1\r\n')
        time.sleep(0.5)
    deadline = opened + 10
    assert all(_cut(sock, deadline) for sock in silent + trickling)
    for sock in silent + trickling:
        sock.close()
    deadline = time.monotonic() + 10
    while _threads(api.process.pid) > before + 2 and (
            time.monotonic() < deadline):
        time.sleep(0.1)
    assert _threads(api.process.pid) <= before + 2
    assert 'did not send its request within 2 s' in api.log_tail()
