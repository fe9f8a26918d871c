"""Drain a host the way Watcher would, tried in a what-if session first.

    python doc/examples/drain_host.py http://127.0.0.1:8778 <host name>

Opens a session and, within it, moves each consumer of the host to the
first other host Placement's candidates offer for what it holds there,
through Nova's migration flow (its allocations go to a migration consumer
on the source while it claims on the target; the migration's are then
deleted, as a confirmed migration's are).  If every consumer found room,
the moves are committed in one write (refused if anything they read
changed meanwhile); otherwise the session is discarded and nothing moved.
The token is a noauth2 one (use a Keystone token in production).
"""
import json
import sys
import urllib.error
import urllib.request
import uuid

PLACEMENT = 'placement 1.39'
TACHYON = 'tachyon 1.0'


class Tachyon:
    def __init__(self, endpoint, token='admin'):
        self.endpoint = endpoint.rstrip('/')
        self.token = token
        self.session = None

    def call(self, method, path, body=None, version=PLACEMENT):
        """(status, JSON answer or None); within the session once one is
        open."""
        headers = {'X-Auth-Token': self.token, 'Accept': 'application/json',
                   'OpenStack-API-Version': version}
        if self.session and not path.startswith('/tachyon/sessions'):
            headers['OpenStack-Tachyon-Session'] = self.session
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers['Content-Type'] = 'application/json'
        request = urllib.request.Request(self.endpoint + path, data=data,
                                         method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                text = response.read()
                return response.status, json.loads(text) if text else None
        except urllib.error.HTTPError as exc:
            text = exc.read()
            return exc.code, json.loads(text) if text else None


def consumers_of(tachyon, host):
    """{consumer: (its allocations on the host's tree, its generation,
    project, user)} of the host's root provider and its children."""
    status, found = tachyon.call('GET', '/resource_providers?in_tree=%s'
                                 % host)
    held = {}
    for provider in found['resource_providers']:
        status, allocations = tachyon.call(
            'GET', '/resource_providers/%s/allocations' % provider['uuid'])
        for consumer in allocations['allocations']:
            if consumer not in held:
                status, mine = tachyon.call('GET',
                                            '/allocations/%s' % consumer)
                held[consumer] = mine
    return held


def drain(tachyon, name):
    status, found = tachyon.call('GET', '/resource_providers?name=%s' % name)
    if not found['resource_providers']:
        print('no host %s' % name)
        return 2
    host = found['resource_providers'][0]['uuid']
    held = consumers_of(tachyon, host)
    status, opened = tachyon.call('POST', '/tachyon/sessions', {'ttl': 300},
                                  version=TACHYON)
    tachyon.session = opened['id']
    stuck = []
    for consumer, mine in sorted(held.items()):
        totals = {}
        for resources in mine['allocations'].values():
            for rc, amount in resources['resources'].items():
                totals[rc] = totals.get(rc, 0) + amount
        query = ','.join('%s:%d' % item for item in sorted(totals.items()))
        status, offered = tachyon.call(
            'GET', '/allocation_candidates?resources=%s' % query)
        target = next((request for request in offered['allocation_requests']
                       if host not in request['allocations']), None)
        if target is None:
            stuck.append(consumer)
            continue
        migration = str(uuid.uuid4())
        status, answer = tachyon.call('POST', '/allocations', {
            consumer: {'allocations': target['allocations'],
                       'project_id': mine['project_id'],
                       'user_id': mine['user_id'],
                       'consumer_generation': mine['consumer_generation'],
                       'consumer_type': mine['consumer_type']},
            migration: {'allocations': {
                rp: {'resources': entry['resources']}
                for rp, entry in mine['allocations'].items()},
                'project_id': mine['project_id'],
                'user_id': mine['user_id'], 'consumer_generation': None,
                'consumer_type': 'MIGRATION'}})
        if status != 204:
            stuck.append(consumer)
            continue
        tachyon.call('DELETE', '/allocations/%s' % migration)
        print('%s -> %s' % (consumer, ', '.join(sorted(
            target['allocations']))))
    session, tachyon.session = tachyon.session, None
    if stuck:
        tachyon.call('DELETE', '/tachyon/sessions/%s' % session,
                     version=TACHYON)
        print('does not fit elsewhere: %s; nothing moved' % ', '.join(stuck))
        return 1
    status, answer = tachyon.call('POST', '/tachyon/sessions/%s/commit'
                                  % session, version=TACHYON)
    if status != 200:
        print('not committed: %s' % answer['errors'][0]['detail'])
        return 1
    print('committed: %d moves' % len(held))
    return 0


if __name__ == '__main__':
    sys.exit(drain(Tachyon(sys.argv[1]), sys.argv[2]))
