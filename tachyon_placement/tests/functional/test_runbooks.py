"""The runbooks' commands run as written.

doc/source/admin's runbooks (switch-over, rollback, backup, upgrade) are
what an operator types on the day, often once: a wrong subcommand or
option there is found at the worst time.  A runbook's commands are its
literal blocks (``::``, each a shell script) and its inline literals that
run a tool with ``--config-file`` (``tachyon-manage --config-file ... db
sync``), in the page's order.  Each test below plays one runbook on this
machine: it does what the prose says between the commands (stop the API,
give the engine an empty graph, start Placement, ...), runs every command
as written in bash (``-e``), and checks what the runbook says follows.
Only the names of this machine are put in: the configuration files, the
service's address, the database host (``@db/``: Debian's MariaDB on a
socket; the ``mysql`` client finds it through ``~/.my.cnf``), the backup
directory and the backup's file name.  A literal block that is not a
command is written as a code-block of its language (``ini``, ...); console
sessions (``.. code-block:: console``) are test_doc_examples.py's.
"""
import glob
import json
import os
import re
import subprocess
import sys

import docutils.core
from docutils import nodes
import pytest

from tachyon_placement.tests.functional import served
from tachyon_placement.tests.functional.fixtures import placement_db
from tachyon_placement.tests.functional import test_import
from tachyon_placement.tests.functional import test_status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))
ADMIN = os.path.join(ROOT, 'doc', 'source', 'admin')
COMMANDS = ('tachyon-manage', 'tachyon-status', 'placement-manage', 'mysql',
            'curl', 'openstack')
PLAYED = ('backup.rst', 'rollback.rst', 'switch-over.rst', 'upgrade.rst')


class Step:
    def __init__(self, page, line, script):
        self.where = '%s:%s' % (page, line)
        self.script = script

    def says(self, *words):
        return all(word in self.script for word in words)

    def __repr__(self):
        return '%s: %s' % (self.where, self.script)


def _line(node):
    while node is not None and node.line is None:
        node = node.parent
    return node.line if node is not None else '?'


def _in_message(node):
    while node is not None:
        if isinstance(node, nodes.system_message):
            return True
        node = node.parent
    return False


def steps(page):
    """[Step] of a runbook, in the page's order."""
    with open(os.path.join(ADMIN, page)) as source:
        text = source.read()
    # Sphinx's roles are unknown to plain docutils: they become error
    # nodes (left out below), reported nowhere.
    document = docutils.core.publish_doctree(text, settings_overrides={
        'report_level': 5, 'halt_level': 5, 'file_insertion_enabled': False,
        'raw_enabled': False})
    found = []
    for node in document.findall(
            lambda node: isinstance(node, (nodes.literal_block,
                                           nodes.literal))):
        if _in_message(node) or 'code' in node['classes']:
            continue    # a code-block of a language: not a command
        script = node.astext().strip()
        first = script.split()[0]
        if isinstance(node, nodes.literal):
            if first not in COMMANDS or '--config-file' not in script:
                continue
            script = ' '.join(script.split())
        else:
            assert first in COMMANDS, (
                '%s:%s: a literal block that runs none of %s: write it as a '
                'code-block of its language' % (page, _line(node), COMMANDS))
        found.append(Step(page, _line(node), script))
    return found


class Machine:
    """This machine's names for what a runbook names, and a bash to run
    its commands in (HOME is the test's directory)."""

    def __init__(self, workdir):
        self.workdir = str(workdir)
        self.names = []
        self.env = dict(os.environ, HOME=self.workdir, PATH='%s:%s' % (
            os.path.dirname(sys.executable), os.environ.get('PATH', '')))

    def name(self, written, here):
        """``written`` (a regular expression) is ``here`` (a replacement:
        ``\\1`` is a group) on this machine; later names are put first."""
        self.names.insert(0, (re.compile(written), here))

    def with_mariadb(self, mariadb):
        """``@db/`` is MariaDB's socket; ``mysql`` connects as root."""
        with open(os.path.join(self.workdir, '.my.cnf'), 'w') as out:
            out.write('[client]\nsocket = %s\nuser = root\n'
                      % mariadb.socket)
        self.name(r"(mysql\+pymysql://[^@'\s]+)@db/(\w+)",
                  r'\1@localhost/\2?unix_socket=%s&charset=utf8mb4'
                  % mariadb.socket)

    def with_cloud(self, api):
        """The openstack CLI's credentials (a clouds.yaml, as an operator
        has) and the service's address are ``api``'s."""
        directory = os.path.join(self.workdir, '.config', 'openstack')
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, 'clouds.yaml'), 'w') as out:
            json.dump({'clouds': {'tachyon': {
                'auth_type': 'admin_token',
                'auth': {'endpoint': api.url, 'token': 'admin'}}}}, out)
        self.env['OS_CLOUD'] = 'tachyon'
        self.name(r'https?://placement-host:8778', api.url)

    def run(self, step, status=0):
        """Runs ``step`` as written but for this machine's names; returns
        what it printed (stdout and stderr)."""
        script = step.script
        for written, here in self.names:
            script = written.sub(here, script)
        done = subprocess.run(
            ['bash', '--noprofile', '--norc', '-e', '-c', script],
            cwd=self.workdir, env=self.env, capture_output=True, text=True,
            timeout=600)
        printed = done.stdout + done.stderr
        assert done.returncode == status, '%s\nran: %s\nexit %d\n%s' % (
            step, script, done.returncode, printed)
        return printed


def _mysql(mariadb, sql):
    client = placement_db._binary('mariadb', 'mysql')
    subprocess.run([client, '--no-defaults', '--socket=' + mariadb.socket,
                    '-uroot', '-e', sql], check=True, capture_output=True,
                   timeout=60)


def _mariadb(tmp_path):
    missing = placement_db.MariaDB.missing()
    if missing:
        pytest.fail('%s (tools/run-tests.sh installs it)' % missing)
    return placement_db.MariaDB(tmp_path / 'mariadb').start()


def _reads(api, cloud):
    """What Placement's reads answer, comparable between services."""
    return {path: test_import._comparable(api.request('GET', path))
            for path in test_import.compared_paths(cloud)}


def test_every_runbook_is_played():
    runbooks = []
    for path in sorted(glob.glob(os.path.join(ADMIN, '*.rst'))):
        with open(path) as page:
            if 'Runbook:' in page.read(300):
                runbooks.append(os.path.basename(path))
    assert tuple(runbooks) == PLAYED
    for page in PLAYED:
        assert steps(page), page


def test_switch_over(tmp_path):
    book = steps('switch-over.rst')
    assert [step.script.split()[-2:] for step in book[:2]] == [
        ['db', 'sync'], ['upgrade', 'check']], book
    assert book[2].says('db import', '--dry-run'), book
    assert book[3].says('db import', '--verify'), book
    assert book[4].says('curl', '/tachyon/health', 'openstack'), book
    assert len(book) == 5, book

    mariadb = _mariadb(tmp_path)
    placement = tachyon = None
    try:
        # The cloud's Placement, on its database, reached as the runbook's
        # URL names it.
        _mysql(mariadb, "CREATE USER 'placement'@'%' IDENTIFIED BY 'secret';"
               " GRANT ALL PRIVILEGES ON placement.* TO 'placement'@'%'")
        placement = placement_db.Placement(tmp_path / 'placement',
                                           mariadb.url).start()
        cloud = test_import.fill(placement)
        expected = _reads(placement, cloud)
        machine = Machine(tmp_path)
        machine.with_mariadb(mariadb)
        tachyon = served.ServedPlacement(tmp_path / 'tachyon')
        machine.name('/etc/tachyon/placement.conf', tachyon.config)

        # Before the day.
        machine.run(book[0])
        machine.run(book[1])
        rehearsal = machine.run(book[2])
        assert 'providers' in rehearsal and 'allocations' in rehearsal, \
            rehearsal

        # On the day: Placement stops, the import, Tachyon in its place.
        placement.stop()
        imported = machine.run(book[3])
        assert 'counts and usages per provider agree' in imported, imported
        tachyon.start()
        machine.with_cloud(tachyon)
        checked = machine.run(book[4])
        assert '"status"' in checked and 'compute-0' in checked, checked
        assert _reads(tachyon, cloud) == expected
    finally:
        for service in (tachyon, placement):
            if service is not None:
                service.stop()
        mariadb.stop()


def test_rollback(tmp_path):
    book = steps('rollback.rst')
    assert book[0].says('mysql -e', 'CREATE DATABASE placement_rollback',
                        'GRANT', 'placement-manage', 'db sync'), book
    assert book[1].says('db export', '--to', '--verify'), book
    assert len(book) == 2, book

    mariadb = _mariadb(tmp_path)
    placement = tachyon = None
    try:
        tachyon = served.ServedPlacement(tmp_path / 'tachyon').start()
        cloud = test_import.fill(tachyon)
        expected = _reads(tachyon, cloud)
        machine = Machine(tmp_path)
        machine.with_mariadb(mariadb)
        machine.name('/etc/tachyon/placement.conf', tachyon.config)
        rollback_url = ('mysql+pymysql://placement:secret@localhost/'
                        'placement_rollback?unix_socket=%s&charset=utf8mb4'
                        % mariadb.socket)
        placement_conf = tmp_path / 'placement.conf'
        placement_conf.write_text('[placement_database]\nconnection = %s\n'
                                  % rollback_url)
        machine.name('/etc/placement/placement.conf', str(placement_conf))

        tachyon.stop()
        machine.run(book[0])
        exported = machine.run(book[1])
        assert 'counts and usages per provider agree' in exported, exported

        # Placement started on that database answers as Tachyon did.
        placement = placement_db.Placement(tmp_path / 'placement',
                                           rollback_url).start()
        assert _reads(placement, cloud) == expected
    finally:
        for service in (tachyon, placement):
            if service is not None:
                service.stop()
        mariadb.stop()


def test_backup_and_restore_drill(tmp_path):
    book = steps('backup.rst')
    assert book[0].says('db backup', '/var/backups/tachyon/'), book
    assert book[1].says('db restore', '/var/backups/tachyon/'), book
    assert book[2].says('tachyon-status', 'upgrade check'), book
    assert len(book) == 3, book

    api = served.ServedPlacement(tmp_path / 'tachyon').start()
    target = None
    try:
        cloud = test_import.fill(api)
        expected = _reads(api, cloud)
        machine = Machine(tmp_path)
        backups = tmp_path / 'backups'
        backups.mkdir()
        machine.name('/var/backups/tachyon/', str(backups) + '/')
        machine.name('/etc/tachyon/placement.conf', api.config)
        machine.run(book[0])     # while the API serves
        taken = glob.glob(str(backups / 'graph-*.jsonl.gz'))
        assert len(taken) == 1, taken

        # The drill: the API stopped, an empty graph (a new data_dir; the
        # Neo4j database emptied), the restore, the check, the API.
        api.stop()
        target = served.ServedPlacement(tmp_path / 'restored')
        machine.name('/etc/tachyon/placement.conf', target.config)
        machine.name(r'/var/backups/tachyon/graph-[0-9-]+\.jsonl\.gz',
                     taken[0])
        machine.run(book[1])
        machine.run(book[2])
        target.start()
        assert _reads(target, cloud) == expected
    finally:
        for service in (api, target):
            if service is not None:
                service.stop()


def test_upgrade(tmp_path):
    book = steps('upgrade.rst')
    assert book[0].says('tachyon-status', 'upgrade check'), book
    assert book[1].says('tachyon-manage', 'db sync'), book
    assert len(book) == 2, book

    api = served.ServedPlacement(tmp_path / 'tachyon').start()
    try:
        cloud = test_import.fill(api)
        expected = _reads(api, cloud)
        api.stop()
        # The graph as an earlier release left it: no schema version.
        test_status._record_schema(api.config, None)
        machine = Machine(tmp_path)
        machine.name('/etc/tachyon/placement.conf', api.config)
        checked = machine.run(book[0], status=1)    # a warning
        assert 'Schema version' in checked and 'db sync' in checked, checked
        synced = machine.run(book[1])
        assert 'Migrated the graph to schema version' in synced, synced
        machine.run(book[0])
        api.start()
        assert _reads(api, cloud) == expected
    finally:
        api.stop()
