"""WSGI entry point for uwsgi, gunicorn, mod_wsgi:
``tachyon_placement.wsgi.api:application``.

The config file is ``$TACHYON_CONFIG_FILE`` if set, else the first of
/etc/tachyon/placement.conf and /etc/placement/placement.conf that exists
(``$OS_PLACEMENT_CONFIG_DIR/placement.conf`` is honoured too, as Placement
does).
"""
import os
import threading


from tachyon_placement import conf as tachyon_conf
from tachyon_placement import deploy
from tachyon_placement.wsgi import malloc_arenas

CANDIDATES = ('/etc/tachyon/placement.conf', '/etc/placement/placement.conf')


def config_files(environ=os.environ):
    if environ.get('TACHYON_CONFIG_FILE'):
        return [environ['TACHYON_CONFIG_FILE']]
    candidates = list(CANDIDATES)
    if environ.get('OS_PLACEMENT_CONFIG_DIR'):
        candidates.insert(0, os.path.join(environ['OS_PLACEMENT_CONFIG_DIR'],
                                          'placement.conf'))
    return [path for path in candidates if os.path.exists(path)][:1]


def init_application():
    conf = tachyon_conf.new_conf(default_config_files=config_files())
    tachyon_conf.setup_logging(conf, 'placement')
    return deploy.loadapp(conf)


class _LazyApplication:
    """Build the app on the first request: after a pre-forking server has
    forked, so every worker has its own engine connection."""

    def __init__(self):
        self._app = None
        self._lock = threading.Lock()

    def __call__(self, environ, start_response):
        if self._app is None:
            with self._lock:
                if self._app is None:
                    self._app = init_application()
        return self._app(environ, start_response)


# Before the server's threads take memory (see malloc_arenas).
malloc_arenas.cap()
application = _LazyApplication()
