"""Tachyon's GET /tachyon/capacity: how many more instances of a request
fit, per host, in total and (``per_aggregate=true``) per aggregate.  It
takes GET /allocation_candidates' query string at Placement's latest
microversion; ``limit`` is accepted and counts nothing out."""
import threading

from tachyon_placement.api import errors
from tachyon_placement.api import microversion
from tachyon_placement.api import wsgi
from tachyon_placement.api.handlers import allocation_candidate
from tachyon_placement.api.handlers import tachyon
from tachyon_placement.policies import capacity as policies
from tachyon_placement.schemas import capacity as schema
from tachyon_placement.usecases import capacity

TOO_MANY_CANDIDATES = 'tachyon.capacity.too_many_candidates'
BUSY = 'tachyon.capacity.busy'
# How long a count waits for a place ([capacity] max_concurrent), and
# what a refused one is told to wait.
WAIT = 5.0
RETRY_AFTER = 5
# {max_concurrent: the process's semaphore of that size}
_PLACES = {}
_PLACES_LOCK = threading.Lock()


def _places(size):
    with _PLACES_LOCK:
        found = _PLACES.get(size)
        if found is None:
            found = _PLACES[size] = threading.BoundedSemaphore(size)
        return found


def most_candidates(options, groups):
    """The most candidates a count of ``groups`` request groups may
    enumerate ([capacity] max_candidates and max_group_candidates)."""
    return max(1, min(options.max_candidates,
                      options.max_group_candidates // max(1, len(groups))))


@tachyon.handler(accept=wsgi.JSON, session=True, uses=(
    'candidates', 'resource_classes', 'traits'))
def get_capacity(req):
    req.context.can(policies.SHOW)
    req.environ[microversion.MICROVERSION_ENVIRON] = microversion.latest()
    req.validate_query(schema.GET)
    groups, wide = allocation_candidate.parse_request(req)
    most = most_candidates(req.conf.capacity, groups)
    places = _places(req.conf.capacity.max_concurrent)
    if not places.acquire(timeout=WAIT):
        raise errors.ServiceUnavailable(
            '%d capacity counts run already in this process ([capacity] '
            'max_concurrent): try again in %d seconds.'
            % (req.conf.capacity.max_concurrent, RETRY_AFTER), code=BUSY,
            headers={'Retry-After': str(RETRY_AFTER)})
    try:
        with allocation_candidate.unknown_names_refused():
            counted = capacity.count(
                req.store, groups, wide, allocation_candidate.settings(req),
                most, per_aggregate=req.GET.get('per_aggregate') == 'true')
    except capacity.TooManyCandidates:
        raise errors.BadRequest(
            'The request has more than %d allocation candidates ([capacity] '
            'max_candidates, and max_group_candidates over its %d groups): '
            'narrow it with in_tree or member_of.' % (most, len(groups)),
            code=TOO_MANY_CANDIDATES)
    finally:
        places.release()
    return wsgi.json_response(req, counted)
