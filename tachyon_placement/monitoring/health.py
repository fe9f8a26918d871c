"""GET /tachyon/health: whether this process can reach its graph engine,
for HAProxy's or Kubernetes' probes (no token: a probe holds none; it
says nothing a caller could not learn from a refused request).

The check (one read of the graph version) runs on a thread of its own and
is given ``timeout`` seconds: a hung engine makes the probe answer 503 in
time, and while a check hangs no second one is started (probes every
second must not pile threads up on a dead engine).
"""
import concurrent.futures
import json
import time

PATH = '/tachyon/health'


class Health:
    """A WSGI layer answering PATH itself, everything else passed on.
    ``check()``: returns when the engine answered (what it returns is
    not shown), raises when it cannot be reached."""

    def __init__(self, application, check, engine, timeout=2.0,
                 route_key=None):
        self.application = application
        self.check = check
        self.engine = engine
        self.timeout = timeout
        self.route_key = route_key
        self._pool = concurrent.futures.ThreadPoolExecutor(
            1, thread_name_prefix='tachyon-health')
        self._running = None

    def __call__(self, environ, start_response):
        if environ.get('PATH_INFO') != PATH:
            return self.application(environ, start_response)
        if self.route_key:
            environ[self.route_key] = PATH
        if environ.get('REQUEST_METHOD') not in ('GET', 'HEAD'):
            # Placement's error shape, as every other route's.
            return _answer(start_response, '405 Method Not Allowed', {
                'errors': [{
                    'status': 405, 'title': 'Method Not Allowed',
                    'detail': 'The method specified is not allowed for '
                              'this resource.',
                    'code': 'tachyon.method_not_allowed',
                    'request_id': environ.get('openstack.request_id')}]},
                [('Allow', 'GET, HEAD')])
        started = time.monotonic()
        document = {'engine': self.engine}
        try:
            found = self._checked()
        except concurrent.futures.TimeoutError:
            status = '503 Service Unavailable'
            document.update(status='failed', error=(
                'the graph engine did not answer within %.1f s'
                % self.timeout))
        except Exception as exc:  # noqa: BLE001 - any failure is the answer
            status = '503 Service Unavailable'
            document.update(status='failed', error=str(exc)[:500])
        else:
            # Only that it answered: what the check read (the graph's
            # version, a write counter) is no one's business without a
            # token.
            del found
            status = '200 OK'
            document.update(status='ok')
        document['seconds'] = round(time.monotonic() - started, 6)
        body = _answer(start_response, status, document)
        return [] if environ['REQUEST_METHOD'] == 'HEAD' else body

    def _checked(self):
        running = self._running
        if running is None or running.done():
            running = self._running = self._pool.submit(self.check)
        return running.result(timeout=self.timeout)


def _answer(start_response, status, document, headers=()):
    body = json.dumps(document, sort_keys=True).encode()
    start_response(status, [('Content-Type', 'application/json'),
                            ('Content-Length', str(len(body))),
                            ('Cache-Control', 'no-cache')] + list(headers))
    return [body]
