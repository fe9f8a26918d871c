"""Keep a local mirror of one aggregate's hosts with Tachyon's change feed.

    python doc/examples/aggregate_mirror.py http://127.0.0.1:8778 <aggregate>

Lists the aggregate's providers once, then follows GET /tachyon/changes
(long poll) from the cursor read *before* the listing, so nothing that
changed meanwhile is missed (a change seen twice is applied twice, to the
same end).  A 410 means the cursor is older than the feed keeps: list
again.  Standard library only; the token is a noauth2 one (use a Keystone
token in production).
"""
import json
import sys
import urllib.error
import urllib.request

TACHYON = 'tachyon 1.0'
PLACEMENT = 'placement 1.39'


class Mirror:
    def __init__(self, endpoint, aggregate, token='admin'):
        self.endpoint = endpoint.rstrip('/')
        self.aggregate = aggregate
        self.token = token
        self.hosts = {}         # provider uuid -> the feed's state of it
        self.cursor = None

    def _get(self, path, version):
        request = urllib.request.Request(self.endpoint + path, headers={
            'X-Auth-Token': self.token, 'Accept': 'application/json',
            'OpenStack-API-Version': version})
        with urllib.request.urlopen(request, timeout=90) as response:
            return json.load(response)

    def resync(self):
        """List the aggregate's providers; follow changes from before."""
        cursor = self._get('/tachyon/changes', TACHYON)['cursor']
        listed = self._get('/resource_providers?member_of=%s'
                           % self.aggregate, PLACEMENT)
        hosts = {}
        for provider in listed['resource_providers']:
            uuid = provider['uuid']
            inventories = self._get('/resource_providers/%s/inventories'
                                    % uuid, PLACEMENT)['inventories']
            usages = self._get('/resource_providers/%s/usages' % uuid,
                               PLACEMENT)['usages']
            for rc, inventory in inventories.items():
                inventory['used'] = usages.get(rc, 0)
            hosts[uuid] = {
                'uuid': uuid, 'name': provider['name'],
                'generation': provider['generation'],
                'inventories': inventories,
                'traits': sorted(self._get(
                    '/resource_providers/%s/traits' % uuid,
                    PLACEMENT)['traits']),
                'aggregates': [self.aggregate]}
        self.hosts, self.cursor = hosts, cursor

    def apply(self, change):
        if change['type'] != 'resource_provider':
            return
        state = change['resource_provider']
        if change['deleted'] or self.aggregate not in state['aggregates']:
            self.hosts.pop(change['uuid'], None)
        else:
            self.hosts[change['uuid']] = state

    def follow_once(self, wait=30):
        """Apply what changed since the cursor (waiting up to ``wait``
        seconds for something); the number of changes applied."""
        try:
            answer = self._get('/tachyon/changes?since=%d&wait=%d'
                               % (self.cursor, wait), TACHYON)
        except urllib.error.HTTPError as exc:
            if exc.code != 410:
                raise
            self.resync()
            return 0
        for change in answer['changes']:
            self.apply(change)
        self.cursor = answer['cursor']
        return len(answer['changes'])


def main(endpoint, aggregate):
    mirror = Mirror(endpoint, aggregate)
    mirror.resync()
    print('%d hosts at cursor %d' % (len(mirror.hosts), mirror.cursor))
    while True:
        if mirror.follow_once():
            print('%d hosts at cursor %d: %s' % (
                len(mirror.hosts), mirror.cursor,
                ', '.join(sorted(h['name'] for h in mirror.hosts.values()))))


if __name__ == '__main__':
    main(*sys.argv[1:3])
