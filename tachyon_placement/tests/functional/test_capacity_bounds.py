"""GET /tachyon/capacity bounds its work before it is done: the candidates
of a request of N groups are refused past [capacity]
max_group_candidates / N (20 granular groups on a root of 40 children
were refused only after 27-45 s of CPU and 185-260 MB), and a process
runs [capacity] max_concurrent counts at once (503 with Retry-After past
them: 3 at once peaked at 1 GB)."""
import time

import webob

from tachyon_placement.api.handlers import capacity as handler


def _get(app, query):
    req = webob.Request.blank('/tachyon/capacity?' + query)
    req.headers.update({'x-auth-token': 'admin',
                        'openstack-api-version': 'tachyon 1.0',
                        'accept': 'application/json'})
    return req.get_response(app)


def _wide_root(seed, children=40):
    root = seed.create_provider('wide')
    for number in range(children):
        child = seed.create_provider('wide-%d' % number, parent=root)
        seed.add_inventory(child, 'VCPU', 64)
    return root


def _groups(count):
    return '&'.join('resources%d=VCPU:1' % group
                    for group in range(1, count + 1)) + '&group_policy=none'


def test_many_groups_are_refused_at_a_bound_on_their_work(service):
    _wide_root(service.seed)
    began = time.process_time()
    answer = _get(service.app, _groups(20))
    spent = time.process_time() - began
    assert answer.status_int == 400, answer.text
    error = answer.json['errors'][0]
    assert error['code'] == 'tachyon.capacity.too_many_candidates'
    # 200,000 candidate-groups over 20 groups.
    assert 'more than 10000 allocation candidates' in error['detail']
    assert 'its 20 groups' in error['detail']
    print('20 groups on 40 children refused after %.1f s of CPU' % spent)
    # One group of the same cloud is counted (40 children, 64 each).
    counted = _get(service.app, 'resources=VCPU:1')
    assert counted.status_int == 200, counted.text
    assert counted.json['total'] == 40 * 64


def test_counts_past_the_concurrent_ones_get_503(service, monkeypatch):
    monkeypatch.setattr(handler, 'WAIT', 0.1)
    size = service.conf.capacity.max_concurrent
    places = handler._places(size)
    taken = [places.acquire(timeout=10) for _ in range(size)]
    assert all(taken)
    try:
        answer = _get(service.app, 'resources=VCPU:1')
    finally:
        for _place in taken:
            places.release()
    assert answer.status_int == 503, answer.text
    assert answer.headers['Retry-After'] == '5'
    assert answer.json['errors'][0]['code'] == 'tachyon.capacity.busy'
    assert _get(service.app, 'resources=VCPU:1').status_int == 200
