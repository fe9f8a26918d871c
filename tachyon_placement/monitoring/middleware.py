"""The WSGI layer that times every request for the metrics."""
import re
import time

from tachyon_placement.monitoring import metrics

# A request no route matched.
UNMATCHED = 'unmatched'
# Every label takes a bounded set of values whatever clients send: a
# method, a status or a version outside them is counted as OTHER (one
# series per distinct method of unauthenticated requests grew the
# exposition to 42,000 lines after 2,000 requests, 3.2 s a scrape).
OTHER = 'other'
METHODS = frozenset(('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE',
                     'OPTIONS'))
VERSION = re.compile(r'[0-9]{1,2}\.[0-9]{1,3}')
CODE = re.compile(r'[a-z][a-z0-9_.]{0,79}')


class RequestMetrics:
    """Counts and times each request by route template, method, status
    and microversion (and an error's code), read from the WSGI environ
    where the inner layers left them: ``route_key`` (the template of the
    route matched), ``version_keys`` (the microversion negotiated, the
    first one set), ``code_key`` (an error answer's code).  A response
    that is a stream is timed to its first byte."""

    def __init__(self, application, route_key, version_keys, code_key):
        self.application = application
        self.route_key = route_key
        self.version_keys = version_keys
        self.code_key = code_key

    def __call__(self, environ, start_response):
        started = time.monotonic()
        answered = []

        def start(status, headers, exc_info=None):
            answered.append(status)
            return start_response(status, headers, exc_info)

        try:
            result = self.application(environ, start)
        except BaseException:
            self._record(environ, 500, started)
            raise
        status = int(answered[-1].split(' ', 1)[0]) if answered else 500
        self._record(environ, status, started)
        return result

    def _record(self, environ, status, started):
        version = next((environ[key] for key in self.version_keys
                        if environ.get(key) is not None), None)
        metrics.request(
            environ.get(self.route_key, UNMATCHED),
            bounded_method(environ.get('REQUEST_METHOD')),
            status if 100 <= status <= 599 else 0,
            _within(version, VERSION) if version is not None else '-',
            time.monotonic() - started,
            _within(environ.get(self.code_key), CODE))


def bounded_method(method):
    """The method's label: one of METHODS, or OTHER."""
    return method if method in METHODS else OTHER


def _within(value, pattern):
    if value is None:
        return None
    value = str(value)
    return value if pattern.fullmatch(value) else OTHER
