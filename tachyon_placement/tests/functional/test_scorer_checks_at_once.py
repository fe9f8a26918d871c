"""Checks of operators' Cypher queries (PUT /tachyon/weighers, each in a
sandbox server of its own) run CHECKS_AT_ONCE at a time per process: 16
PUTs at once made 16 sandboxes, 1.53 GB together.  One more waits for a
place up to CHECK_WAIT seconds, then gets 503 with Retry-After."""
import concurrent.futures
import json
import os
import threading
import time

import webob

from tachyon_placement.processes import sandbox as sandboxes
from tachyon_placement.tests.functional import served

# Runs until its time bound ([telemetry] scorer_timeout), holding little
# memory: 600**3 rows of literal lists (range() and other list builders
# are refused before any sandbox starts).
_ONES = '[%s]' % ','.join(['1'] * 600)
SLOW = ('UNWIND %s AS a UNWIND %s AS b UNWIND %s AS c '
        'WITH a, b, c WHERE a + b + c < 0 RETURN toString(a) AS uuid, '
        'b AS score' % (_ONES, _ONES, _ONES))
QUICK = ("MATCH (n:ResourceProvider) RETURN n.uuid AS uuid, "
         "1 AS score")


def _put(app, name, query):
    req = webob.Request.blank('/tachyon/weighers/%s' % name, method='PUT')
    req.headers.update({'x-auth-token': 'admin',
                        'openstack-api-version': 'tachyon 1.0',
                        'accept': 'application/json',
                        'content-type': 'application/json'})
    req.body = json.dumps({'weight': 1, 'scorer': {
        'type': 'cypher', 'query': query}}).encode()
    return req.get_response(app)


def _sandboxes():
    """redis-server processes of this process's sandboxes now."""
    return sum(1 for _pid, _name, line in served.children(os.getpid())
               if b'tachyon-scorer-' in line)


def test_checks_run_a_few_at_a_time(service):
    app = service.app
    most, sampling = [0], threading.Event()

    def sample():
        while not sampling.is_set():
            most[0] = max(most[0], _sandboxes())
            time.sleep(0.01)
    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(
                lambda number: _put(app, 'slow-%d' % number, SLOW),
                range(8)))
    finally:
        sampling.set()
        sampler.join(30)
    # Each ran to its time bound (refused, 400) or waited too long (503).
    statuses = sorted(answer.status_int for answer in answers)
    assert set(statuses) <= {400, 503}, [a.text for a in answers]
    assert 1 <= most[0] <= sandboxes.CHECKS_AT_ONCE, most


def test_past_the_wait_a_check_gets_503_with_retry_after(
        service, monkeypatch):
    monkeypatch.setattr(sandboxes, 'CHECK_WAIT', 0.2)
    taken = [sandboxes._CHECKS.acquire(timeout=30)
             for _place in range(sandboxes.CHECKS_AT_ONCE)]
    assert all(taken)
    try:
        answer = _put(service.app, 'waits', QUICK)
    finally:
        for _place in taken:
            sandboxes._CHECKS.release()
    assert answer.status_int == 503, answer.text
    assert answer.headers['Retry-After'] == '5'
    error = answer.json['errors'][0]
    assert error['code'] == 'tachyon.scorer_checks.busy'
    # Nothing was stored; with a place free it is.
    assert _put(service.app, 'waits', QUICK).status_int in (200, 201)
