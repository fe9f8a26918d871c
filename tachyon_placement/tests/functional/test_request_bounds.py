"""Request bodies are bounded ([api] max_request_body_size: 413 in
Placement's error document, by Content-Length or while a chunked body is
read) and an error never quotes a refused value whole."""
import http.client
import io
import json
import socket
import types

import psutil
import pytest

from tachyon_placement.api import errors
from tachyon_placement.api import wsgi
from tachyon_placement.tests.functional import served

LIMIT = 1 << 20


@pytest.fixture(scope='module')
def api(tmp_path_factory):
    served_api = served.ServedPlacement(
        tmp_path_factory.mktemp('request-bounds'),
        extra_conf='[api]\nmax_request_body_size = %d\n' % LIMIT).start()
    yield served_api
    served_api.stop()


def _send(api, body):
    """(status, JSON document) of a POST /resource_providers with
    ``body``; the server may answer and close before the body is all sent
    (as it should for one over the limit): the answer is read anyway."""
    head = ('POST /resource_providers HTTP/1.1\r\nHost: 127.0.0.1\r\n'
            'x-auth-token: admin\r\naccept: application/json\r\n'
            'content-type: application/json\r\n'
            'openstack-api-version: placement latest\r\n'
            'connection: close\r\n')
    head += 'content-length: %d\r\n\r\n' % len(body)
    payload = body
    sock = socket.create_connection(('127.0.0.1', api.port), timeout=60)
    try:
        sock.sendall(head.encode())
        try:
            for start in range(0, len(payload), 65536):
                sock.sendall(payload[start:start + 65536])
        except (BrokenPipeError, ConnectionResetError):
            pass
        response = http.client.HTTPResponse(sock)
        response.begin()
        return response.status, json.loads(response.read())
    finally:
        sock.close()


def test_a_body_over_the_limit_is_a_413(api):
    rss_before = psutil.Process(api.process.pid).memory_info().rss
    body = json.dumps({'name': 'x' * (20 * LIMIT)}).encode()
    status, document = _send(api, body)
    assert status == 413, document
    error = document['errors'][0]
    assert error['status'] == 413
    assert error['code'] == 'placement.undefined_code'
    assert 'max_request_body_size' in error['detail']
    # Not held whole: the 20 MB body never entered the process.
    grown = psutil.Process(api.process.pid).memory_info().rss - rss_before
    assert grown < 10 * LIMIT, grown
    # A body within the limit is served.
    status, document = _send(api, json.dumps({'name': 'fits'}).encode())
    assert status == 200, document


def test_a_refused_value_is_not_quoted_whole(api):
    # 900 KB of name: within the body limit, far over the schema's 200.
    status, document = _send(api, json.dumps(
        {'name': 'y' * 900000}).encode())
    assert status == 400, document
    detail = document['errors'][0]['detail']
    assert 'is too long' in detail
    assert len(detail) < 10000, len(detail)


def test_a_chunked_body_is_read_only_to_the_limit():
    # What gunicorn gives the application for a chunked body (the
    # built-in server does not decode chunked bodies at all).
    class Stream(io.BytesIO):
        read_bytes = 0

        def read(self, size=-1):
            data = super().read(size)
            Stream.read_bytes += len(data)
            return data

    def request(size):
        environ = {'REQUEST_METHOD': 'POST', 'wsgi.input_terminated': True,
                   'wsgi.input': Stream(b'x' * size),
                   wsgi.ENV_APP: types.SimpleNamespace(
                       conf=types.SimpleNamespace(api=types.SimpleNamespace(
                           max_request_body_size=LIMIT)))}
        return wsgi.Request(environ)

    assert request(LIMIT).bounded_body() == b'x' * LIMIT
    Stream.read_bytes = 0
    with pytest.raises(errors.RequestEntityTooLarge):
        request(20 * LIMIT).bounded_body()
    assert Stream.read_bytes <= LIMIT + 1


@pytest.mark.parametrize('last_id', [b'\xc2\xb2', b'\xb2', b'9' * 5000])
def test_a_last_event_id_that_is_no_cursor_is_a_json_400(api, last_id):
    # '\xb2' is '²' to WSGI (latin-1): str.isdigit takes it, int refuses.
    sock = socket.create_connection(('127.0.0.1', api.port), timeout=60)
    try:
        sock.sendall(b'GET /tachyon/changes/stream HTTP/1.1\r\n'
                     b'Host: 127.0.0.1\r\nx-auth-token: admin\r\n'
                     b'accept: text/event-stream\r\n'
                     b'openstack-api-version: tachyon 1.0\r\n'
                     b'Last-Event-ID: ' + last_id + b'\r\n'
                     b'connection: close\r\n\r\n')
        response = http.client.HTTPResponse(sock)
        response.begin()
        document = json.loads(response.read())
    finally:
        sock.close()
    assert response.status == 400, document
    assert response.getheader('content-type').startswith('application/json')
    assert document['errors'][0]['code'] == 'tachyon.bad_request'
    assert 'Last-Event-ID must be a cursor' in document['errors'][0]['detail']
