"""A real Keystone (PyPI ``keystone``, in its own venv made by run.sh) on
loopback for the interop tests: SQLite, fernet tokens, bootstrapped, served
by a child process; and the identities the policy checks need, created
through Keystone's own API."""
import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request

PASSWORD = 'secret-for-tests'

SERVER = '''
import socketserver
import sys
from wsgiref import simple_server

from keystone.server import wsgi


class Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True


class Quiet(simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


# Keystone parses the command line as its own: the port comes apart.
port = int(sys.argv.pop(1))
simple_server.make_server('127.0.0.1', port,
                          wsgi.initialize_public_application(),
                          server_class=Server,
                          handler_class=Quiet).serve_forever()
'''


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class KeystoneError(Exception):
    pass


class Keystone:
    def __init__(self, python, workdir):
        self.python = python
        self.dir = workdir
        self.port = _free_port()
        self.url = 'http://127.0.0.1:%d/v3' % self.port
        self.process = None
        self.conf = os.path.join(workdir, 'keystone.conf')

    def _manage(self, *args):
        manage = os.path.join(os.path.dirname(self.python),
                              'keystone-manage')
        done = subprocess.run([manage, '--config-file', self.conf] +
                              list(args), capture_output=True, text=True,
                              timeout=300, cwd=self.dir)
        if done.returncode != 0:
            raise KeystoneError('keystone-manage %s: %s'
                                % (' '.join(args), done.stderr[-2000:]))

    def start(self, timeout=90):
        os.makedirs(self.dir, exist_ok=True)
        with open(self.conf, 'w') as conf:
            conf.write(
                '[DEFAULT]\ndebug = False\n'
                '[database]\nconnection = sqlite:///%s\n'
                '[token]\nprovider = fernet\nexpiration = 3600\n'
                '[fernet_tokens]\nkey_repository = %s\n'
                '[fernet_receipts]\nkey_repository = %s\n'
                '[credential]\nkey_repository = %s\n' % (
                    os.path.join(self.dir, 'keystone.sqlite'),
                    os.path.join(self.dir, 'fernet-keys'),
                    os.path.join(self.dir, 'fernet-keys'),
                    os.path.join(self.dir, 'credential-keys')))
        self._manage('db_sync')
        user = ['--keystone-user', str(os.getuid()),
                '--keystone-group', str(os.getgid())]
        self._manage('fernet_setup', *user)
        self._manage('credential_setup', *user)
        self._manage('bootstrap', '--bootstrap-password', PASSWORD,
                     '--bootstrap-admin-url', self.url,
                     '--bootstrap-public-url', self.url,
                     '--bootstrap-internal-url', self.url,
                     '--bootstrap-region-id', 'RegionOne')
        env = dict(os.environ, OS_KEYSTONE_CONFIG_FILES=self.conf)
        self.log_path = os.path.join(self.dir, 'keystone.log')
        log = open(self.log_path, 'ab')
        self.process = subprocess.Popen(
            [self.python, '-c', SERVER, str(self.port)], env=env,
            stdout=log, stderr=subprocess.STDOUT, cwd=self.dir)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                with urllib.request.urlopen(self.url, timeout=5):
                    return self
            except OSError:
                time.sleep(0.3)
        with open(self.log_path, errors='replace') as out:
            raise KeystoneError('Keystone did not start: %s'
                                % out.read()[-3000:])

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()

    # -- Keystone's API ------------------------------------------------------

    def call(self, method, path, body=None, token=None, headers=None):
        """(status, headers, JSON body or None)."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data,
                                     method=method)
        req.add_header('content-type', 'application/json')
        req.add_header('accept', 'application/json')
        if token:
            req.add_header('x-auth-token', token)
        for name, value in (headers or {}).items():
            req.add_header(name, value)
        try:
            with urllib.request.urlopen(req, timeout=30) as response:
                text = response.read()
                return (response.status, dict(response.headers),
                        json.loads(text) if text else None)
        except urllib.error.HTTPError as exc:
            text = exc.read()
            return exc.code, dict(exc.headers), (
                json.loads(text) if text else None)

    def token(self, username, password=PASSWORD, project=None,
              system=False, domain='Default'):
        """A token of ``username``, scoped to ``project`` (a name in
        Default) or to the system."""
        auth = {'identity': {'methods': ['password'], 'password': {
            'user': {'name': username, 'domain': {'name': domain},
                     'password': password}}}}
        if project:
            auth['scope'] = {'project': {'name': project,
                                         'domain': {'name': domain}}}
        elif system:
            auth['scope'] = {'system': {'all': True}}
        status, headers, body = self.call('POST', '/auth/tokens',
                                          {'auth': auth})
        if status != 201:
            raise KeystoneError('token of %s: %s %s' % (username, status,
                                                        body))
        return headers.get('X-Subject-Token') or headers.get(
            'x-subject-token')

    def admin_token(self):
        return self.token('admin', project='admin')

    def _find(self, token, kind, name):
        status, _, body = self.call('GET', '/%s?name=%s' % (kind, name),
                                    token=token)
        found = body[kind] if status == 200 else []
        return found[0]['id'] if found else None

    def ensure(self, token, kind, name, extra=None):
        """The id of the ``kind`` (projects, users, roles, services)
        named ``name``, created if missing."""
        found = self._find(token, kind, name)
        if found:
            return found
        singular = kind[:-1]
        document = dict({'name': name}, **(extra or {}))
        status, _, body = self.call('POST', '/%s' % kind,
                                    {singular: document}, token=token)
        if status != 201:
            raise KeystoneError('create %s %s: %s %s'
                                % (singular, name, status, body))
        return body[singular]['id']

    def grant(self, token, user_id, role, project_id=None, system=False):
        role_id = self.ensure(token, 'roles', role)
        if system:
            path = '/system/users/%s/roles/%s' % (user_id, role_id)
        else:
            path = '/projects/%s/users/%s/roles/%s' % (project_id, user_id,
                                                       role_id)
        status, _, body = self.call('PUT', path, token=token)
        if status not in (200, 204):
            raise KeystoneError('grant %s: %s %s' % (role, status, body))

    def user(self, token, name, roles):
        """A user in Default with ``roles``: [(role, project name or
        'system')]; returns its id."""
        user_id = self.ensure(token, 'users', name, {
            'password': PASSWORD, 'domain_id': 'default'})
        for role, scope in roles:
            if scope == 'system':
                self.grant(token, user_id, role, system=True)
            else:
                project_id = self.ensure(token, 'projects', scope,
                                         {'domain_id': 'default'})
                self.grant(token, user_id, role, project_id)
        return user_id

    def register_placement(self, token, endpoint):
        """Placement in the catalog (type placement, every interface):
        Nova and the CLI find it there."""
        service_id = self.ensure(token, 'services', 'placement',
                                 {'type': 'placement'})
        for interface in ('public', 'internal', 'admin'):
            status, _, body = self.call('POST', '/endpoints', {'endpoint': {
                'service_id': service_id, 'interface': interface,
                'url': endpoint, 'region_id': 'RegionOne'}}, token=token)
            if status != 201:
                raise KeystoneError('endpoint: %s %s' % (status, body))

    def revoke(self, token, subject):
        status, _, body = self.call('DELETE', '/auth/tokens', token=token,
                                    headers={'X-Subject-Token': subject})
        if status != 204:
            raise KeystoneError('revoke: %s %s' % (status, body))
