"""GET /allocation_candidates.

Parse the request groups and request-wide parameters (with Placement's
error texts, in Placement's order), search (usecases/candidates.py),
render.
"""
import contextlib
import re

from tachyon_placement.api import errors
from tachyon_placement.api import query
from tachyon_placement.api import wsgi
from tachyon_placement.domain import candidates as domain
from tachyon_placement.policies import allocation_candidate as policies
from tachyon_placement.schemas import allocation_candidate as schema
from tachyon_placement.schemas import by_version
from tachyon_placement.schemas import common
from tachyon_placement.usecases import candidates

_PREFIXES = '|'.join(('resources', 'required', 'member_of', 'in_tree'))
_GROUP_KEY = re.compile(r'^(%s)(%s)?$' % (_PREFIXES, common.GROUP_PAT))
_GROUP_KEY_1_33 = re.compile(r'^(%s)(%s)?$' % (_PREFIXES,
                                               common.GROUP_PAT_1_33))


def _request_wide(req):
    wide = domain.RequestWide()
    limits = req.GET.getall('limit')
    if limits:
        # The schema checked the form (of the last one); the first wins.
        wide.limit = int(limits[0])
    policies_given = req.GET.getall('group_policy')
    if policies_given:
        wide.group_policy = policies_given[0]
    root_required = req.GET.getall('root_required')
    if root_required:
        if len(root_required) > 1:
            raise errors.BadRequest(
                "Query parameter 'root_required' may be specified only "
                "once.", code=errors.ILLEGAL_DUPLICATE_QUERYPARAM)
        any_of, forbidden = query.parse_traits(
            root_required[0], allow_forbidden=True, allow_any=False)
        required = {name for names in any_of for name in names}
        conflicts = required & forbidden
        if conflicts:
            raise errors.BadRequest(
                'Conflicting required and forbidden traits found in '
                'root_required: %s' % ', '.join(sorted(conflicts)),
                code=errors.QUERYPARAM_BAD_VALUE)
        wide.root_required = required
        wide.root_forbidden = forbidden
    for value in req.GET.getall('same_subtree'):
        suffixes = {part.strip() for part in value.split(',')}
        if '' in suffixes:
            raise errors.BadRequest(
                'Empty string (unsuffixed group) can not be specified in '
                '`same_subtree` ', code=errors.QUERYPARAM_BAD_VALUE)
        wide.same_subtrees.append(suffixes)
    return wide


def _parse_groups(req):
    """{suffix: RequestGroup}, in the order the keys first appear."""
    pattern = _GROUP_KEY_1_33 if req.has('string_suffixes') else _GROUP_KEY
    groups = {}
    for key, value in req.GET.items():
        match = pattern.match(key)
        if not match:
            continue
        prefix, suffix = match.group(1), match.group(2) or ''
        group = groups.get(suffix)
        if group is None:
            group = groups[suffix] = domain.RequestGroup(suffix=suffix)
        if prefix == 'resources':
            group.resources = query.parse_resources(value)
        elif prefix == 'required':
            group.required_traits, group.forbidden_traits = (
                query.required_traits(req, suffix))
        elif prefix == 'member_of':
            group.member_of, group.forbidden_aggs = query.member_of(
                req, suffix)
        else:
            group.in_tree = query.in_tree(value)
    return groups


def _check_resourceless(groups, wide):
    """From 1.36 groups without resources are allowed in same_subtree."""
    resourceless = [suffix for suffix, group in groups.items()
                    if not group.resources]
    if len(resourceless) == len(groups):
        raise errors.BadRequest(
            'There must be at least one resources or resources[$S] '
            'parameter.', code=errors.QUERYPARAM_MISSING_VALUE)
    in_subtrees = set().union(*wide.same_subtrees)
    bad = [suffix for suffix in resourceless if suffix not in in_subtrees]
    if bad:
        raise errors.BadRequest(
            'Resourceless suffixed group request should be specified in '
            '`same_subtree` query param: bad group(s) - %s.' % bad,
            code=errors.QUERYPARAM_BAD_VALUE)
    bad = [suffix for suffix in sorted(in_subtrees) if suffix not in groups]
    if bad:
        raise errors.BadRequest(
            'Real suffixes should be specified in `same_subtree`: %s not '
            'found in %s.' % (bad, list(groups)),
            code=errors.QUERYPARAM_BAD_VALUE)


def _check_orphans(groups):
    """Before 1.36 every group needs resources."""
    orphans = ['required%s' % suffix for suffix, group in groups.items()
               if group.required_traits and not group.resources]
    if orphans:
        raise errors.BadRequest(
            'All traits parameters must be associated with resources.  '
            'Found the following orphaned traits keys: %s'
            % ', '.join(orphans))
    orphans = ['member_of%s' % suffix for suffix, group in groups.items()
               if not group.resources
               and (group.member_of or group.forbidden_aggs)]
    if orphans:
        raise errors.BadRequest(
            'All member_of parameters must be associated with resources. '
            'Found the following orphaned member_of keys: %s'
            % ', '.join(orphans))
    if not all(group.resources for group in groups.values()):
        raise errors.BadRequest('All request groups must specify resources.')
    if not groups:
        raise errors.BadRequest(
            'At least one request group (`resources` or `resources{$S}`) '
            'is required.')


def _check_conflicts(groups):
    conflicts = ['required%s: (%s)' % (suffix, ', '.join(sorted(any_of)))
                 for suffix, group in groups.items()
                 for any_of in group.required_traits
                 if all(name in group.forbidden_traits for name in any_of)]
    if conflicts:
        raise errors.BadRequest(
            'Conflicting required and forbidden traits found in the '
            'following traits keys: %s' % ', '.join(sorted(conflicts)))


def parse_request(req):
    """(list of RequestGroup in request order, RequestWide)."""
    wide = _request_wide(req)
    groups = _parse_groups(req)
    if req.has('same_subtree'):
        _check_resourceless(groups, wide)
    else:
        _check_orphans(groups)
    if req.has('forbidden_traits'):
        _check_conflicts(groups)
    if not wide.group_policy and sum(
            1 for group in groups.values() if group.use_same_provider) > 1:
        raise errors.BadRequest(
            'The "group_policy" parameter is required when specifying more '
            'than one "resources{N}" parameter.')
    return list(groups.values()), wide


@contextlib.contextmanager
def unknown_names_refused():
    """A resource class or trait the request names and the graph lacks,
    as Placement reports it."""
    try:
        yield
    except domain.UnknownResourceClass as exc:
        raise errors.BadRequest(
            'Invalid resource class in resources parameter: No such '
            'resource class %s.' % exc.name)
    except domain.UnknownTrait as exc:
        raise errors.BadRequest('No such trait(s): %s.' % exc.name)


def settings(req):
    return candidates.SearchSettings.from_conf(
        req.conf, nested_aware=req.has('nested_candidates'))


# A candidate document is mostly pieces that earlier documents showed too:
# the requests a search remembered at an anchor and the summaries of a
# whole tree come as domain Runs, which keep their JSON per shape, so a
# document of 1,000 candidates under a stream of writes joins a few
# hundred pieces (rendering and encoding each request and summary was a
# fifth of a scheduling loop's request, and going over them one by one,
# even remembered, most of what remained).  At most this many shapes are
# kept per object.
_SHAPES_KEPT = 16


def _remembered(owner, shape, make):
    """``make()``, remembered on ``owner.encoded`` by ``shape``."""
    memo = owner.encoded
    found = memo.get(shape) if memo else None
    if found is None:
        if memo is None:
            memo = owner.encoded = {}
        elif len(memo) >= _SHAPES_KEPT:
            memo.clear()
        memo[shape] = found = wsgi.to_keep(make())
    return found


def _joined(pieces, shape, encode):
    """The items of ``pieces`` (domain Runs and single items) encoded by
    ``encode(item)`` and joined by commas; each Run's part made once per
    shape."""
    parts = []
    for piece in pieces:
        if type(piece) is domain.Run:
            part = _remembered(piece, shape, lambda run=piece: b','.join(
                [encode(item) for item in run.items]))
            if part:
                parts.append(part)
        else:
            parts.append(encode(piece))
    return b','.join(parts)


def _render_requests(req, result):
    """The allocation requests, encoded: a JSON array's items joined."""
    if not req.has('allocations_dict'):
        shape, render = 'list', _listed
    elif req.has('mappings'):
        shape, render = 'mappings', _mapped
    else:
        shape, render = 'dict', _keyed
    pieces = result.request_pieces
    if pieces is None:
        pieces = result.allocation_requests
    return _joined(pieces, shape,
                   lambda request: wsgi.encode_json(render(request)))


def _listed(request):
    return {'allocations': [{'resource_provider': {'uuid': rp_uuid},
                             'resources': resources}
                            for rp_uuid, resources
                            in request.allocations.items()]}


def _keyed(request):
    return {'allocations': {rp_uuid: {'resources': resources}
                            for rp_uuid, resources
                            in request.allocations.items()}}


def _mapped(request):
    item = _keyed(request)
    item['mappings'] = request.mappings
    return item


def _render_summaries(req, result, groups):
    """The provider summaries, encoded: a JSON object's members joined."""
    every_class = req.has('all_inventories_in_summaries')
    requested = sorted({rc for group in groups for rc in group.resources})
    with_traits = req.has('candidates_required')
    with_tree = req.has('nested_candidates')
    shape = repr((every_class or requested, with_traits, with_tree))

    def member(summary):
        # Made and encoded once per shape and provider (or tree): the
        # JSON is remembered, the dicts are not.  Each member is encoded
        # as a one-member object, braces cut off.
        provider = summary.provider
        resources = summary.resources
        if not every_class:
            resources = {rc: amounts for rc, amounts in resources.items()
                         if rc in requested}
        item = {'resources': resources}
        if with_traits:
            item['traits'] = summary.traits
        if with_tree:
            item['parent_provider_uuid'] = provider.parent_uuid
            item['root_provider_uuid'] = provider.root_uuid
        return wsgi.encode_json({provider.uuid: item})[1:-1]

    pieces = result.summary_pieces
    if pieces is None:
        # Old microversions list only some providers of a tree: each
        # summary keeps its own JSON.
        return _joined(result.provider_summaries, shape, lambda summary: (
            _remembered(summary.provider, shape,
                        lambda: member(summary))))
    return _joined(pieces, shape, member)


@wsgi.handler(min_version='1.10', accept=wsgi.JSON,
              uses=('candidates', 'resource_classes', 'traits'),
              session=True)
def list_allocation_candidates(req):
    req.context.can(policies.LIST)
    req.validate_query(by_version(req, schema.GET))
    groups, wide = parse_request(req)
    with unknown_names_refused():
        result = candidates.find(req.store, groups, wide, settings(req))
    return wsgi.encoded_json_response(req, [
        b'{"allocation_requests":[',
        _render_requests(req, result),
        b'],"provider_summaries":{',
        _render_summaries(req, result, groups),
        b'}}'])
