"""The version document at ``/`` (unauthenticated, for discovery)."""
from tachyon_placement.api import microversion
from tachyon_placement.api import wsgi


@wsgi.handler()
def home(req):
    version = {
        'id': 'v%s' % microversion.MIN_VERSION,
        'max_version': microversion.MAX_VERSION,
        'min_version': microversion.MIN_VERSION,
        'status': 'CURRENT',
        # Relative on purpose: "this same URL", whatever proxy is in front.
        'links': [{'rel': 'self', 'href': ''}],
    }
    return wsgi.json_response(req, {'versions': [version]})
