"""api-ref/ builds with os-api-ref, warnings as errors (what tox -e
api-ref runs): every route documented resolves its parameters and
samples."""
import os
import re

from tachyon_placement.tests.unit import sphinx_site

ROOT = sphinx_site.ROOT


def test_api_ref_builds_without_warnings(tmp_path):
    html = sphinx_site.build(os.path.join('api-ref', 'source'), tmp_path)
    with open(os.path.join(html, 'index.html')) as index:
        page = index.read()
    assert '/allocation_candidates' in page
    assert '/tachyon/changes/stream' in page


def test_every_route_is_documented():
    from tachyon_placement.api import routes
    documented = set()
    source = os.path.join(ROOT, 'api-ref', 'source')
    for name in os.listdir(source):
        if name.endswith('.inc'):
            with open(os.path.join(source, name)) as inc:
                for line in inc:
                    if line.startswith('.. rest_method::'):
                        documented.add(line.split()[-1])
    missing = []
    for table in (routes.ROUTES, routes.TACHYON_ROUTES):
        for path in table:
            if path == '':
                continue
            shown = re.sub(r'\{(\w+):[^}]*\}', r'{\1}', path)
            if shown not in documented:
                missing.append(path)
    assert not missing, missing


def test_every_code_of_tachyons_routes_is_listed():
    """The codes Tachyon's routes answer with (their own, and one per
    status when nothing more specific applies) are in the api-ref."""
    from tachyon_placement.api import errors
    from tachyon_placement.api.handlers import capacity
    from tachyon_placement.api.handlers import metric
    from tachyon_placement.api.handlers import whatif
    from tachyon_placement.api import wsgi
    with open(os.path.join(ROOT, 'api-ref', 'source', 'tachyon.inc')) as inc:
        text = inc.read()
    codes = set(errors.TACHYON_CODES.values()) | {
        errors.tachyon_code(418), errors.GRAPH_UNAVAILABLE,
        errors.NAMED_BY_WEIGHERS, capacity.BUSY, capacity.TOO_MANY_CANDIDATES,
        metric.IN_USE, whatif.SESSION_CONFLICT, whatif.TOO_MANY_SESSIONS,
        wsgi.SESSION_NOT_FOUND, wsgi.SESSION_UNSUPPORTED}
    missing = sorted(code for code in codes if '``%s``' % code not in text)
    assert not missing, missing
