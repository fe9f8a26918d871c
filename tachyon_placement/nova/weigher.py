"""Tachyon's Nova scheduler weigher.

Enabled on the nova-scheduler hosts by configuration alone, beside Nova's
own weighers::

    [filter_scheduler]
    weight_classes = nova.scheduler.weights.all_weighers,
        tachyon_placement.nova.weigher.TachyonWeigher

    [tachyon]
    weight_multiplier = 1.0
    timeout = 1.0

For each weighing (Nova weighs once per instance it places) it sends one
request, POST /tachyon/host_weights, with the query string Nova sent to
GET /allocation_candidates for that request spec and the hosts Nova's
filters kept, through Nova's ``[placement]`` keystoneauth credentials and
endpoint.  Tachyon answers each host's combined score from the ranking
that orders its candidates.  No answer within ``[tachyon] timeout``, an
error, or a Placement that is not Tachyon: every host weighs 0, so Nova's
other weighers decide, and a warning says so (once per outage).
"""
import threading
import time

from oslo_log import log as logging
from oslo_serialization import jsonutils

import nova.conf
from nova.scheduler import utils as scheduler_utils
from nova.scheduler import weights
from nova import utils as nova_utils

from tachyon_placement.nova import options

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
options.register(CONF)

ROUTE = '/tachyon/host_weights'
VERSION_HEADER = {'OpenStack-API-Version': 'tachyon 1.0'}
# The host aggregate metadata key that overrides the multiplier.
AGGREGATE_KEY = 'tachyon_weight_multiplier'
# While Tachyon stays unreachable, a warning again this often (seconds).
WARN_AGAIN = 300.0


def candidates_query(spec_obj):
    """The query string Nova's scheduler sends GET /allocation_candidates
    for ``spec_obj`` (nova.scheduler.utils.resources_from_request_spec):
    the request spec's resources, traits and request-level parameters,
    with the aggregates Nova's request filters put in its requested
    destination.  A target host's ``in_tree`` is left out: it leaves one
    host, which Nova does not weigh."""
    request = scheduler_utils.ResourceRequest.from_request_spec(
        spec_obj, enable_pinning_translate=True)
    destination = (spec_obj.requested_destination
                   if 'requested_destination' in spec_obj else None)
    if destination is not None:
        group = request.get_request_group(None)
        if 'aggregates' in destination and destination.aggregates:
            group.aggregates = [ored.split(',')
                                for ored in destination.aggregates]
        if ('forbidden_aggregates' in destination
                and destination.forbidden_aggregates):
            group.forbidden_aggregates |= destination.forbidden_aggregates
    return request.to_querystring()


def weights_from(answer, hosts):
    """The weights of ``hosts`` (uuids) from Tachyon's answer: each host's
    combined score; a host Tachyon does not know, or did not answer for,
    0 (as Tachyon scores a host no weigher scored); a host a weigher's
    threshold or missing policy bars, below every other (Nova offers it
    only when its filters left nothing else)."""
    found = answer.get('hosts')
    if not isinstance(found, dict):
        raise ValueError('no "hosts" object in the answer')
    scores, barred = [], []
    for uuid in hosts:
        entry = found.get(uuid)
        entry = entry if isinstance(entry, dict) else {}
        score = entry.get('score')
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            score = 0.0
        scores.append(float(score))
        barred.append(bool(entry.get('excluded')))
    if any(barred):
        floor = min(scores) - 1.0
        scores = [floor if bar else score
                  for score, bar in zip(scores, barred)]
    return scores


class TachyonWeigher(weights.BaseHostWeigher):
    """Weighs hosts by Tachyon's stored weighers and telemetry (see the
    module's docstring)."""

    def __init__(self):
        super().__init__()
        self._adapter = None
        self._lock = threading.Lock()
        # Since when (time.monotonic()) Tachyon has not answered, and when
        # that was last logged as a warning; None while it answers.
        self._failing_since = None
        self._warned_at = None

    def weight_multiplier(self, host_state):
        return scheduler_utils.get_weight_multiplier(
            host_state, AGGREGATE_KEY, CONF.tachyon.weight_multiplier)

    def _weigh_object(self, host_state, weight_properties):
        # weigh_objects weighs every host in one request.
        return 0.0

    def weigh_objects(self, weighed_obj_list, weight_properties):
        hosts = [weighed.obj.uuid for weighed in weighed_obj_list]
        try:
            answer = self._ask(weight_properties, hosts)
            found = weights_from(answer, hosts)
        except Exception as exc:  # noqa: BLE001 - never fail a schedule
            self._failed(exc)
            return [0.0] * len(hosts)
        self._answered()
        return found

    def _ask(self, spec_obj, hosts):
        """Tachyon's answer (a dict) for ``hosts`` and the request of
        ``spec_obj``; an exception when there is none."""
        url = '%s?%s' % (ROUTE, candidates_query(spec_obj))
        context = getattr(spec_obj, '_context', None)
        response = self._client().post(
            url, json={'hosts': hosts}, headers=dict(VERSION_HEADER),
            microversion=None, raise_exc=False,
            timeout=CONF.tachyon.timeout, connect_retries=0,
            status_code_retries=0,
            global_request_id=getattr(context, 'global_id', None))
        if response.status_code != 200:
            raise LookupError('%s answered %d: %s' % (
                ROUTE, response.status_code, response.text[:200]))
        return jsonutils.loads(response.text)

    def _client(self):
        """The keystoneauth adapter of Nova's ``[placement]`` options (or
        ``[tachyon] conf_group``'s), made once; made again after it
        failed to be made."""
        with self._lock:
            if self._adapter is None:
                self._adapter = nova_utils.get_sdk_adapter(
                    'placement', admin=True,
                    conf_group=CONF.tachyon.conf_group)
            return self._adapter

    def _failed(self, exc):
        now = time.monotonic()
        if self._failing_since is None:
            self._failing_since = now
        if self._warned_at is None or now - self._warned_at >= WARN_AGAIN:
            self._warned_at = now
            LOG.warning(
                "Tachyon's host weights are unavailable (%s: %s) for %.0f "
                "s: TachyonWeigher weighs every host 0, Nova's other "
                "weighers decide.", type(exc).__name__, exc,
                now - self._failing_since)
        else:
            LOG.debug("Tachyon's host weights unavailable: %s", exc)

    def _answered(self):
        if self._failing_since is not None:
            LOG.info("Tachyon's host weights answer again after %.0f s.",
                     time.monotonic() - self._failing_since)
            self._failing_since = self._warned_at = None
