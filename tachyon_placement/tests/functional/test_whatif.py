"""What-if sessions served by gunicorn with two worker processes on the
suite's engine: a session is the graph's, not a process's (its requests
land on either worker), its bounds ([whatif] max_sessions, max_consumers,
ttl) hold, concurrent writes within one session are each kept or refused,
never lost, and nothing of a session reaches the real graph until it is
committed."""
import concurrent.futures
import os
import subprocess
import sys
import time
import uuid

import pytest

from tachyon_placement.api import wsgi
from tachyon_placement.tests.functional import served

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
MAX_SESSIONS = 4
MAX_CONSUMERS = 12
HOSTS = 3


@pytest.fixture(scope='module')
def api(tmp_path_factory):
    served_api = served.ServedGunicorn(
        tmp_path_factory.mktemp('whatif'), workers=2,
        extra_conf='[whatif]\nmax_sessions = %d\nmax_consumers = %d\n'
                   % (MAX_SESSIONS, MAX_CONSUMERS)).start()
    yield served_api
    served_api.stop()


@pytest.fixture(scope='module')
def hosts(api):
    found = []
    for number in range(HOSTS):
        host = str(uuid.uuid4())
        status, _ = api.request('POST', '/resource_providers',
                                {'name': 'whatif-%d' % number, 'uuid': host})
        assert status == 200
        status, _ = api.request(
            'PUT', '/resource_providers/%s/inventories' % host,
            {'resource_provider_generation': 0,
             'inventories': {'VCPU': {'total': 64}}})
        assert status == 200
        found.append(host)
    return found


def _tachyon(api, method, path, body=None):
    return api.request(method, path, body, service='tachyon',
                       version='1.0')


def _open(api, ttl=None):
    status, body = _tachyon(api, 'POST', '/tachyon/sessions',
                            {} if ttl is None else {'ttl': ttl})
    assert status == 201, body
    return body['id']


def _within(api, session, method, path, body=None):
    return api.request(method, path, body,
                       headers={wsgi.SESSION_HEADER: session})


def _claim(host, vcpus=1):
    return {'allocations': {host: {'resources': {'VCPU': vcpus}}},
            'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
            'consumer_type': 'INSTANCE'}


def test_a_session_is_served_by_every_worker(api, hosts):
    session = _open(api)
    consumers = [str(uuid.uuid4()) for _ in range(8)]
    # New connections: gunicorn hands them to either worker.
    for consumer in consumers:
        status, body = _within(api, session, 'PUT',
                               '/allocations/%s' % consumer,
                               _claim(hosts[0], 4))
        assert status == 204, body
    for consumer in consumers:
        status, body = _within(api, session, 'GET',
                               '/allocations/%s' % consumer)
        assert status == 200 and list(body['allocations']) == [hosts[0]]
    # Within the session host 0 has 32 of 64 VCPUs left; for real, 64.
    status, body = _within(api, session, 'GET', '/resource_providers')
    assert status == 400
    status, found = api.request(
        'GET', '/tachyon/capacity?resources=VCPU:4&in_tree=%s' % hosts[0],
        service='tachyon', version='1.0',
        headers={wsgi.SESSION_HEADER: session})
    assert status == 200 and found['total'] == 8, found
    status, found = _tachyon(
        api, 'GET', '/tachyon/capacity?resources=VCPU:4&in_tree=%s'
        % hosts[0])
    assert status == 200 and found['total'] == 16, found
    for consumer in consumers:
        status, body = api.request('GET', '/allocations/%s' % consumer)
        assert status == 200 and body['allocations'] == {}
    assert _tachyon(api, 'DELETE', '/tachyon/sessions/%s' % session)[0] \
        == 204


def test_concurrent_writes_within_a_session_are_kept_or_refused(api, hosts):
    session = _open(api)
    consumers = [str(uuid.uuid4()) for _ in range(MAX_CONSUMERS)]

    def claim(consumer):
        return consumer, _within(api, session, 'PUT',
                                 '/allocations/%s' % consumer,
                                 _claim(hosts[1]))[0]

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        answers = dict(pool.map(claim, consumers))
    assert set(answers.values()) <= {204, 409}, answers
    kept = {consumer for consumer, status in answers.items()
            if status == 204}
    assert kept
    status, shown = _tachyon(api, 'GET', '/tachyon/sessions/%s' % session)
    assert status == 200
    assert {held['consumer_uuid'] for held in shown['consumers']} == kept
    assert shown['usage_changes'] == {hosts[1]: {'VCPU': len(kept)}}
    # Past max_consumers a write is refused, the session unchanged.
    extra = [str(uuid.uuid4())
             for _ in range(MAX_CONSUMERS - len(kept) + 1)]
    statuses = [_within(api, session, 'PUT', '/allocations/%s' % consumer,
                        _claim(hosts[1]))[0] for consumer in extra]
    assert statuses[-1] == 409 and set(statuses[:-1]) <= {204}
    # Committed: exactly the session's consumers, for real.
    status, committed = _tachyon(
        api, 'POST', '/tachyon/sessions/%s/commit' % session)
    assert status == 200, committed
    status, usages = api.request('GET', '/resource_providers/%s/usages'
                                 % hosts[1])
    assert usages['usages']['VCPU'] == MAX_CONSUMERS


def test_sessions_are_bounded_and_expire(api, hosts):
    # Opened at once, from both workers: never more than max_sessions.
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(
            lambda _: _tachyon(api, 'POST', '/tachyon/sessions', {}),
            range(2 * MAX_SESSIONS)))
    assert sorted(status for status, _ in answers) == (
        [201] * MAX_SESSIONS + [409] * MAX_SESSIONS), answers
    for status, body in answers:
        if status == 201:
            assert _tachyon(api, 'DELETE',
                            '/tachyon/sessions/%s' % body['id'])[0] == 204
    opened = [_open(api, ttl=1)]
    opened += [_open(api) for _ in range(MAX_SESSIONS - 1)]
    status, body = _tachyon(api, 'POST', '/tachyon/sessions', {})
    assert status == 409
    assert body['errors'][0]['code'] == 'tachyon.session.too_many'
    time.sleep(1.5)
    # The expired one answers no more, and counts no more.
    status, body = _within(api, opened[0], 'GET',
                           '/allocation_candidates?resources=VCPU:1')
    assert status == 404
    assert body['errors'][0]['code'] == 'tachyon.session.not_found'
    replacement = _open(api)
    for session in opened[1:] + [replacement]:
        assert _tachyon(api, 'DELETE',
                        '/tachyon/sessions/%s' % session)[0] == 204


def _example(api, host):
    done = subprocess.run(
        [sys.executable, os.path.join(ROOT, 'doc', 'examples',
                                      'drain_host.py'), api.url, host],
        capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr


def test_the_documented_drain_moves_what_fits_or_nothing(api, hosts):
    """doc/examples/drain_host.py, as the what-if guide shows it."""
    source = str(uuid.uuid4())
    assert api.request('PUT', '/resource_classes/CUSTOM_LICENSE')[0] in (
        201, 204)
    assert api.request('POST', '/resource_providers',
                       {'name': 'drain-src', 'uuid': source})[0] == 200
    assert api.request(
        'PUT', '/resource_providers/%s/inventories' % source,
        {'resource_provider_generation': 0,
         'inventories': {'VCPU': {'total': 8},
                         'CUSTOM_LICENSE': {'total': 1}}})[0] == 200
    movable = [str(uuid.uuid4()) for _ in range(2)]
    for consumer in movable:
        assert api.request('PUT', '/allocations/%s' % consumer,
                           _claim(source, 2))[0] == 204
    code, output = _example(api, 'drain-src')
    assert code == 0 and 'committed: 2 moves' in output, output
    for consumer in movable:
        status, body = api.request('GET', '/allocations/%s' % consumer)
        assert list(body['allocations']) != [source], body
        assert body['allocations'], body
    # One that only the source can hold: nothing moves.
    pinned = str(uuid.uuid4())
    claim = _claim(source, 1)
    claim['allocations'][source]['resources']['CUSTOM_LICENSE'] = 1
    assert api.request('PUT', '/allocations/%s' % pinned, claim)[0] == 204
    again = str(uuid.uuid4())
    assert api.request('PUT', '/allocations/%s' % again,
                       _claim(source, 1))[0] == 204
    code, output = _example(api, 'drain-src')
    assert code == 1 and 'does not fit elsewhere: %s' % pinned in output, \
        output
    for consumer in (pinned, again):
        status, body = api.request('GET', '/allocations/%s' % consumer)
        assert list(body['allocations']) == [source], body


def test_a_deletion_is_committed_with_the_moves_or_not_at_all(api, hosts):
    """A session that empties a host and deletes it: committed whole; one
    whose deleted host got a child for real meanwhile: refused, nothing
    written."""
    doomed, spare = str(uuid.uuid4()), hosts[2]
    assert api.request('POST', '/resource_providers',
                       {'name': 'doomed', 'uuid': doomed})[0] == 200
    assert api.request('PUT', '/resource_providers/%s/inventories' % doomed,
                       {'resource_provider_generation': 0,
                        'inventories': {'VCPU': {'total': 8}}})[0] == 200
    tenant = str(uuid.uuid4())
    assert api.request('PUT', '/allocations/%s' % tenant,
                       _claim(doomed, 2))[0] == 204
    session = _open(api)
    moved = _claim(spare, 2)
    moved['consumer_generation'] = 1
    assert _within(api, session, 'PUT', '/allocations/%s' % tenant,
                   moved)[0] == 204
    assert _within(api, session, 'DELETE',
                   '/resource_providers/%s' % doomed)[0] == 204
    status, body = _tachyon(api, 'POST',
                            '/tachyon/sessions/%s/commit' % session)
    assert status == 200, body
    assert api.request('GET', '/resource_providers/%s' % doomed)[0] == 404
    status, body = api.request('GET', '/allocations/%s' % tenant)
    assert list(body['allocations']) == [spare], body

    # Deleted within a session; a child created for real meanwhile.
    parent = str(uuid.uuid4())
    assert api.request('POST', '/resource_providers',
                       {'name': 'parent', 'uuid': parent})[0] == 200
    session = _open(api)
    assert _within(api, session, 'DELETE',
                   '/resource_providers/%s' % parent)[0] == 204
    assert api.request('POST', '/resource_providers', {
        'name': 'late-child', 'uuid': str(uuid.uuid4()),
        'parent_provider_uuid': parent})[0] == 200
    status, body = _tachyon(api, 'POST',
                            '/tachyon/sessions/%s/commit' % session)
    assert status == 409, body
    # (Placement moves no parent's generation for a new child: the check
    # of what the write leaves the deleted provider finds it.)
    assert body['errors'][0]['code'] == 'placement.resource_provider.inuse', \
        body
    assert 'It has child resource providers' in body['errors'][0]['detail']
    assert api.request('GET', '/resource_providers/%s' % parent)[0] == 200
