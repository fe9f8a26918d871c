"""Tachyon's Nova scheduler weigher in Nova's own functional framework.

Nova 34.0.0's fixtures, fake virt driver, API, conductor and scheduler;
Tachyon's app in the placement fixture's place (tachyon_in_placement.py).
The scheduler runs with Nova's default configuration plus
``[filter_scheduler] weight_classes`` naming Tachyon's weigher beside
Nova's own, and ``[placement]`` keystoneauth options pointing at the
fixture's endpoint, as a deployment's point at its placement service.
Four identical hosts; servers booted one after another.
"""
import socket
import threading

from keystoneauth1 import loading as ks_loading

import nova.conf
from nova.tests.functional import integrated_helpers

from tachyon_placement.nova import weigher  # noqa: F401 - registers [tachyon]

CONF = nova.conf.CONF
HOSTS = ('host1', 'host2', 'host3', 'host4')
NOVA_WEIGHERS = 'nova.scheduler.weights.all_weighers'
TACHYON_WEIGHER = 'tachyon_placement.nova.weigher.TachyonWeigher'
TACHYON_HEADERS = 'tachyon 1.0'


class _Base(integrated_helpers._IntegratedTestBase):
    compute_driver = 'fake.MediumFakeDriver'
    microversion = 'latest'
    ADMIN_API = True
    # Nova's weight_classes: its own weighers, and Tachyon's unless False.
    WITH_TACHYON = True

    def _setup_compute_service(self):
        pass        # the four hosts are started by setUp

    def setUp(self):
        classes = [NOVA_WEIGHERS]
        if self.WITH_TACHYON:
            classes.append(TACHYON_WEIGHER)
        self.flags(weight_classes=classes, group='filter_scheduler')
        super().setUp()
        self.point_weigher_at(self.placement_fixture.endpoint)
        for host in HOSTS:
            self._start_compute(host)
        self.rp = {host: self._get_provider_uuid_by_host(host)
                   for host in HOSTS}

    def point_weigher_at(self, endpoint):
        """Nova's [placement] keystoneauth options, as a deployment sets
        them (an admin token plugin: the fixture's noauth2 Tachyon trusts
        any token)."""
        CONF.register_opts(
            ks_loading.get_auth_plugin_conf_options('admin_token'),
            group='placement')
        self.flags(auth_type='admin_token', token='admin',
                   endpoint=endpoint, group='placement')

    def store_weigher(self, name, document):
        response = self.placement_fixture._client.put(
            '/tachyon/weighers/%s' % name, json=document,
            endpoint_override=self.placement_fixture.endpoint,
            headers={'x-auth-token': 'admin',
                     'openstack-api-version': TACHYON_HEADERS})
        self.assertEqual(201, response.status_code, response.text)

    def nova_packs(self):
        """Nova's RAM weigher packing hard: its weights are free RAM over
        the most free (minval 0), so one server of the flavor moves a
        host's by 1/16; at -100 that is 6.25 for the used host, about 5
        once Nova's spreading CPU, disk and I/O weighers (multiplier 1,
        -1 for I/O operations) are counted."""
        self.flags(ram_weight_multiplier=-100.0, group='filter_scheduler')

    def boot(self, count=4):
        """Boot ``count`` servers one after another; their hosts."""
        landed = []
        for number in range(count):
            server = self._create_server(name='server%d' % number,
                                         networks='none')
            landed.append(server['OS-EXT-SRV-ATTR:host'])
        return landed


class NovaAloneTest(_Base):
    """The reference: Nova's default weighers alone spread the servers
    (RAM, CPU and disk weighers, multiplier 1 each)."""
    WITH_TACHYON = False

    def test_default_weighers_spread(self):
        self.store_weigher('pack-ram', PACK_RAM)
        self.assertEqual(4, len(set(self.boot())))


PACK_RAM = {'weight': 1, 'scorer': {
    'type': 'usage', 'resource_class': 'MEMORY_MB', 'mode': 'pack'}}
SPREAD_RAM = {'weight': 1, 'scorer': {
    'type': 'usage', 'resource_class': 'MEMORY_MB', 'mode': 'spread'}}


class TachyonDecidesTest(_Base):

    def test_pack_with_nova_defaults(self):
        # Nova's three spreading weighers add up to 3 for an empty host
        # against 0 for the used one; Tachyon's multiplier 10 outweighs
        # them, so the servers pack by Tachyon's stored weigher.
        self.flags(weight_multiplier=10.0, group='tachyon')
        self.store_weigher('pack-ram', PACK_RAM)
        landed = self.boot()
        self.assertEqual(1, len(set(landed)), landed)

    def test_multiplier_combines_as_novas_do(self):
        # At 0.5 Tachyon's pack weighs less than Nova's spread (about 1.1
        # for an empty host: the I/O operations weigher counts the build
        # just done, 1, and RAM, CPU and disk 1/16, 1/40 and less): Nova's
        # weighers decide, as between two of Nova's own.
        self.flags(weight_multiplier=0.5, group='tachyon')
        self.store_weigher('pack-ram', PACK_RAM)
        self.assertEqual(4, len(set(self.boot())))

    def test_spread_against_nova_packing(self):
        # Nova configured to pack by RAM (about 5 for the used host):
        # Tachyon's spread at 10 spreads the servers all the same.
        self.nova_packs()
        self.flags(weight_multiplier=10.0, group='tachyon')
        self.store_weigher('spread-ram', SPREAD_RAM)
        self.assertEqual(4, len(set(self.boot())))

    def test_nova_packs_without_tachyons_say(self):
        # The same Nova configuration with Tachyon's multiplier at 2:
        # Nova's packing (about 5) wins.
        self.nova_packs()
        self.flags(weight_multiplier=2.0, group='tachyon')
        self.store_weigher('spread-ram', SPREAD_RAM)
        landed = self.boot()
        self.assertEqual(1, len(set(landed)), landed)

    def test_hard_threshold_host_never_picked(self):
        # host1 holds a server; Nova packs (it would pick host1 first).
        # A weigher's hard threshold on memory usage bars host1 from the
        # candidates, with max_placement_results at its default.
        self.assertEqual(1000, CONF.scheduler.max_placement_results)
        self.nova_packs()
        first = self._create_server(name='first', host='host1',
                                    networks='none')
        self.assertEqual('host1', first['OS-EXT-SRV-ATTR:host'])
        self.store_weigher('memory-cap', {'weight': 0, 'scorer': {
            'type': 'usage', 'resource_class': 'MEMORY_MB',
            'threshold': {'max': 0.01}}})
        landed = self.boot(3)
        self.assertNotIn('host1', landed)
        # Nova still packs among the others: the threshold bars host1
        # only, and each host with a server is then barred in its turn.
        self.assertEqual(3, len(set(landed)), landed)


class _Silent(threading.Thread):
    """A TCP server that accepts connections and never answers."""

    def __init__(self):
        super().__init__(daemon=True)
        self.listener = socket.socket()
        self.listener.bind(('127.0.0.1', 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.held = []

    def run(self):
        while True:
            try:
                self.held.append(self.listener.accept()[0])
            except OSError:
                return

    def close(self):
        self.listener.close()
        for connection in self.held:
            connection.close()


class TachyonUnreachableTest(_Base):
    """No answer: Nova schedules as before, and the log says why."""

    def _assert_nova_decides(self):
        self.flags(weight_multiplier=10.0, group='tachyon')
        self.store_weigher('pack-ram', PACK_RAM)
        # Tachyon's pack at 10 would put all four on one host.
        self.assertEqual(4, len(set(self.boot())))
        log = self.stdlog.logger.output
        self.assertIn("Tachyon's host weights are unavailable", log)
        # Once per outage, not once per request.
        self.assertEqual(1, log.count("host weights are unavailable"))

    def test_connection_refused(self):
        closed = socket.socket()
        closed.bind(('127.0.0.1', 0))
        port = closed.getsockname()[1]
        closed.close()
        self.point_weigher_at('http://127.0.0.1:%d/placement' % port)
        self._assert_nova_decides()

    def test_no_answer_within_the_timeout(self):
        silent = _Silent()
        silent.start()
        self.addCleanup(silent.close)
        self.flags(timeout=0.2, group='tachyon')
        self.point_weigher_at('http://127.0.0.1:%d/placement' % silent.port)
        self._assert_nova_decides()
        self.assertIn('Timeout', self.stdlog.logger.output)

    def test_a_placement_that_is_not_tachyon(self):
        # Placement answers 404 for Tachyon's route: weigh nothing.
        self.point_weigher_at(self.placement_fixture.endpoint + '/nowhere')
        self._assert_nova_decides()
