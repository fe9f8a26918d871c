"""Tachyon's Nova scheduler weigher in Nova's own functional framework.

Nova 34.0.0's fixtures, fake virt driver, API, conductor and scheduler;
Tachyon's app in the placement fixture's place (tachyon_in_placement.py).
The scheduler runs with Nova's default configuration plus
``[filter_scheduler] weight_classes`` naming Tachyon's weigher beside
Nova's own, and ``[placement]`` keystoneauth options pointing at the
fixture's endpoint, as a deployment's point at its placement service.
Four identical hosts; servers booted one after another.
"""
import collections
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

from keystoneauth1 import loading as ks_loading
import testtools

import nova.conf
from nova.tests.functional import integrated_helpers

from tachyon_placement.nova import weigher
from tachyon_placement.tests.functional import prometheus

import tachyon_in_placement

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
    # The compute hosts, started by setUp.
    HOSTS = HOSTS

    def _setup_compute_service(self):
        pass        # the four hosts are started by setUp

    def setUp(self):
        # Tachyon's answers by (method, path): what Nova asked.
        self.asked = collections.Counter()

        def counted(app):
            def application(environ, start_response):
                self.asked[environ['REQUEST_METHOD'],
                           environ.get('PATH_INFO', '')] += 1
                return app(environ, start_response)
            return application
        tachyon_in_placement.WRAPPERS.append(counted)
        self.addCleanup(tachyon_in_placement.WRAPPERS.remove, counted)
        classes = [NOVA_WEIGHERS]
        if self.WITH_TACHYON:
            classes.append(TACHYON_WEIGHER)
        self.flags(weight_classes=classes, group='filter_scheduler')
        super().setUp()
        self.point_weigher_at(self.placement_fixture.endpoint)
        for host in self.HOSTS:
            self._start_compute(host)
        self.rp = {host: self._get_provider_uuid_by_host(host)
                   for host in self.HOSTS}

    def point_weigher_at(self, endpoint):
        """Nova's [placement] keystoneauth options, as a deployment sets
        them (an admin token plugin: the fixture's noauth2 Tachyon trusts
        any token)."""
        CONF.register_opts(
            ks_loading.get_auth_plugin_conf_options('admin_token'),
            group='placement')
        self.flags(auth_type='admin_token', token='admin',
                   endpoint=endpoint, group='placement')

    def tachyon(self, method, path, document=None):
        """A request to Tachyon's own API through the fixture's intercept;
        the response."""
        return self.placement_fixture._client.request(
            path, method, json=document,
            endpoint_override=self.placement_fixture.endpoint,
            headers={'x-auth-token': 'admin',
                     'openstack-api-version': TACHYON_HEADERS})

    def store_weigher(self, name, document):
        response = self.tachyon('PUT', '/tachyon/weighers/%s' % name,
                                document)
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
        # One request to Tachyon per weighing: Nova weighed once per
        # server (each saw the claims before it).
        self.assertEqual(4, self.asked['POST', '/tachyon/host_weights'])
        self.assertEqual(4, self.asked['GET', '/allocation_candidates'])

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


def _free_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def _stopped(process):
    process.terminate()
    process.wait(timeout=30)


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
        self.point_weigher_at('http://127.0.0.1:%d/placement'
                              % _free_port())
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


class TelemetryTest(_Base):
    """Servers land by live telemetry: Debian's Prometheus scraping an
    exporter of per-host CPU utilisation, collected by Tachyon every
    second, a metric weigher coolest first."""
    # Seconds between Tachyon's collections.
    REFRESH = 1

    def setUp(self):
        workdir = tempfile.mkdtemp(prefix='tachyon-nova-prometheus-')
        self.values = os.path.join(workdir, 'cpu.json')
        self.write_values({})
        port = _free_port()
        exporter = subprocess.Popen([
            sys.executable, os.path.join(os.path.dirname(__file__),
                                         'cpu_exporter.py'),
            self.values, str(port)])
        self.addCleanup(_stopped, exporter)
        self.prometheus = prometheus.Prometheus(workdir, port).start()
        self.addCleanup(self.prometheus.stop)
        tachyon_in_placement.OVERRIDES['telemetry'] = {
            'url': self.prometheus.url, 'refresh_interval': self.REFRESH}
        self.addCleanup(tachyon_in_placement.OVERRIDES.pop, 'telemetry')
        super().setUp()
        tachyon_in_placement.start_collector()

    def write_values(self, percent):
        with open(self.values + '.new', 'w') as out:
            json.dump(percent, out)
        os.replace(self.values + '.new', self.values)

    def set_load(self, excluded=(), **percent):
        self.write_values(percent)
        self.wait_for_values(percent, set(excluded))

    def wait_for_values(self, percent, excluded, timeout=None):
        """Until Tachyon weighs with these values (collected from
        Prometheus, stored, read back), ``excluded`` barred by a
        threshold (explain lists them apart, without a value)."""
        wanted = {host: float(value) for host, value in percent.items()
                  if host not in excluded}
        deadline = time.monotonic() + (timeout or 30 + 2 * self.REFRESH)
        seen = None
        while time.monotonic() < deadline:
            answer = self.tachyon(
                'GET', '/tachyon/explain/allocation_candidates'
                '?resources=VCPU:1').json()
            seen = ({host['name']: host['weighers'][0]['metric']['value']
                     for host in answer['hosts'] if host['weighers']},
                    {host['name'] for host in answer['excluded']})
            if seen == (wanted, excluded):
                return
            time.sleep(0.5)
        self.fail('Tachyon never weighed by %s, %s barred (last seen %s)'
                  % (wanted, excluded, seen))

    def test_servers_follow_the_coolest_host(self):
        # Tachyon at 10 outweighs Nova's spreading weighers: each server
        # goes where the CPUs are coolest now, whatever it already holds.
        self.flags(weight_multiplier=10.0, group='tachyon')
        response = self.tachyon('PUT', '/tachyon/metrics/cpu', {
            'query': 'host_cpu_utilisation', 'label': 'instance',
            'rewrite': {'pattern': ':[0-9]+$', 'replacement': ''}})
        self.assertEqual(201, response.status_code, response.text)
        self.store_weigher('coolest', {'weight': 1, 'scorer': {
            'type': 'metric', 'metric': 'cpu'}})
        self.set_load(host1=80, host2=60, host3=20, host4=40)
        self.assertEqual(['host3'], self.boot(1))
        self.set_load(host1=10, host2=60, host3=90, host4=40)
        self.assertEqual(['host1'], self.boot(1))
        # The coolest already holds a server: it still takes the next.
        self.set_load(host1=5, host2=60, host3=90, host4=40)
        self.assertEqual(['host1'], self.boot(1))

    def test_a_hot_host_past_a_hard_threshold_is_never_picked(self):
        # host2 is the emptiest and Nova's weighers alone would pick it
        # first; a hard threshold (CPU above 90 %) bars it from the
        # candidates, with max_placement_results at its default.
        response = self.tachyon('PUT', '/tachyon/metrics/cpu', {
            'query': 'host_cpu_utilisation', 'label': 'instance',
            'rewrite': {'pattern': ':[0-9]+$', 'replacement': ''}})
        self.assertEqual(201, response.status_code, response.text)
        self.store_weigher('cpu-cap', {'weight': 0, 'scorer': {
            'type': 'metric', 'metric': 'cpu',
            'threshold': {'max': 90}}})
        for host in ('host1', 'host3', 'host4'):
            self._create_server(name='on-' + host, host=host,
                                networks='none')
        self.set_load(host1=10, host2=95, host3=10, host4=10,
                      excluded=['host2'])
        landed = self.boot(3)
        self.assertNotIn('host2', landed)


class WeightsFromTest(testtools.TestCase):
    """The weigher's reading of Tachyon's answer (weigher.weights_from)."""

    A, B, C = 'a', 'b', 'c'

    def test_scores_in_the_order_of_the_hosts(self):
        answer = {'hosts': {self.A: {'score': 0.5, 'excluded': None},
                            self.B: {'score': 2.0, 'excluded': None}}}
        self.assertEqual([2.0, 0.5],
                         weigher.weights_from(answer, [self.B, self.A]))

    def test_unknown_or_unanswered_hosts_weigh_zero(self):
        answer = {'hosts': {self.A: {'score': None, 'excluded': None},
                            self.B: {'score': 'high'}, self.C: 7}}
        self.assertEqual([0.0, 0.0, 0.0, 0.0], weigher.weights_from(
            answer, [self.A, self.B, self.C, 'd']))

    def test_barred_hosts_weigh_less_than_every_other(self):
        answer = {'hosts': {
            self.A: {'score': -3.0, 'excluded': None},
            self.B: {'score': 5.0, 'excluded': {'mode': 'hard'}},
            self.C: {'score': 1.0, 'excluded': {'mode': 'soft'}}}}
        self.assertEqual([-3.0, -4.0, -4.0], weigher.weights_from(
            answer, [self.A, self.B, self.C]))

    def test_an_answer_without_hosts_is_refused(self):
        for answer in ({}, {'hosts': []}, {'hosts': None}):
            self.assertRaises(ValueError, weigher.weights_from, answer,
                              [self.A])
