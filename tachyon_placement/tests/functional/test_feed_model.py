"""The change feed's filters against their definition: a filtered
follower's view equals the graph's objects that pass the filter.

A hypothesis state machine writes through the API (claims, moves,
deletions of consumers, aggregates, traits and inventories of hosts),
restarts the feed server's process (a new copy of the graph and an empty
log: its readers then catch up from the graph) and the API's, and has
followers read: one per filter (host, member_of, root, resource_class and
kinds), some through the feed server's Feed (its in-memory log), some
through an API process's (no log: every read catches up from the graph),
each from its own cursor, applying every change it is sent to a mirror as
the feed's documents say (a deletion drops the object, any other change
replaces it).

The oracle, after each read: the objects of the follower's mirror that
pass its filter (judged on their mirrored state, the hosts and aggregates
of the providers they name as the graph has them now) are the objects of
the graph that pass it, with the same state in what the filter is about.
A change that takes an object out of a filter must reach that filter's
followers, or the mirror keeps it.
"""
import hypothesis
from hypothesis import stateful
from hypothesis import strategies
from oslo_config import cfg

from tachyon_placement import conf as tachyon_conf
from tachyon_placement import deploy
from tachyon_placement.feed import changes as feed_changes
from tachyon_placement.tests.functional.fixtures import engine as engines
from tachyon_placement.tests.functional.fixtures import seed

HOSTS = ['host-a', 'host-b', 'host-c']
AGGREGATES = ['a9900000-0000-4000-8000-00000000000%d' % number
              for number in range(2)]
TRAITS = ['CUSTOM_RED', 'CUSTOM_BLUE']
CONSUMERS = ['c0000000-0000-4000-8000-00000000000%d' % number
             for number in range(5)]
PROVIDER_FIELDS = {
    'provider': ('name', 'parent_provider_uuid', 'root_provider_uuid'),
    'inventory': ('inventories:total',),
    'usage': ('inventories:used',),
    'trait': ('traits',),
    'aggregate': ('aggregates',),
}


def _conf():
    conf = cfg.ConfigOpts()
    tachyon_conf.register_opts(conf)
    conf([], default_config_files=[])
    conf.set_override('auth_strategy', 'noauth2', group='api')
    return conf


# Every answer is taken (a claim may be refused, 409): the model checks
# the feed against what the graph holds, whatever the writes did.
ANY_STATUS = range(200, 600)


def _call(app, method, url, body=None, expect=ANY_STATUS):
    return seed.Seeder(app, '1.39').call(method, url, body, expect=expect)


# The followers: (name, Filter, reads through the feed server's log).
FOLLOWERS = [
    ('everything', feed_changes.EVERYTHING, True),
    ('host-a', feed_changes.Filter(None, None, frozenset(['host-a']),
                                   None, None), True),
    ('host-a (API)', feed_changes.Filter(None, None, frozenset(['host-a']),
                                         None, None), False),
    ('member_of', feed_changes.Filter(None, None, None,
                                      frozenset(AGGREGATES[:1]), None), True),
    ('member_of (API)', feed_changes.Filter(
        None, None, None, frozenset(AGGREGATES[:1]), None), False),
    ('kind=usage', feed_changes.Filter(frozenset(['usage']), None, None,
                                       None, None), True),
    ('kind=trait', feed_changes.Filter(frozenset(['trait']), None, None,
                                       None, None), True),
    ('kind=aggregate', feed_changes.Filter(frozenset(['aggregate']), None,
                                           None, None, None), True),
    ('kind=inventory (API)', feed_changes.Filter(
        frozenset(['inventory']), None, None, None, None), False),
    ('kind=consumer', feed_changes.Filter(frozenset(['consumer']), None,
                                          None, None, None), True),
    ('host-b consumers', feed_changes.Filter(
        frozenset(['allocation']), None, frozenset(['host-b']), None,
        None), True),
    ('resource_class=MEMORY_MB', feed_changes.Filter(
        None, None, None, None, frozenset(['MEMORY_MB'])), True),
]


class Follower:
    def __init__(self, name, wanted, through_log, cursor):
        self.name = name
        self.wanted = wanted
        self.through_log = through_log
        self.cursor = cursor
        self.providers = {}
        self.consumers = {}

    def apply(self, change):
        if change['type'] == feed_changes.PROVIDER:
            mirror, state = self.providers, change['resource_provider']
        elif change['type'] == feed_changes.CONSUMER:
            mirror, state = self.consumers, change['consumer']
        else:
            return
        if change['deleted']:
            mirror.pop(change['uuid'], None)
        else:
            mirror[change['uuid']] = state


def _aspect(document, field):
    if ':' in field:
        table, column = field.split(':')
        return {rc: inventory[column]
                for rc, inventory in document[table].items()}
    return document[field]


class FeedModel(stateful.RuleBasedStateMachine):
    """See the module's docstring."""

    def __init__(self):
        super().__init__()
        self.engine = engines.new_engine()
        self.api_store = deploy.compose(self.engine)
        self.api_store.sync()
        self.app = deploy.loadapp(_conf(), store=self.api_store)
        self.feed_store = deploy.compose(self.engine)
        self.feed_store.feed.keeps_log = True
        self.hosts = {}
        for name in HOSTS:
            body = _call(self.app, 'POST', '/resource_providers',
                         {'name': name}, expect=(200,))
            self.hosts[name] = body['uuid']
            self._inventory(name, 8)
        head = self.feed_store.feed.head()
        self.followers = [Follower(name, wanted, through_log, head)
                          for name, wanted, through_log in FOLLOWERS]
        self._snapshot_followers()

    def _snapshot_followers(self):
        """Each follower starts from a full list (a relist at its
        cursor)."""
        truth = self._truth()
        for follower in self.followers:
            follower.providers = dict(truth[0])
            follower.consumers = dict(truth[1])

    def teardown(self):
        for store in (self.api_store, self.feed_store):
            store.worlds.listeners.clear()
        engines.drop_engine(self.engine)

    # -- writes ---------------------------------------------------------

    def _provider(self, name):
        return _call(self.app, 'GET', '/resource_providers/%s'
                     % self.hosts[name], expect=(200,))

    def _inventory(self, name, total):
        generation = self._provider(name)['generation']
        _call(self.app, 'PUT', '/resource_providers/%s/inventories'
              % self.hosts[name], {
                  'resource_provider_generation': generation,
                  'inventories': {'VCPU': {'total': total},
                                  'MEMORY_MB': {'total': 4096}}})

    @stateful.rule(consumer=strategies.sampled_from(CONSUMERS),
                   host=strategies.sampled_from(HOSTS),
                   vcpus=strategies.integers(1, 2),
                   memory=strategies.sampled_from([0, 256]))
    def claim(self, consumer, host, vcpus, memory):
        """Claim, or move the consumer to ``host`` (one write)."""
        body = _call(self.app, 'GET', '/allocations/%s' % consumer)
        resources = {'VCPU': vcpus}
        if memory:
            resources['MEMORY_MB'] = memory
        _call(self.app, 'PUT', '/allocations/%s' % consumer, {
            'allocations': {self.hosts[host]: {'resources': resources}},
            'project_id': 'project', 'user_id': 'user',
            'consumer_generation': body.get('consumer_generation'),
            'consumer_type': 'INSTANCE'})

    @stateful.rule(consumer=strategies.sampled_from(CONSUMERS))
    def delete(self, consumer):
        _call(self.app, 'DELETE', '/allocations/%s' % consumer)

    @stateful.rule(host=strategies.sampled_from(HOSTS),
                   aggregates=strategies.sets(
                       strategies.sampled_from(AGGREGATES)))
    def set_aggregates(self, host, aggregates):
        generation = self._provider(host)['generation']
        _call(self.app, 'PUT', '/resource_providers/%s/aggregates'
              % self.hosts[host], {'aggregates': sorted(aggregates),
                                   'resource_provider_generation':
                                   generation})

    @stateful.rule(host=strategies.sampled_from(HOSTS),
                   traits=strategies.sets(strategies.sampled_from(TRAITS)))
    def set_traits(self, host, traits):
        generation = self._provider(host)['generation']
        _call(self.app, 'PUT', '/resource_providers/%s/traits'
              % self.hosts[host], {'traits': sorted(traits),
                                   'resource_provider_generation':
                                   generation})

    @stateful.rule(host=strategies.sampled_from(HOSTS),
                   total=strategies.integers(8, 10))
    def set_inventory(self, host, total):
        self._inventory(host, total)

    @stateful.rule()
    def restart_feed_server(self):
        """A new process: its copy of the graph and log start empty."""
        self.feed_store.worlds.listeners.clear()
        self.feed_store = deploy.compose(self.engine)
        self.feed_store.feed.keeps_log = True

    @stateful.rule()
    def restart_api(self):
        self.api_store.worlds.listeners.clear()
        self.api_store = deploy.compose(self.engine)
        self.app = deploy.loadapp(_conf(), store=self.api_store)

    # -- reads ----------------------------------------------------------

    @stateful.rule(index=strategies.integers(0, len(FOLLOWERS) - 1),
                   limit=strategies.sampled_from([None, 1, 3]))
    def read(self, index, limit):
        follower = self.followers[index]
        feed = (self.feed_store if follower.through_log
                else self.api_store).feed
        # Page by page (``limit``) until a read gives nothing more: the
        # follower is then at the head, and its view must be exact.
        while True:
            found, follower.cursor = feed.changes(follower.cursor, limit,
                                                  follower.wanted)
            for change in found:
                follower.apply(feed_changes.render(change))
            if not found:
                break
        self._check(follower)

    @stateful.rule()
    def read_all(self):
        for index in range(len(self.followers)):
            self.read(index, None)

    # -- the oracle -------------------------------------------------------

    def _truth(self):
        """({provider uuid: the feed's document}, {consumer uuid: the
        feed's document}) of the graph now."""
        world = self.api_store.worlds.current(whole=True)
        providers = {uuid: record.as_document()
                     for uuid, record in world.records.items()}
        consumers = {}
        for consumer in CONSUMERS:
            state, _generations, _modified = (
                self.api_store.allocations.of_consumer(consumer))
            if state is not None and state.allocations:
                consumers[consumer] = feed_changes.consumer_document(state)
        return providers, consumers

    def _passes(self, wanted, kind, document, providers):
        """Whether an object passes ``wanted`` by what it is now
        (``providers``: the graph's, for the hosts and aggregates of the
        providers a consumer names)."""
        if kind == 'provider':
            touched = [document]
            aspects = set(PROVIDER_FIELDS)
            classes = set(document['inventories'])
        else:
            touched = [providers[uuid] for uuid in document['allocations']
                       if uuid in providers]
            aspects = {'consumer', 'allocation'}
            classes = {rc for held in document['allocations'].values()
                       for rc in held['resources']}
        hosts = {providers[p['root_provider_uuid']]['name']
                 for p in touched if p['root_provider_uuid'] in providers}
        roots = {p['root_provider_uuid'] for p in touched}
        aggregates = {agg for p in touched for agg in p['aggregates']}
        for accepted, values in ((wanted.kinds, aspects),
                                 (wanted.roots, roots),
                                 (wanted.hosts, hosts),
                                 (wanted.aggregates, aggregates),
                                 (wanted.classes, classes)):
            if accepted is not None and accepted.isdisjoint(values):
                return False
        return True

    def _view(self, wanted, kind, documents, providers):
        """What a follower of ``wanted`` knows of ``documents``: those
        that pass, reduced to what the filter is about."""
        view = {}
        for uuid, document in documents.items():
            if not self._passes(wanted, kind, document, providers):
                continue
            if kind == 'provider' and wanted.kinds is not None:
                view[uuid] = {
                    field: _aspect(document, field)
                    for aspect in sorted(wanted.kinds & set(
                        PROVIDER_FIELDS))
                    for field in PROVIDER_FIELDS[aspect]}
            else:
                view[uuid] = document
        return view

    def _check(self, follower):
        providers, consumers = self._truth()
        for kind, mine, truth in (
                ('provider', follower.providers, providers),
                ('consumer', follower.consumers, consumers)):
            seen = self._view(follower.wanted, kind, mine, providers)
            expected = self._view(follower.wanted, kind, truth, providers)
            assert seen == expected, (follower.name, kind, follower.cursor)


FeedModel.TestCase.settings = hypothesis.settings(
    max_examples=int(__import__('os').environ.get(
        'TACHYON_FEED_MODEL_EXAMPLES', 15)),
    stateful_step_count=30, deadline=None,
    suppress_health_check=[hypothesis.HealthCheck.too_slow])
test_feed_model = FeedModel.TestCase
