"""Generated hostile requests against a real served process.

Hypothesis builds requests to every route of the table (and to URLs
beside them) with hostile text in the path, the query string, the headers
and the body: NUL, lone surrogates, bytes that are not UTF-8, blanks,
quotes and Cypher fragments, enormous numbers, JSON nested thousands of
levels deep, valid documents with one leaf or key swapped for something
hostile.  Every answer must be below 500, on a connection the server did
not drop, and every 4xx must be Placement's JSON error document; when the
run is over the embedded engine must be the same process it was.

TACHYON_HOSTILE_EXAMPLES sets how many requests (default 5000);
TACHYON_HOSTILE_RANDOM=1 draws new ones instead of the fixed sequence CI
replays.  The per-status counts are printed at the end.
"""
import collections
import http.client
import json
import os
import re
import socket
import urllib.parse

import hypothesis
from hypothesis import strategies as st
import pytest

from tachyon_placement.api import routes
from tachyon_placement.tests.functional import served

EXAMPLES = int(os.environ.get('TACHYON_HOSTILE_EXAMPLES', '5000'))
RANDOM = os.environ.get('TACHYON_HOSTILE_RANDOM') == '1'

PROVIDER = '2c1f0e4b-5d8e-4a8b-9a0e-6f3d2b1c0a01'
CHILD = '2c1f0e4b-5d8e-4a8b-9a0e-6f3d2b1c0a02'
CONSUMER = '7e0f6a2d-1b3c-4d5e-8f90-a1b2c3d4e5f6'
AGGREGATE = '0d5b7a9e-3c2f-4e1d-8b6a-9f8e7d6c5b4a'

HOSTILE_WORDS = [
    '', ' ', ' a', 'a ', '\t', '\n', ' \t\n', '\x00', 'a\x00b', '\ud800',
    '\udfff', 'x\udbffy', '\ufeff', '\u202e', '\U0001f600', 'é', '\u00a0',
    "'", '"', '\\', '`', '\\u0000', '%00', '%', '../', '/', '?', '#', '&',
    ';', ',', ':', '!', '=', 'in:', 'in:,', '!in:', 'startswith:',
    'any:', '$', '{}', '[]', 'null', 'true', '-1', '0', '1e400', 'NaN',
    "' OR 1=1 //", "'}) DETACH DELETE n //", 'MATCH (n) DETACH DELETE n',
    '$name', '{name}', 'CUSTOM_', 'CUSTOM_\x00', 'VCPU', 'VCPU:1',
    'VCPU:-1', 'VCPU:1,VCPU:1', 'DISK_GB:99999999999999999999',
    'HW_CPU_X86_AVX', PROVIDER, CONSUMER, AGGREGATE, 'x' * 201, 'x' * 5000,
]

KNOWN_QUERY_KEYS = [
    'name', 'uuid', 'member_of', 'in_tree', 'resources', 'required',
    'limit', 'group_policy', 'root_required', 'same_subtree', 'project_id',
    'user_id', 'consumer_type', 'associated', 'resources1', 'required1',
    'member_of1', 'in_tree1', 'resources_A', 'required_B', 'resources_',
    'resources1_', 'only_on_shared',
]

VERSIONS = [
    'placement latest', 'placement 1.0', 'placement 1.10', 'placement 1.23',
    'placement 1.29', 'placement 1.36', 'placement 1.38', 'placement 1.39',
    'placement 1.40', 'placement 2.0', 'placement 1.', 'placement foo',
    'compute 2.1', '', 'placement 1.0, placement 1.39',
    'tachyon 1.0', 'tachyon latest', 'tachyon 1.1', 'tachyon x',
]

ALL_METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS']


HOSTILE_CHARACTERS = ['\x00', '\ud800', '\udfff', ' ', '\t', '\n', "'", '"',
                      '\\', '`', '%', '\u00e9', '\U0001f600', 'a', 'Z', '_']


@st.composite
def _hostile_text(draw):
    choice = draw(st.integers(0, 9))
    if choice < 4:
        return draw(st.sampled_from(HOSTILE_WORDS))
    if choice < 6:
        return draw(st.text(st.sampled_from(HOSTILE_CHARACTERS),
                            max_size=12))
    if choice < 8:
        # Any code point, surrogates included.
        return draw(st.text(st.characters(codec=None, exclude_categories=()),
                            max_size=40))
    if choice < 9:
        return draw(st.text(max_size=300))
    word = draw(st.sampled_from(['CUSTOM_GOLD', 'VCPU', 'hostile', PROVIDER,
                                 'project', 'HW_CPU_X86_AVX']))
    where = draw(st.integers(0, len(word)))
    return word[:where] + draw(st.sampled_from(HOSTILE_CHARACTERS)) + \
        word[where:]


def _json_scalars():
    return st.one_of(
        st.none(), st.booleans(),
        st.integers(min_value=-2 ** 70, max_value=2 ** 70),
        st.floats(allow_nan=False), _hostile_text())


def _random_json():
    return st.recursive(
        _json_scalars(),
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.dictionaries(_hostile_text(), inner, max_size=4)),
        max_leaves=12)


def _valid_documents():
    """{(route, method): documents it accepts}, to mutate a piece of."""
    resources = {'VCPU': 1, 'MEMORY_MB': 64}
    inventory = {'total': 8, 'reserved': 0, 'min_unit': 1, 'max_unit': 8,
                 'step_size': 1, 'allocation_ratio': 1.0}
    allocation = {'allocations': {PROVIDER: {'resources': resources}},
                  'project_id': 'project', 'user_id': 'user',
                  'consumer_generation': None, 'consumer_type': 'INSTANCE'}
    provider = '/resource_providers/{uuid}'
    return {
        ('/resource_providers', 'POST'): [
            {'name': 'new-provider', 'uuid': CHILD,
             'parent_provider_uuid': PROVIDER}],
        (provider, 'PUT'): [
            {'name': 'renamed', 'parent_provider_uuid': None}],
        ('/resource_classes', 'POST'): [{'name': 'CUSTOM_GOLD'}],
        (provider + '/inventories', 'PUT'): [
            {'resource_provider_generation': 0,
             'inventories': {'VCPU': inventory, 'CUSTOM_GOLD': inventory}}],
        (provider + '/inventories', 'POST'): [
            dict(inventory, resource_class='VCPU')],
        (provider + '/inventories/{resource_class}', 'PUT'): [
            dict(inventory, resource_provider_generation=0)],
        (provider + '/traits', 'PUT'): [
            {'resource_provider_generation': 0,
             'traits': ['HW_CPU_X86_AVX', 'CUSTOM_FAST']}],
        (provider + '/aggregates', 'PUT'): [
            {'resource_provider_generation': 0, 'aggregates': [AGGREGATE]},
            [AGGREGATE]],
        ('/allocations/{consumer_uuid}', 'PUT'): [
            allocation,
            {'allocations': [{'resource_provider': {'uuid': PROVIDER},
                              'resources': resources}]}],
        ('/allocations', 'POST'): [{CONSUMER: allocation}],
        ('/reshaper', 'POST'): [
            {'inventories': {PROVIDER: {
                'resource_provider_generation': 0,
                'inventories': {'VCPU': inventory}}},
             'allocations': {CONSUMER: allocation}}],
        ('/tachyon/weighers/{name}', 'PUT'): [
            {'weight': 1.5, 'scorer': {'type': 'usage',
                                       'resource_class': 'VCPU',
                                       'mode': 'spread'},
             'match': {'resource_classes': ['VCPU'], 'min_groups': 1}},
            {'weight': -1, 'scorer': {'type': 'metric', 'metric': 'cpu'},
             'generation': 0},
            # Operators' text reaches the engines' parsers: hostile leaves
            # in a scorer's query (the text rules and the sandbox take
            # them).
            {'weight': 1, 'scorer': {
                'type': 'cypher', 'higher_is_better': False,
                'query': "MATCH (rp:ResourceProvider)-[inv:PROVIDES]->"
                         "(:ResourceClass {name: 'VCPU'}) RETURN rp.uuid "
                         "AS uuid, inv.total - coalesce(inv.used, 0) AS "
                         "score"}}],
        ('/tachyon/metrics/{name}', 'PUT'): [
            {'query': 'host_cpu_utilisation', 'label': 'instance',
             'target': 'root',
             'rewrite': {'pattern': ':[0-9]+$', 'replacement': ''}},
            {'query': 'avg by (instance) (rate(x[5m]))', 'combine': 'max'}],
        ('/tachyon/topology/hosts/{name}', 'PUT'): [
            {'sockets': [{'id': 0}],
             'numa_nodes': [{'id': 0, 'socket': 0, 'cpus': [0, 1],
                             'memory_mb': 1024, 'hugepages': [
                                 {'size_kb': 2048, 'total': 4, 'free': 4}],
                             'distances': {'0': 10}}],
             'pci_devices': [
                 {'address': '0000:81:00.0', 'vendor_id': '8086',
                  'product_id': '1572', 'class': '020000', 'numa_node': 0,
                  'sriov_totalvfs': 1, 'sriov_numvfs': 1},
                 {'address': '0000:81:00.1', 'vendor_id': '8086',
                  'product_id': '154c', 'class': '020000', 'numa_node': 0,
                  'physfn': '0000:81:00.0'}]}],
    }


VALID_DOCUMENTS = _valid_documents()
ANY_DOCUMENT = [document for documents in VALID_DOCUMENTS.values()
                for document in documents]


@st.composite
def _mutated_document(draw, documents):
    """A valid document with one key or leaf, somewhere, made hostile."""
    document = json.loads(json.dumps(draw(st.sampled_from(documents))))
    containers = []

    def walk(node):
        if isinstance(node, dict):
            containers.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            containers.append(node)
            for value in node:
                walk(value)
    walk(document)
    target = draw(st.sampled_from(containers))
    if not target:
        return document
    if isinstance(target, list):
        index = draw(st.integers(0, len(target) - 1))
        target[index] = draw(st.one_of(_hostile_text(), _random_json()))
        return document
    key = draw(st.sampled_from(sorted(target)))
    if draw(st.booleans()):
        target[key] = draw(st.one_of(_hostile_text(), _random_json()))
    else:
        target[draw(_hostile_text())] = target.pop(key)
    return document


@st.composite
def _deep_json(draw):
    depth = draw(st.sampled_from([31, 33, 100, 1000, 5000, 100000]))
    opener, closer = draw(st.sampled_from([('[', ']'), ('{"a":', '}')]))
    return (opener * depth + '1' + closer * depth).encode()


def _encode_json(document):
    # surrogatepass: a lone surrogate travels as its \\u escape.
    return json.dumps(document).encode('utf-8', 'surrogatepass')


@st.composite
def _bodies(draw, route):
    documents = VALID_DOCUMENTS.get(route)
    if documents and draw(st.integers(0, 9)) < 7:
        # Mostly the route's own document, with one piece made hostile.
        return _encode_json(draw(_mutated_document(documents)))
    return draw(st.one_of(
        _mutated_document(ANY_DOCUMENT).map(_encode_json),
        _random_json().map(_encode_json),
        _deep_json(),
        st.binary(max_size=200),
        st.sampled_from([b'', b'{', b'{"name": "a"', b'\xff\xfe{}',
                         b'{"name": "\xed\xa0\x80"}', b'{"name": 1e400}',
                         b'[' * 3000, b'{"a":' * 3000,
                         b'{"name": "\\ud800"}', b'{"name": "\\u0000"}']),
    ))


def _percent(text):
    return urllib.parse.quote(
        text.encode('utf-8', 'surrogatepass'), safe='')


# The what-if session _populate keeps open (its id is the server's), and
# one that never was.
SESSIONS = []
NO_SESSION = '00000000-0000-4000-8000-00000000dead'

EXISTING = {
    'session_id': SESSIONS,
    'uuid': [PROVIDER, CHILD],
    'consumer_uuid': [CONSUMER],
    'resource_class': ['VCPU', 'MEMORY_MB', 'CUSTOM_GOLD'],
    '/resource_classes/{name}': ['VCPU', 'CUSTOM_GOLD', 'CUSTOM_NEW'],
    '/traits/{name}': ['HW_CPU_X86_AVX', 'CUSTOM_FAST', 'CUSTOM_NEW'],
    '/tachyon/weighers/{name}': ['spread', 'coolest'],
    '/tachyon/metrics/{name}': ['cpu', 'memory'],
    '/tachyon/pci_affinity/{name}': ['gpus'],
    '/tachyon/topology/hosts/{name}': ['cn1', 'compute-7'],
}


def _plain(template):
    """A route template without its segments' requirements
    (``{name:[^/]+}`` -> ``{name}``)."""
    return re.sub(r'\{(\w+):[^}]*\}', r'{\1}', template)


@st.composite
def _path_piece(draw, template, part):
    names = (EXISTING.get(part.strip('{}').split(':')[0])
             or EXISTING[_plain(template)])
    # Mostly names that exist, so that deeper code sees the rest.
    choice = draw(st.integers(0, 9))
    if choice < 7:
        return _percent(draw(st.sampled_from(names)))
    if choice < 9:
        return _percent(draw(_hostile_text()))
    return urllib.parse.quote(draw(st.binary(min_size=1, max_size=8)),
                              safe='')


# Placement's routes and Tachyon's own.
EVERY_ROUTE = dict(routes.ROUTES, **routes.TACHYON_ROUTES)


@st.composite
def _paths(draw):
    template = draw(st.sampled_from(sorted(EVERY_ROUTE)))
    parts = []
    for part in template.split('/'):
        if part.startswith('{'):
            part = draw(_path_piece(template, part))
        parts.append(part)
    path = '/'.join(parts) or '/'
    if draw(st.integers(0, 9)) == 0:
        path += '/' + draw(_hostile_text().map(_percent))
    return template, path


@st.composite
def _query(draw):
    pairs = draw(st.lists(st.tuples(
        st.one_of(st.sampled_from(KNOWN_QUERY_KEYS), _hostile_text()),
        st.one_of(st.sampled_from(HOSTILE_WORDS), _hostile_text())),
        max_size=4))
    pieces = ['%s=%s' % (_percent(key), _percent(value))
              for key, value in pairs]
    if draw(st.integers(0, 9)) == 0:
        pieces.append(draw(st.sampled_from(
            ['%ED%A0%80', 'name=%FF', '%00=1', 'resources', '=', '&&'])))
    return '&'.join(pieces)


@st.composite
def hostile_requests(draw):
    template, path = draw(_paths())
    methods = list(EVERY_ROUTE[template])
    if draw(st.integers(0, 9)) == 0:
        method = draw(st.sampled_from(ALL_METHODS))
        if draw(st.integers(0, 4)) == 0:
            # A method of its own: each once made ~21 metric series.
            method = draw(st.from_regex(r'[A-Z]{3,12}', fullmatch=True))
    else:
        method = draw(st.sampled_from(methods))
    query = draw(_query())
    if query:
        path += '?' + query
    # Headers are mostly right, so that most requests reach the handlers.
    headers = {'x-auth-token': 'admin', 'accept': 'application/json'}
    if draw(st.integers(0, 19)) == 0:
        headers['x-auth-token'] = 'user'
    if draw(st.integers(0, 19)) == 0:
        headers['accept'] = draw(st.sampled_from(
            ['*/*', 'application/json;q=0.1, text/html', 'text/plain']))
    version = 'placement latest'
    if draw(st.integers(0, 4)) == 0:
        version = draw(st.sampled_from(VERSIONS))
    if version:
        headers['openstack-api-version'] = version
    if draw(st.integers(0, 9)) == 0:
        # Within a what-if session, or what claims to be one.
        headers['openstack-tachyon-session'] = draw(st.sampled_from(
            list(SESSIONS) + [NO_SESSION, 'not-a-session', 'x' * 4000]))
    body = None
    if method in ('PUT', 'POST') or draw(st.integers(0, 19)) == 0:
        body = draw(_bodies((template, method)))
        headers['content-type'] = 'application/json'
        if draw(st.integers(0, 19)) == 0:
            headers['content-type'] = draw(st.sampled_from(
                ['text/plain', 'application/json; charset=latin-1', '']))
    return method, path, headers, body


@pytest.fixture(scope='module')
def api(tmp_path_factory):
    api = served.ServedPlacement(
        tmp_path_factory.mktemp('hostile'),
        extra_conf='\n[metrics]\nenabled = true\n').start()
    _populate(api)
    yield api
    api.stop()


def _populate(api):
    """Something for valid paths to find, so that deeper code runs on
    them; again every so often, as generated requests delete things."""
    status, body = api.request('GET', '/resource_providers/%s' % PROVIDER)
    if status == 404:
        status, body = api.request('POST', '/resource_providers',
                                   {'name': 'hostile', 'uuid': PROVIDER})
    assert status == 200, body
    calls = [
        ('PUT', '/resource_classes/CUSTOM_GOLD', None),
        ('PUT', '/traits/CUSTOM_FAST', None),
        ('PUT', '/resource_providers/%s/inventories' % PROVIDER,
         {'resource_provider_generation': body['generation'],
          'inventories': {'VCPU': {'total': 64}, 'MEMORY_MB': {'total': 4096},
                          'CUSTOM_GOLD': {'total': 4}}}),
        ('PUT', '/allocations/%s' % CONSUMER,
         {'allocations': {PROVIDER: {'resources': {'VCPU': 1}}},
          'project_id': 'project', 'user_id': 'user',
          'consumer_generation': None, 'consumer_type': 'INSTANCE'}),
    ]
    for method, path, body in calls:
        status, answer = api.request(method, path, body)
        # Generated requests may have changed what these meet (a
        # consumer generation, an allocation blocking the inventory).
        assert status < 500, (method, path, status, answer)
    # A what-if session (generated requests commit or discard it).
    if SESSIONS:
        status, _ = api.request('GET', '/tachyon/sessions/%s' % SESSIONS[0],
                                service='tachyon', version='1.0')
        if status == 200:
            return
    status, answer = api.request('POST', '/tachyon/sessions', {},
                                 service='tachyon', version='1.0')
    if status == 201:
        SESSIONS[:] = [answer['id']]
    else:
        # As many sessions open as allowed, by generated requests.
        assert status == 409, (status, answer)
        SESSIONS[:] = SESSIONS or [NO_SESSION]


def send(api, method, path, headers, body):
    """(status, headers, body bytes) on a fresh connection."""
    connection = http.client.HTTPConnection('127.0.0.1', api.port,
                                            timeout=60)
    try:
        connection.putrequest(method, path, skip_accept_encoding=True)
        for name, value in headers.items():
            connection.putheader(name, value)
        if body is not None:
            connection.putheader('content-length', str(len(body)))
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        connection.close()


def check_error_document(status, headers, payload):
    content_type = headers.get('content-type', '')
    assert content_type.startswith('application/json'), content_type
    document = json.loads(payload)
    assert list(document) == ['errors'], document
    assert len(document['errors']) == 1, document
    error = document['errors'][0]
    assert error['status'] == status, document
    assert isinstance(error['title'], str) and error['title'], document
    assert isinstance(error['detail'], str), document
    assert set(error) <= {'status', 'title', 'detail', 'code', 'request_id',
                          'max_version', 'min_version'}, document
    if 'code' in error:
        assert error['code'].startswith(('placement.', 'tachyon.')), document
    return error


STATUS_COUNTS = collections.Counter()


def test_generated_hostile_requests(api):
    engine_pid = api.engine_pid()

    @hypothesis.settings(
        max_examples=EXAMPLES, deadline=None, derandomize=not RANDOM,
        database=None, phases=[hypothesis.Phase.generate],
        suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(hostile_requests())
    def answered_without_5xx(request):
        method, path, headers, body = request
        if sum(STATUS_COUNTS.values()) % 100 == 99:
            _populate(api)
        try:
            status, answer_headers, payload = send(api, method, path,
                                                   headers, body)
        except (http.client.HTTPException, OSError) as exc:
            pytest.fail('%s %s dropped: %r' % (method, path, exc))
        STATUS_COUNTS[status] += 1
        assert status < 500, (method, path, headers, body[:300] if body
                              else body, payload[:1000])
        # Like Placement (webob), a client that prefers HTML gets HTML.
        json_wanted = headers['accept'] == 'application/json'
        if 400 <= status and method != 'HEAD' and json_wanted:
            check_error_document(status, answer_headers, payload)

    answered_without_5xx()
    print('\nhostile requests by status: %s (%d requests)' % (
        dict(sorted(STATUS_COUNTS.items())), sum(STATUS_COUNTS.values())))
    assert api.engine_pid() == engine_pid, 'the engine was restarted'
    os.kill(engine_pid, 0)
    # Every label of the metrics took a bounded set of values.
    status, _type, text = served.scrape_metrics(api.url)
    assert status == 200, text[:300]
    methods = set(re.findall(r'method="([^"]*)"', text))
    assert methods <= set(ALL_METHODS) | {'other'}, methods
    series = [line for line in text.splitlines()
              if line.startswith('tachyon_http_requests_total{')]
    print('%d request series, methods %s' % (len(series), sorted(methods)))
    status, body = api.request('GET', '/resource_providers')
    assert status == 200, body


# A feed request goes to the feed server (aiohttp), whose own refusal of a
# line past 8190 bytes was plain text (found by the generated requests).
@pytest.mark.parametrize('length, status', [(9000, 406), (60000, 406),
                                            (70000, 414), (900000, 414)])
def test_a_long_feed_request_line_gets_placements_error_shape(api, length,
                                                              status):
    answered, headers, payload = send(
        api, 'GET', '/tachyon/changes/stream?resources1_=' + 'x' * length,
        {'x-auth-token': 'admin', 'accept': 'application/json',
         'openstack-api-version': 'placement latest'}, None)
    assert answered == status, payload[:300]
    check_error_document(answered, headers, payload)


@pytest.fixture(scope='module')
def gunicorn_api(tmp_path_factory):
    api = served.ServedGunicorn(tmp_path_factory.mktemp('gunicorn')).start()
    yield api
    api.stop()


def _raw(port, line):
    """(status, headers, body) of a raw request."""
    with socket.create_connection(('127.0.0.1', port), timeout=30) as sock:
        sock.sendall(line)
        answer = b''
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    head, _, payload = answer.partition(b'\r\n\r\n')
    status_line, *header_lines = head.decode('latin-1').split('\r\n')
    headers = dict(line.lower().split(': ', 1) for line in header_lines)
    return int(status_line.split()[1]), headers, payload


LONG_LINE = b'GET /' + b'a' * 70000 + b' HTTP/1.1\r\n\r\n'
LONG_HEADER = (b'GET / HTTP/1.1\r\n' + b'x-long: ' + b'a' * 70000 +
               b'\r\n\r\n')
MANY_HEADERS = (b'GET / HTTP/1.1\r\n' + b''.join(
    b'x-h%d: 1\r\n' % n for n in range(120)) + b'\r\n')
BAD_VERSION = b'GET / HTTP/9.9\r\n\r\n'
GARBAGE = b'\x00\xff garbage\r\n\r\n'


@pytest.mark.parametrize('line, status', [
    (LONG_LINE, 414), (LONG_HEADER, 431), (MANY_HEADERS, 431),
    (BAD_VERSION, 505), (GARBAGE, 400),
])
def test_refused_before_the_application_in_placement_shape(api, line, status):
    _check_refusal(api.port, line, status)


def _check_refusal(port, line, status):
    """The server's own refusal of ``line``: ``status`` in Placement's
    shape, with a request id, closing the connection."""
    found, headers, payload = _raw(port, line)
    assert found == status, payload[:500]
    error = check_error_document(status, headers, payload)
    assert error['request_id'].startswith('req-')
    assert headers['x-openstack-request-id'] == error['request_id']
    assert headers['connection'] == 'close'


# gunicorn's limits: request line 4094 bytes, a header 8190, 100 headers;
# an unknown HTTP version is its 400.
@pytest.mark.parametrize('line, status', [
    (LONG_LINE, 414), (LONG_HEADER, 431), (MANY_HEADERS, 431),
    (BAD_VERSION, 400), (GARBAGE, 400),
])
def test_gunicorns_refusals_in_placement_shape(gunicorn_api, line, status):
    _check_refusal(gunicorn_api.port, line, status)


def test_gunicorn_serves_the_api(gunicorn_api):
    connection = http.client.HTTPConnection('127.0.0.1', gunicorn_api.port,
                                            timeout=30)
    connection.request('GET', '/resource_providers', headers={
        'x-auth-token': 'admin', 'accept': 'application/json'})
    response = connection.getresponse()
    assert response.status == 200
    assert json.loads(response.read()) == {'resource_providers': []}
