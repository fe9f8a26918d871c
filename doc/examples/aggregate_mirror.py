"""Keep a local mirror of one aggregate's hosts with Tachyon's change feed.

    python doc/examples/aggregate_mirror.py http://127.0.0.1:8778 <aggregate>

Follows the feed's Server-Sent Events stream through the package's client
(tachyon_placement.feed.client), filtered on the server to the changes of
providers in the aggregate (``member_of``: a provider leaving it comes
too, so the mirror drops it).  The client reads the cursor *before* it
asks this mirror to list the aggregate's providers, so nothing that
changes meanwhile is missed; it reconnects when Tachyon restarts and
lists again when its cursor is gone (410).  The token is a noauth2 one
(use a Keystone token, or a keystoneauth1 session, in production).
"""
import json
import sys
import urllib.request

from tachyon_placement.feed import client as feed_client

PLACEMENT = 'placement 1.39'


class Mirror:
    def __init__(self, endpoint, aggregate, token='admin'):
        self.endpoint = endpoint.rstrip('/')
        self.aggregate = aggregate
        self.token = token
        self.hosts = {}         # provider uuid -> the feed's state of it
        self.feed = feed_client.FeedClient(
            self.endpoint, token=token, kind='provider,inventory,usage,'
            'trait,aggregate', member_of=aggregate)

    def _get(self, path):
        request = urllib.request.Request(self.endpoint + path, headers={
            'X-Auth-Token': self.token, 'Accept': 'application/json',
            'OpenStack-API-Version': PLACEMENT})
        with urllib.request.urlopen(request, timeout=90) as response:
            return json.load(response)

    def relist(self):
        """List the aggregate's providers as the feed shows them."""
        listed = self._get('/resource_providers?member_of=%s'
                           % self.aggregate)
        hosts = {}
        for provider in listed['resource_providers']:
            uuid = provider['uuid']
            path = '/resource_providers/%s' % uuid
            inventories = self._get(path + '/inventories')['inventories']
            usages = self._get(path + '/usages')['usages']
            for rc, inventory in inventories.items():
                inventory['used'] = usages.get(rc, 0)
            hosts[uuid] = {
                'uuid': uuid, 'name': provider['name'],
                'generation': provider['generation'],
                'inventories': inventories,
                'traits': sorted(self._get(path + '/traits')['traits']),
                'aggregates': sorted(self._get(
                    path + '/aggregates')['aggregates'])}
        self.hosts = hosts
        self.report('listed')

    def apply(self, change):
        state = change['resource_provider']
        if change['deleted'] or self.aggregate not in state['aggregates']:
            self.hosts.pop(change['uuid'], None)
        else:
            self.hosts[change['uuid']] = state
        self.report('cursor %d' % change['cursor'])

    def report(self, when):
        print('%s: %d hosts: %s' % (when, len(self.hosts), ', '.join(
            sorted(host['name'] for host in self.hosts.values()))),
            flush=True)

    def run(self):
        for change in self.feed.follow(self.relist):
            self.apply(change)


if __name__ == '__main__':
    Mirror(*sys.argv[1:3]).run()
