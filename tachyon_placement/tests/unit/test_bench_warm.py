"""bench/'s warm-up: every connection open at once before the first
request (so that each server worker gets some), each URL asked on each,
failures counted per service."""
import http.server
import threading

from bench import client as http_client
from bench import workloads


class _Recorder(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def do_GET(self):
        server = self.server
        with server.lock:
            server.open_peers.add(self.client_address)
            if self.path != '/':
                # How many connections were open when this one asked.
                server.seen.append((self.path, len(server.open_peers)))
        status = 404 if self.path == '/missing' else 200
        self.send_response(status)
        self.send_header('Content-Length', '2')
        self.end_headers()
        self.wfile.write(b'{}')

    def log_message(self, *args):
        pass


def test_every_connection_is_open_before_the_first_warming_request():
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Recorder)
    server.lock = threading.Lock()
    server.open_peers, server.seen = set(), []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        client = http_client.Client('svc', '127.0.0.1',
                                    server.server_address[1], timeout=30)
        failed = workloads.warm_workers({'svc': client}, ['/a', '/missing'],
                                        connections=6, rounds=2)
    finally:
        server.shutdown()
        server.server_close()
    assert len(server.open_peers) == 6
    assert all(open_then == 6 for _path, open_then in server.seen)
    assert sorted(path for path, _ in server.seen) == (
        ['/a'] * 12 + ['/missing'] * 12)
    assert failed == {'svc': 12}
