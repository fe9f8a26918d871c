"""The candidate document joins remembered pieces (domain Runs): it must
be byte for byte the document rendered request by request and summary by
summary, at every microversion's shape."""
import dataclasses
import json

import pytest

from tachyon_placement.api.handlers import allocation_candidate as handler
from tachyon_placement.api import microversion
from tachyon_placement.domain import candidates as domain
from tachyon_placement.tests.unit import test_candidates_domain as fixtures


class RequestAt:
    """What the renderer asks of a request: its microversion's features."""

    def __init__(self, version):
        # As the microversion middleware leaves it: with the service's
        # bounds.
        self.version = microversion.parse(version)
        self.version.min_version = microversion.parse(
            microversion.MIN_VERSION)
        self.version.max_version = microversion.parse(
            microversion.MAX_VERSION)

    def has(self, feature):
        return microversion.has(self.version, feature)


def document(req, result, groups):
    return (b'{"allocation_requests":['
            + handler._render_requests(req, result)
            + b'],"provider_summaries":{'
            + handler._render_summaries(req, result, groups) + b'}}')


@pytest.mark.parametrize('version', ['1.10', '1.12', '1.17', '1.27',
                                     '1.29', '1.34', '1.39'])
def test_pieces_render_as_the_items_one_by_one(version):
    req = RequestAt(version)
    cloud = fixtures.shared_storage()
    settings = domain.Settings(nested_aware=req.has('nested_candidates'))
    groups = [fixtures.group(resources={'VCPU': 1, 'DISK_GB': 100})]
    if settings.nested_aware:
        groups.append(fixtures.group('1', resources={'SRIOV_NET_VF': 1}))
    wide = domain.RequestWide(group_policy='none')
    snapshot = cloud.snapshot()
    documents = []
    for _ask in range(3):
        result = domain.find_candidates(snapshot, groups, wide, settings)
        one_by_one = dataclasses.replace(result, request_pieces=None,
                                         summary_pieces=None)
        joined = document(req, result, groups)
        assert joined == document(req, one_by_one, groups)
        documents.append(joined)
    assert documents[0] == documents[1] == documents[2]
    body = json.loads(documents[-1])
    assert len(body['allocation_requests']) == len(
        result.allocation_requests) > 2
    assert set(body['provider_summaries']) == {
        summary.provider.uuid for summary in result.provider_summaries}
    if req.has('nested_candidates'):
        # Asked again, the anchors' requests and the trees' summaries come
        # as Runs remembered from the first answer.
        assert any(isinstance(piece, domain.Run)
                   for piece in result.request_pieces)
        assert all(isinstance(piece, domain.Run)
                   for piece in result.summary_pieces)


def test_a_limit_cutting_a_run_keeps_the_requests_before_it():
    cloud = fixtures.shared_storage()
    groups = [fixtures.group(resources={'VCPU': 1, 'DISK_GB': 100})]
    snapshot = cloud.snapshot()
    whole = domain.find_candidates(snapshot, groups, domain.RequestWide())
    assert len(whole.allocation_requests) > 3
    for limit in range(1, len(whole.allocation_requests) + 1):
        result = domain.find_candidates(snapshot, groups,
                                        domain.RequestWide(limit=limit))
        assert (fixtures.answer(result)[0]
                == fixtures.answer(whole)[0][:limit])
        req = RequestAt('1.39')
        assert document(req, result, groups) == document(
            req, dataclasses.replace(result, request_pieces=None,
                                     summary_pieces=None), groups)
