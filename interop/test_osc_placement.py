"""The ``openstack`` CLI with osc-placement 4.9.x against the server.

Every command is a real ``openstack`` process (interop/.venv/bin/openstack)
with ``--os-auth-type admin_token --os-endpoint URL --os-token admin`` and
an explicit ``--os-placement-api-version`` (except in the negotiation step,
which lets the plugin negotiate as it does by default). Output is read with
``-f json`` and checked field by field; failing commands are checked for
their exit code and for the message osc-placement extracts from the error
body (``errors[0].detail``, last line) plus ``(HTTP <status>)``.

Steps set up what they do not exercise with plain HTTP (the ``api``
fixture) so that each command group can be judged on its own.
"""
import json
import os
import re
import shlex
import subprocess
import sys
import uuid

import pytest

import conftest

SUITE = 'test_osc_placement'
NS = uuid.UUID('3f1c2b8a-9e57-4c43-8d2e-5d0c6b7f9a21')
PROJECT = uuid.uuid5(NS, 'project').hex
USER = uuid.uuid5(NS, 'user').hex
USER_2 = uuid.uuid5(NS, 'user-2').hex


def new_uuid():
    return str(uuid.uuid4())


class CommandFailed(AssertionError):
    pass


class OSC:
    def __init__(self, endpoint):
        self.endpoint = endpoint
        self.binary = os.path.join(os.path.dirname(sys.executable),
                                   'openstack')
        env = {k: v for k, v in os.environ.items()
               if not k.startswith('OS_')}
        env['PYTHONWARNINGS'] = 'ignore'
        self.env = env

    def _run(self, version, command, fmt_json, extra=()):
        argv = [self.binary, '--os-auth-type', 'admin_token',
                '--os-endpoint', self.endpoint, '--os-token', conftest.TOKEN]
        if version is not None:
            argv += ['--os-placement-api-version', version]
        argv += list(extra)
        argv += shlex.split(command) if isinstance(command, str) \
            else list(command)
        if fmt_json:
            argv += ['-f', 'json']
        proc = subprocess.run(argv, capture_output=True, text=True,
                              env=self.env, timeout=180)
        shown = ' '.join(shlex.quote(a) for a in argv[1:])
        conftest.trace('$ openstack %s\n  -> exit %d\n  stdout: %s\n'
                       '  stderr: %s' % (shown, proc.returncode,
                                         proc.stdout.strip()[:1500],
                                         proc.stderr.strip()[-1500:]))
        if version is not None:
            conftest.record_microversion(SUITE, version)
        return proc, shown

    def __call__(self, version, command, fmt_json=True):
        """Run a command that must succeed; parsed JSON (or text)."""
        proc, shown = self._run(version, command, fmt_json)
        if proc.returncode != 0:
            raise CommandFailed('openstack %s\nexit %d\nstderr: %s' % (
                shown, proc.returncode, proc.stderr.strip()[-3000:]))
        if fmt_json:
            try:
                return json.loads(proc.stdout)
            except ValueError:
                raise CommandFailed('openstack %s\nprinted no JSON: %r' % (
                    shown, proc.stdout[:2000]))
        return proc.stdout

    def fails(self, version, command, status=None, message=None):
        """Run a command that must fail with an HTTP error; its stderr."""
        proc, shown = self._run(version, command, False)
        assert proc.returncode != 0, (
            'openstack %s\nunexpectedly succeeded: %s' % (shown, proc.stdout))
        err = proc.stderr
        assert 'Traceback' not in err, (
            'openstack %s\nthe client crashed (error body not understood?)'
            ':\n%s' % (shown, err[-3000:]))
        if status is not None:
            assert '(HTTP %d)' % status in err, (
                'openstack %s\nexpected HTTP %d, stderr: %s' % (
                    shown, status, err[-3000:]))
        if message is not None:
            assert re.search(message, err), (
                'openstack %s\nexpected /%s/ in stderr: %s' % (
                    shown, message, err[-3000:]))
        return err

    def debug(self, version, command):
        """Run with --debug; (parsed JSON, stderr)."""
        proc, shown = self._run(version, command, True, extra=['--debug'])
        if proc.returncode != 0:
            raise CommandFailed('openstack %s\nexit %d\nstderr: %s' % (
                shown, proc.returncode, proc.stderr.strip()[-3000:]))
        return json.loads(proc.stdout), proc.stderr


@pytest.fixture(scope='module')
def osc(server):
    return OSC(server.endpoint)


@pytest.fixture(scope='module')
def tag(run_id):
    return run_id


def uuids(rows, key='uuid'):
    return {row[key] for row in rows}


def by(rows, key):
    return {row[key]: row for row in rows}


# Version negotiation ---------------------------------------------------------

def test_version_negotiation_by_default(osc, api, tag):
    """Without --os-placement-api-version the plugin negotiates (GET / at
    its highest gap-free version, 1.29, lowered by a 406's max_version)."""
    rp = api.create_provider('osc-%s-negotiate' % tag)
    rows, err = osc.debug(None, 'resource provider list --name %s'
                          % rp['name'])
    sent = set(re.findall(r'OpenStack-API-Version: placement (1\.\d+)', err))
    assert sent == {'1.29'}, err[-2000:]
    conftest.record_microversion(SUITE, '1.29')
    assert rows == [{'uuid': rp['uuid'], 'name': rp['name'],
                     'generation': 0, 'root_provider_uuid': rp['uuid'],
                     'parent_provider_uuid': None}]


# Resource providers ----------------------------------------------------------

def test_provider_create_show_list_at_1_0(osc, tag):
    name = 'osc-%s-rp-1.0' % tag
    created = osc('1.0', ['resource', 'provider', 'create', name])
    assert set(created) == {'uuid', 'name', 'generation'}
    assert created['name'] == name and created['generation'] == 0
    uuid.UUID(created['uuid'])
    shown = osc('1.0', ['resource', 'provider', 'show', created['uuid']])
    assert shown == created
    listed = osc('1.0', ['resource', 'provider', 'list', '--name', name])
    assert listed == [created]
    listed = osc('1.0', ['resource', 'provider', 'list', '--uuid',
                         created['uuid']])
    assert listed == [created]
    given = new_uuid()
    created = osc('1.0', ['resource', 'provider', 'create', '--uuid', given,
                          name + '-b'])
    assert created['uuid'] == given


def test_provider_create_at_1_20(osc, tag):
    """1.20: POST returns the provider (the CLI still reads Location)."""
    name = 'osc-%s-rp-1.20' % tag
    created = osc('1.20', ['resource', 'provider', 'create', name])
    assert created['root_provider_uuid'] == created['uuid']
    assert created['parent_provider_uuid'] is None
    osc.fails('1.20', ['resource', 'provider', 'create', name], status=409,
              message='Conflicting resource provider name')


def test_provider_tree_at_1_14(osc, tag):
    root = osc('1.14', ['resource', 'provider', 'create',
                        'osc-%s-tree-root' % tag])
    child = osc('1.14', ['resource', 'provider', 'create',
                         '--parent-provider', root['uuid'],
                         'osc-%s-tree-child' % tag])
    grandchild = osc('1.14', ['resource', 'provider', 'create',
                              '--parent-provider', child['uuid'],
                              'osc-%s-tree-grandchild' % tag])
    assert child['parent_provider_uuid'] == root['uuid']
    assert child['root_provider_uuid'] == root['uuid']
    assert grandchild['root_provider_uuid'] == root['uuid']
    assert grandchild['parent_provider_uuid'] == child['uuid']
    for start in (root, grandchild):
        tree = osc('1.14', ['resource', 'provider', 'list', '--in-tree',
                            start['uuid']])
        assert uuids(tree) == {root['uuid'], child['uuid'],
                               grandchild['uuid']}
    shown = osc('1.14', ['resource', 'provider', 'show', grandchild['uuid']])
    assert shown == grandchild
    osc.fails('1.14', ['resource', 'provider', 'create', '--parent-provider',
                       new_uuid(), 'osc-%s-orphan' % tag], status=400,
              message='parent provider')


def test_provider_set_name_and_parent(osc, api, tag):
    rp = api.create_provider('osc-%s-set' % tag)
    renamed = osc('1.0', ['resource', 'provider', 'set', rp['uuid'],
                          '--name', 'osc-%s-set-renamed' % tag])
    assert renamed['name'] == 'osc-%s-set-renamed' % tag
    assert renamed['uuid'] == rp['uuid']
    assert osc('1.0', ['resource', 'provider', 'show', rp['uuid']])[
        'name'] == 'osc-%s-set-renamed' % tag

    parent_a = api.create_provider('osc-%s-set-parent-a' % tag)
    parent_b = api.create_provider('osc-%s-set-parent-b' % tag)
    # a root may be given a parent since 1.14
    adopted = osc('1.14', ['resource', 'provider', 'set', rp['uuid'],
                           '--name', 'osc-%s-set-renamed' % tag,
                           '--parent-provider', parent_a['uuid']])
    assert adopted['parent_provider_uuid'] == parent_a['uuid']
    assert adopted['root_provider_uuid'] == parent_a['uuid']
    # re-parenting is refused before 1.37...
    osc.fails('1.14', ['resource', 'provider', 'set', rp['uuid'],
                       '--name', 'osc-%s-set-renamed' % tag,
                       '--parent-provider', parent_b['uuid']],
              status=400, message='re-parenting a provider is not')
    # ...and allowed from 1.37 on
    moved = osc('1.37', ['resource', 'provider', 'set', rp['uuid'],
                         '--name', 'osc-%s-set-moved' % tag,
                         '--parent-provider', parent_b['uuid']])
    assert moved['parent_provider_uuid'] == parent_b['uuid']
    assert moved['root_provider_uuid'] == parent_b['uuid']
    assert moved['name'] == 'osc-%s-set-moved' % tag
    other = api.create_provider('osc-%s-set-other' % tag)
    osc.fails('1.0', ['resource', 'provider', 'set', rp['uuid'],
                      '--name', other['name']], status=409,
              message='Conflicting resource provider')


def test_provider_delete(osc, api, tag):
    parent = api.create_provider('osc-%s-del-parent' % tag)
    child = api.create_provider('osc-%s-del-child' % tag,
                                parent=parent['uuid'])
    osc.fails('1.14', ['resource', 'provider', 'delete', parent['uuid']],
              status=409, message='child resource providers')
    assert osc('1.14', ['resource', 'provider', 'delete', child['uuid']],
               fmt_json=False) == ''
    osc.fails('1.14', ['resource', 'provider', 'show', child['uuid']],
              status=404, message='No resource provider with uuid')
    osc('1.0', ['resource', 'provider', 'delete', parent['uuid']],
        fmt_json=False)
    osc.fails('1.0', ['resource', 'provider', 'delete', parent['uuid']],
              status=404, message='No resource provider with uuid')


@pytest.fixture(scope='module')
def filter_world(api, tag):
    """Three providers with a custom class, traits and aggregates."""
    rc = 'CUSTOM_OSC_%s_FILTER' % tag
    t1, t2 = 'CUSTOM_OSC_%s_T1' % tag, 'CUSTOM_OSC_%s_T2' % tag
    ag1, ag2 = new_uuid(), new_uuid()
    api.ensure_resource_class(rc)
    world = {'rc': rc, 't1': t1, 't2': t2, 'ag1': ag1, 'ag2': ag2}
    for name, total, traits, aggs in (('a', 10, [t1], [ag1]),
                                      ('b', 5, [t2], [ag1, ag2]),
                                      ('c', 10, [t1, t2], [ag2])):
        rp = api.create_provider('osc-%s-filter-%s' % (tag, name))
        api.set_inventories(rp['uuid'], {rc: {'total': total}})
        api.set_traits(rp['uuid'], traits)
        api.set_aggregates(rp['uuid'], aggs)
        world[name] = rp['uuid']
    return world


def test_provider_list_resource_and_trait_filters(osc, filter_world):
    w = filter_world
    rows = osc('1.4', ['resource', 'provider', 'list', '--resource',
                       '%s=8' % w['rc']])
    assert uuids(rows) == {w['a'], w['c']}
    assert set(rows[0]) == {'uuid', 'name', 'generation'}
    rows = osc('1.18', ['resource', 'provider', 'list', '--resource',
                        '%s=1' % w['rc'], '--required', w['t1']])
    assert uuids(rows) == {w['a'], w['c']}
    rows = osc('1.18', ['resource', 'provider', 'list', '--resource',
                        '%s=1' % w['rc'], '--required', w['t1'],
                        '--required', w['t2']])
    assert uuids(rows) == {w['c']}
    rows = osc('1.22', ['resource', 'provider', 'list', '--resource',
                        '%s=1' % w['rc'], '--forbidden', w['t2']])
    assert uuids(rows) == {w['a']}
    rows = osc('1.39', ['resource', 'provider', 'list', '--resource',
                        '%s=1' % w['rc'], '--required',
                        '%s,%s' % (w['t1'], w['t2'])])
    assert uuids(rows) == {w['a'], w['b'], w['c']}
    rows = osc('1.39', ['resource', 'provider', 'list', '--resource',
                        '%s=1' % w['rc'], '--required',
                        '%s,%s' % (w['t1'], w['t2']), '--forbidden',
                        w['t1']])
    assert uuids(rows) == {w['b']}
    osc.fails('1.18', ['resource', 'provider', 'list', '--required',
                       'CUSTOM_OSC_NO_SUCH_TRAIT'], status=400,
              message='No such trait')


def test_provider_list_member_of(osc, filter_world):
    w = filter_world
    rows = osc('1.3', ['resource', 'provider', 'list', '--member-of',
                       w['ag1']])
    assert uuids(rows) == {w['a'], w['b']}
    rows = osc('1.3', ['resource', 'provider', 'list', '--member-of',
                       '%s,%s' % (w['ag1'], w['ag2'])])
    assert uuids(rows) == {w['a'], w['b'], w['c']}
    rows = osc('1.24', ['resource', 'provider', 'list', '--member-of',
                        w['ag1'], '--member-of', w['ag2']])
    assert uuids(rows) == {w['b']}
    # the deprecated spelling still works, with a warning
    proc, _ = osc._run('1.3', ['resource', 'provider', 'list',
                               '--aggregate-uuid', w['ag2']], True)
    assert proc.returncode == 0, proc.stderr
    assert uuids(json.loads(proc.stdout)) == {w['b'], w['c']}
    assert 'deprecated' in proc.stderr


# Resource classes ------------------------------------------------------------

def test_resource_classes(osc, tag):
    name = 'CUSTOM_OSC_%s_RC' % tag
    assert osc('1.2', ['resource', 'class', 'create', name],
               fmt_json=False) == ''
    listed = osc('1.2', ['resource', 'class', 'list'])
    names = {row['name'] for row in listed}
    assert name in names and 'VCPU' in names and 'PCPU' in names
    assert osc('1.2', ['resource', 'class', 'show', name]) == {'name': name}
    osc.fails('1.2', ['resource', 'class', 'create', name], status=409,
              message='Conflicting resource class already exists')
    # set: idempotent create since 1.7
    osc('1.7', ['resource', 'class', 'set', name], fmt_json=False)
    other = name + '_SET'
    osc('1.7', ['resource', 'class', 'set', other], fmt_json=False)
    assert osc('1.7', ['resource', 'class', 'show', other])['name'] == other
    osc.fails('1.7', ['resource', 'class', 'set', 'NOT_CUSTOM_%s' % tag],
              status=400)
    osc('1.2', ['resource', 'class', 'delete', other], fmt_json=False)
    osc.fails('1.2', ['resource', 'class', 'show', other], status=404,
              message='No such resource class')
    osc.fails('1.2', ['resource', 'class', 'delete', 'VCPU'], status=400,
              message='Cannot delete standard resource class')


# Traits ----------------------------------------------------------------------

def test_traits(osc, tag):
    prefix = 'CUSTOM_OSC_%s_TRAIT' % tag
    for suffix in ('A', 'B'):
        assert osc('1.6', ['trait', 'create', prefix + suffix],
                   fmt_json=False) == ''
    osc('1.6', ['trait', 'create', prefix + 'A'], fmt_json=False)  # again
    assert osc('1.6', ['trait', 'show', prefix + 'A']) == {
        'name': prefix + 'A'}
    rows = osc('1.6', ['trait', 'list', '--name', 'startswith:' + prefix])
    assert {row['name'] for row in rows} == {prefix + 'A', prefix + 'B'}
    rows = osc('1.6', ['trait', 'list', '--name',
                       'in:%sA,HW_CPU_X86_AVX2' % prefix])
    assert {row['name'] for row in rows} == {prefix + 'A', 'HW_CPU_X86_AVX2'}
    all_traits = {row['name'] for row in osc('1.6', ['trait', 'list'])}
    assert {'HW_CPU_X86_AVX2', 'COMPUTE_STATUS_DISABLED',
            prefix + 'B'} <= all_traits
    osc('1.6', ['trait', 'delete', prefix + 'B'], fmt_json=False)
    osc.fails('1.6', ['trait', 'show', prefix + 'B'], status=404,
              message='No such trait')
    osc.fails('1.6', ['trait', 'delete', 'HW_CPU_X86_AVX2'], status=400,
              message='Cannot delete standard trait')
    osc.fails('1.6', ['trait', 'create', 'OSC_%s_NOT_CUSTOM' % tag],
              status=400)


def test_provider_traits(osc, api, tag):
    rp = api.create_provider('osc-%s-traits' % tag)
    trait = 'CUSTOM_OSC_%s_RP_TRAIT' % tag
    api.put('/traits/%s' % trait, expect=201)
    rows = osc('1.6', ['resource', 'provider', 'trait', 'set', rp['uuid'],
                       '--trait', 'HW_CPU_X86_AVX2', '--trait', trait])
    assert {row['name'] for row in rows} == {'HW_CPU_X86_AVX2', trait}
    rows = osc('1.6', ['resource', 'provider', 'trait', 'list', rp['uuid']])
    assert {row['name'] for row in rows} == {'HW_CPU_X86_AVX2', trait}
    assert api.generation(rp['uuid']) == 1
    # associated traits filter
    rows = osc('1.6', ['trait', 'list', '--associated', '--name',
                       'startswith:CUSTOM_OSC_%s_RP' % tag])
    assert {row['name'] for row in rows} == {trait}
    osc.fails('1.6', ['trait', 'delete', trait], status=409,
              message='in use')
    rows = osc('1.6', ['resource', 'provider', 'trait', 'set', rp['uuid'],
                       '--trait', trait])
    assert [row['name'] for row in rows] == [trait]
    osc('1.6', ['resource', 'provider', 'trait', 'delete', rp['uuid']],
        fmt_json=False)
    assert osc('1.6', ['resource', 'provider', 'trait', 'list',
                       rp['uuid']]) == []
    osc.fails('1.6', ['resource', 'provider', 'trait', 'set', rp['uuid'],
                      '--trait', 'CUSTOM_OSC_%s_UNKNOWN' % tag], status=400,
              message='No such trait')
    osc.fails('1.6', ['resource', 'provider', 'trait', 'list', new_uuid()],
              status=404)


# Aggregates ------------------------------------------------------------------

def test_provider_aggregates(osc, api, tag):
    rp = api.create_provider('osc-%s-aggs' % tag)
    ag1, ag2, ag3 = new_uuid(), new_uuid(), new_uuid()
    rows = osc('1.1', ['resource', 'provider', 'aggregate', 'set',
                       rp['uuid'], '--aggregate', ag1, '--aggregate', ag2])
    assert uuids(rows) == {ag1, ag2}
    rows = osc('1.1', ['resource', 'provider', 'aggregate', 'list',
                       rp['uuid']])
    assert uuids(rows) == {ag1, ag2}
    generation = api.generation(rp['uuid'])
    # 1.19: a generation is required, checked by the server
    proc, _ = osc._run('1.19', ['resource', 'provider', 'aggregate', 'set',
                                rp['uuid'], '--aggregate', ag3], True)
    assert proc.returncode != 0 and 'generation' in proc.stderr
    osc.fails('1.19', ['resource', 'provider', 'aggregate', 'set',
                       rp['uuid'], '--aggregate', ag3, '--generation',
                       str(generation + 5)], status=409,
              message='generation already changed')
    rows = osc('1.19', ['resource', 'provider', 'aggregate', 'set',
                        rp['uuid'], '--aggregate', ag3, '--generation',
                        str(generation)])
    assert uuids(rows) == {ag3}
    assert api.generation(rp['uuid']) == generation + 1
    rows = osc('1.19', ['resource', 'provider', 'aggregate', 'set',
                        rp['uuid'], '--generation', str(generation + 1)])
    assert rows == []
    assert osc('1.19', ['resource', 'provider', 'aggregate', 'list',
                        rp['uuid']]) == []
    osc.fails('1.1', ['resource', 'provider', 'aggregate', 'list',
                      new_uuid()], status=404)


# Inventories -----------------------------------------------------------------

MAX_INT = 2147483647
INV_FIELDS = {'allocation_ratio', 'min_unit', 'max_unit', 'reserved',
              'step_size', 'total'}


def test_inventory_set_list_show(osc, api, tag):
    rp = api.create_provider('osc-%s-inv' % tag)
    rows = osc('1.0', ['resource', 'provider', 'inventory', 'set',
                       rp['uuid'], '--resource', 'VCPU=8',
                       '--resource', 'VCPU:allocation_ratio=4.0',
                       '--resource', 'VCPU:max_unit=4',
                       '--resource', 'MEMORY_MB=4096',
                       '--resource', 'MEMORY_MB:reserved=512',
                       '--resource', 'MEMORY_MB:step_size=128'])
    got = by(rows, 'resource_class')
    assert set(got) == {'VCPU', 'MEMORY_MB'}
    assert got['VCPU'] == {'resource_class': 'VCPU', 'total': 8,
                           'allocation_ratio': 4.0, 'max_unit': 4,
                           'min_unit': 1, 'reserved': 0, 'step_size': 1}
    assert got['MEMORY_MB']['reserved'] == 512
    assert got['MEMORY_MB']['step_size'] == 128
    # unset fields take the server's defaults (max_unit: the largest int)
    assert got['MEMORY_MB']['max_unit'] == MAX_INT
    assert got['MEMORY_MB']['allocation_ratio'] == 1.0
    listed = by(osc('1.0', ['resource', 'provider', 'inventory', 'list',
                            rp['uuid']]), 'resource_class')
    assert set(listed) == {'VCPU', 'MEMORY_MB'}
    for rc in listed:
        assert set(listed[rc]) == INV_FIELDS | {'resource_class', 'used'}
        assert listed[rc]['used'] == 0
        for field in INV_FIELDS:
            assert listed[rc][field] == got[rc][field]
    shown = osc('1.0', ['resource', 'provider', 'inventory', 'show',
                        rp['uuid'], 'VCPU'])
    assert shown == {'allocation_ratio': 4.0, 'min_unit': 1, 'max_unit': 4,
                     'reserved': 0, 'step_size': 1, 'total': 8, 'used': 0}
    osc.fails('1.0', ['resource', 'provider', 'inventory', 'show',
                      rp['uuid'], 'DISK_GB'], status=404,
              message='No inventory of class DISK_GB')
    osc.fails('1.0', ['resource', 'provider', 'inventory', 'set',
                      rp['uuid'], '--resource', 'CUSTOM_OSC_NO_SUCH=1'],
              status=400)
    osc.fails('1.0', ['resource', 'provider', 'inventory', 'set',
                      rp['uuid'], '--resource', 'VCPU=1',
                      '--resource', 'VCPU:reserved=2'], status=400)
    # full replacement
    rows = osc('1.0', ['resource', 'provider', 'inventory', 'set',
                       rp['uuid'], '--resource', 'DISK_GB=100'])
    assert [row['resource_class'] for row in rows] == ['DISK_GB']
    assert [row['resource_class'] for row in osc('1.0', [
        'resource', 'provider', 'inventory', 'list', rp['uuid']])] == [
        'DISK_GB']


def test_inventory_amend_and_dry_run(osc, api, tag):
    rp = api.create_provider('osc-%s-amend' % tag)
    api.set_inventories(rp['uuid'], {'VCPU': {'total': 8},
                                     'MEMORY_MB': {'total': 1024}})
    generation = api.generation(rp['uuid'])
    rows = osc('1.0', ['resource', 'provider', 'inventory', 'set',
                       rp['uuid'], '--dry-run', '--resource', 'VCPU=32'])
    assert by(rows, 'resource_class')['VCPU']['total'] == 32
    assert api.generation(rp['uuid']) == generation
    assert api.get('/resource_providers/%s/inventories/VCPU'
                   % rp['uuid'])['total'] == 8
    rows = osc('1.0', ['resource', 'provider', 'inventory', 'set',
                       rp['uuid'], '--amend', '--resource', 'DISK_GB=50',
                       '--resource', 'VCPU:allocation_ratio=2.0'])
    got = by(rows, 'resource_class')
    assert set(got) == {'VCPU', 'MEMORY_MB', 'DISK_GB'}
    assert got['VCPU']['total'] == 8 and got['VCPU']['allocation_ratio'] == 2
    assert got['MEMORY_MB']['total'] == 1024
    assert got['DISK_GB']['total'] == 50
    rows = osc('1.0', ['resource', 'provider', 'inventory', 'set',
                       rp['uuid'], '--amend', '--dry-run',
                       '--resource', 'MEMORY_MB=2048'])
    assert by(rows, 'resource_class')['MEMORY_MB']['total'] == 2048
    assert api.get('/resource_providers/%s/inventories/MEMORY_MB'
                   % rp['uuid'])['total'] == 1024


def test_inventory_class_set(osc, api, tag):
    rp = api.create_provider('osc-%s-class-set' % tag)
    api.set_inventories(rp['uuid'], {'MEMORY_MB': {'total': 1024}})
    # the per-class PUT only updates an existing inventory record
    osc.fails('1.0', ['resource', 'provider', 'inventory', 'class', 'set',
                      rp['uuid'], 'VCPU', '--total', '16'], status=400,
              message='No inventory of class VCPU found')
    api.set_inventories(rp['uuid'], {'MEMORY_MB': {'total': 1024},
                                     'VCPU': {'total': 2}})
    shown = osc('1.0', ['resource', 'provider', 'inventory', 'class', 'set',
                        rp['uuid'], 'VCPU', '--total', '16',
                        '--max_unit', '4', '--reserved', '1',
                        '--allocation_ratio', '8.0'])
    assert shown == {'allocation_ratio': 8.0, 'min_unit': 1, 'max_unit': 4,
                     'reserved': 1, 'step_size': 1, 'total': 16}
    listed = by(osc('1.0', ['resource', 'provider', 'inventory', 'list',
                            rp['uuid']]), 'resource_class')
    assert set(listed) == {'VCPU', 'MEMORY_MB'}
    shown = osc('1.0', ['resource', 'provider', 'inventory', 'class', 'set',
                        rp['uuid'], 'VCPU', '--total', '20'])
    # a full replacement of the record: unset fields back to defaults
    assert shown == {'allocation_ratio': 1.0, 'min_unit': 1,
                     'max_unit': MAX_INT, 'reserved': 0, 'step_size': 1,
                     'total': 20}


def test_inventory_set_for_aggregate(osc, api, tag):
    agg = new_uuid()
    members = []
    for i in range(2):
        rp = api.create_provider('osc-%s-agg-inv-%d' % (tag, i))
        api.set_aggregates(rp['uuid'], [agg])
        members.append(rp['uuid'])
    rows = osc('1.3', ['resource', 'provider', 'inventory', 'set', agg,
                       '--aggregate', '--resource', 'VCPU=4',
                       '--resource', 'MEMORY_MB=512'])
    assert {(row['resource_provider'], row['resource_class'])
            for row in rows} == {(m, rc) for m in members
                                 for rc in ('VCPU', 'MEMORY_MB')}
    for member in members:
        invs = api.get('/resource_providers/%s/inventories'
                       % member)['inventories']
        assert {rc: i['total'] for rc, i in invs.items()} == {
            'VCPU': 4, 'MEMORY_MB': 512}
    proc, _ = osc._run('1.3', ['resource', 'provider', 'inventory', 'set',
                               new_uuid(), '--aggregate', '--resource',
                               'VCPU=1'], True)
    assert proc.returncode != 0
    assert 'No resource providers found in aggregate' in proc.stderr


def test_inventory_delete(osc, api, tag):
    rp = api.create_provider('osc-%s-inv-del' % tag)
    api.set_inventories(rp['uuid'], {'VCPU': {'total': 8},
                                     'MEMORY_MB': {'total': 1024},
                                     'DISK_GB': {'total': 10}})
    osc('1.0', ['resource', 'provider', 'inventory', 'delete', rp['uuid'],
                '--resource-class', 'DISK_GB'], fmt_json=False)
    assert set(api.get('/resource_providers/%s/inventories'
                       % rp['uuid'])['inventories']) == {'VCPU', 'MEMORY_MB'}
    osc.fails('1.0', ['resource', 'provider', 'inventory', 'delete',
                      rp['uuid'], '--resource-class', 'DISK_GB'], status=404)
    consumer = new_uuid()
    api.put('/allocations/%s' % consumer, {
        'allocations': {rp['uuid']: {'resources': {'VCPU': 2}}},
        'project_id': PROJECT, 'user_id': USER,
        'consumer_generation': None}, version='1.28', expect=204)
    osc.fails('1.0', ['resource', 'provider', 'inventory', 'delete',
                      rp['uuid'], '--resource-class', 'VCPU'], status=409,
              message='in use')
    osc.fails('1.5', ['resource', 'provider', 'inventory', 'delete',
                      rp['uuid']], status=409, message='in use')
    api.delete('/allocations/%s' % consumer)
    osc('1.5', ['resource', 'provider', 'inventory', 'delete', rp['uuid']],
        fmt_json=False)
    assert osc('1.5', ['resource', 'provider', 'inventory', 'list',
                       rp['uuid']]) == []


# Allocations and usages ------------------------------------------------------

@pytest.fixture
def alloc_world(api, tag, request):
    """Two providers of this step's own (usages stay the step's own)."""
    rps = []
    for i in range(2):
        rp = api.create_provider('osc-%s-%s-%d' % (
            tag, request.node.name[5:40], i))
        api.set_inventories(rp['uuid'], {'VCPU': {'total': 8},
                                         'MEMORY_MB': {'total': 4096},
                                         'DISK_GB': {'total': 100}})
        rps.append(rp['uuid'])
    return rps


def alloc_rows(rows):
    return {row['resource_provider']: row['resources'] for row in rows}


def test_allocation_set_show_at_1_0(osc, api, alloc_world):
    rp1, _ = alloc_world
    consumer = new_uuid()
    rows = osc('1.0', ['resource', 'provider', 'allocation', 'set',
                       consumer, '--allocation',
                       'rp=%s,VCPU=2,MEMORY_MB=512' % rp1])
    assert len(rows) == 1
    assert set(rows[0]) == {'resource_provider', 'generation', 'resources'}
    assert rows[0]['resource_provider'] == rp1
    assert rows[0]['resources'] == {'VCPU': 2, 'MEMORY_MB': 512}
    assert rows[0]['generation'] == api.generation(rp1)
    shown = osc('1.0', ['resource', 'provider', 'allocation', 'show',
                        consumer])
    assert shown == rows
    osc('1.0', ['resource', 'provider', 'allocation', 'delete', consumer],
        fmt_json=False)
    assert osc('1.0', ['resource', 'provider', 'allocation', 'show',
                       consumer]) == []


def test_allocation_set_with_project_user(osc, api, alloc_world):
    project = uuid.uuid4().hex  # usages of this step only
    rp1, rp2 = alloc_world
    consumer = new_uuid()
    # 1.8: project and user are required (by the CLI and the server)
    rows = osc('1.8', ['resource', 'provider', 'allocation', 'set',
                       consumer, '--project-id', project, '--user-id', USER,
                       '--allocation', 'rp=%s,VCPU=1' % rp1,
                       '--allocation', 'rp=%s,DISK_GB=10' % rp2])
    assert alloc_rows(rows) == {rp1: {'VCPU': 1}, rp2: {'DISK_GB': 10}}
    # 1.12: dict format, project and user shown
    rows = osc('1.12', ['resource', 'provider', 'allocation', 'show',
                        consumer])
    assert alloc_rows(rows) == {rp1: {'VCPU': 1}, rp2: {'DISK_GB': 10}}
    assert all(r['project_id'] == project and r['user_id'] == USER
               for r in rows)
    rows = osc('1.12', ['resource', 'provider', 'allocation', 'set',
                        consumer, '--project-id', project,
                        '--user-id', USER_2,
                        '--allocation', 'rp=%s,VCPU=2,MEMORY_MB=256'
                        % rp1])
    assert alloc_rows(rows) == {rp1: {'VCPU': 2, 'MEMORY_MB': 256}}
    assert rows[0]['user_id'] == USER_2
    usage = osc('1.9', ['resource', 'usage', 'show', project,
                        '--user-id', USER_2])
    assert {r['resource_class']: r['usage'] for r in usage} == {
        'VCPU': 2, 'MEMORY_MB': 256}
    osc.fails('1.12', ['resource', 'provider', 'allocation', 'set',
                       consumer, '--project-id', project, '--user-id', USER,
                       '--allocation', 'rp=%s,VCPU=100' % rp1], status=409,
              message='exceed')
    osc.fails('1.12', ['resource', 'provider', 'allocation', 'set',
                       consumer, '--project-id', project, '--user-id', USER,
                       '--allocation', 'rp=%s,PCPU=1' % rp1], status=409,
              message='PCPU')
    osc('1.12', ['resource', 'provider', 'allocation', 'delete', consumer],
        fmt_json=False)
    osc.fails('1.12', ['resource', 'provider', 'allocation', 'delete',
                       consumer], status=404,
              message='No allocations for consumer')


def test_allocation_consumer_generation_and_type(osc, api, alloc_world):
    project = uuid.uuid4().hex  # usages of this step only
    rp1, rp2 = alloc_world
    consumer = new_uuid()
    # 1.28: the CLI reads the consumer generation and sends it back
    osc('1.28', ['resource', 'provider', 'allocation', 'set', consumer,
                 '--project-id', project, '--user-id', USER,
                 '--allocation', 'rp=%s,VCPU=1' % rp1])
    rows = osc('1.28', ['resource', 'provider', 'allocation', 'set',
                        consumer, '--project-id', project, '--user-id', USER,
                        '--allocation', 'rp=%s,VCPU=1,MEMORY_MB=128' % rp1,
                        '--allocation', 'rp=%s,DISK_GB=5' % rp2])
    assert alloc_rows(rows) == {rp1: {'VCPU': 1, 'MEMORY_MB': 128},
                                rp2: {'DISK_GB': 5}}
    assert api.get('/allocations/%s' % consumer,
                   version='1.28')['consumer_generation'] == 2
    # 1.38: consumer types
    rows = osc('1.38', ['resource', 'provider', 'allocation', 'set',
                        consumer, '--project-id', project, '--user-id', USER,
                        '--consumer-type', 'INSTANCE',
                        '--allocation', 'rp=%s,VCPU=2' % rp1])
    assert alloc_rows(rows) == {rp1: {'VCPU': 2}}
    assert rows[0]['consumer_type'] == 'INSTANCE'
    shown = osc('1.38', ['resource', 'provider', 'allocation', 'show',
                         consumer])
    assert shown == rows
    migration = new_uuid()
    osc('1.38', ['resource', 'provider', 'allocation', 'set', migration,
                 '--project-id', project, '--user-id', USER,
                 '--consumer-type', 'MIGRATION',
                 '--allocation', 'rp=%s,VCPU=1' % rp2])
    usage = {r['resource_class']: r['usage'] for r in osc(
        '1.38', ['resource', 'usage', 'show', project])}
    assert usage == {'INSTANCE': {'consumer_count': 1, 'VCPU': 2},
                     'MIGRATION': {'consumer_count': 1, 'VCPU': 1}}
    osc.fails('1.38', ['resource', 'provider', 'allocation', 'set',
                       consumer, '--project-id', project, '--user-id', USER,
                       '--consumer-type', 'not a type',
                       '--allocation', 'rp=%s,VCPU=1' % rp1], status=400)
    for c in (consumer, migration):
        osc('1.38', ['resource', 'provider', 'allocation', 'delete', c],
            fmt_json=False)


def test_allocation_unset(osc, api, alloc_world):
    project = uuid.uuid4().hex  # usages of this step only
    rp1, rp2 = alloc_world
    for version in ('1.12', '1.28', '1.38'):
        consumer = new_uuid()
        api.put('/allocations/%s' % consumer, {
            'allocations': {
                rp1: {'resources': {'VCPU': 1, 'MEMORY_MB': 64}},
                rp2: {'resources': {'VCPU': 1, 'DISK_GB': 1}}},
            'project_id': project, 'user_id': USER,
            'consumer_generation': None, 'consumer_type': 'INSTANCE'},
            version='1.38', expect=204)
        rows = osc(version, ['resource', 'provider', 'allocation', 'unset',
                             consumer, '--resource-class', 'VCPU',
                             '--provider', rp2])
        assert alloc_rows(rows) == {rp1: {'VCPU': 1, 'MEMORY_MB': 64},
                                    rp2: {'DISK_GB': 1}}, version
        assert rows[0]['project_id'] == project
        if version == '1.38':
            assert rows[0]['consumer_type'] == 'INSTANCE'
        rows = osc(version, ['resource', 'provider', 'allocation', 'unset',
                             consumer, '--resource-class', 'MEMORY_MB'])
        assert alloc_rows(rows) == {rp1: {'VCPU': 1}, rp2: {'DISK_GB': 1}}
        rows = osc(version, ['resource', 'provider', 'allocation', 'unset',
                             consumer, '--provider', rp1])
        assert alloc_rows(rows) == {rp2: {'DISK_GB': 1}}
        rows = osc(version, ['resource', 'provider', 'allocation', 'unset',
                             consumer])
        assert rows == []
        assert api.get('/allocations/%s' % consumer)['allocations'] == {}


def test_provider_show_allocations_and_usages(osc, api, alloc_world):
    project = uuid.uuid4().hex  # usages of this step only
    rp1, _ = alloc_world
    c1, c2 = new_uuid(), new_uuid()
    for c, vcpu in ((c1, 1), (c2, 3)):
        api.put('/allocations/%s' % c, {
            'allocations': {rp1: {'resources': {'VCPU': vcpu,
                                                'MEMORY_MB': 128}}},
            'project_id': project, 'user_id': USER,
            'consumer_generation': None}, version='1.28', expect=204)
    shown = osc('1.14', ['resource', 'provider', 'show', rp1,
                         '--allocations'])
    assert shown['uuid'] == rp1
    allocs = {c: a['resources'] for c, a in shown['allocations'].items()}
    assert allocs == {c1: {'VCPU': 1, 'MEMORY_MB': 128},
                      c2: {'VCPU': 3, 'MEMORY_MB': 128}}
    usage = osc('1.0', ['resource', 'provider', 'usage', 'show', rp1])
    assert {r['resource_class']: r['usage'] for r in usage} == {
        'VCPU': 4, 'MEMORY_MB': 256, 'DISK_GB': 0}
    listed = by(osc('1.0', ['resource', 'provider', 'inventory', 'list',
                            rp1]), 'resource_class')
    assert listed['VCPU']['used'] == 4
    assert osc('1.0', ['resource', 'provider', 'inventory', 'show', rp1,
                       'MEMORY_MB'])['used'] == 256
    usage = osc('1.9', ['resource', 'usage', 'show', project,
                        '--user-id', USER])
    assert {r['resource_class']: r['usage'] for r in usage} == {
        'VCPU': 4, 'MEMORY_MB': 256}
    assert osc('1.9', ['resource', 'usage', 'show', uuid.uuid4().hex]) == []
    osc.fails('1.0', ['resource', 'provider', 'usage', 'show', new_uuid()],
              status=404)
    for c in (c1, c2):
        api.delete('/allocations/%s' % c)


# Allocation candidates -------------------------------------------------------

@pytest.fixture(scope='module')
def ac_world(api, tag):
    """Two flat hosts and one nested host, isolated by a custom class."""
    rc = 'CUSTOM_OSC_%s_AC' % tag
    fast, slow = 'CUSTOM_OSC_%s_FAST' % tag, 'CUSTOM_OSC_%s_SLOW' % tag
    ag1, ag2 = new_uuid(), new_uuid()
    api.ensure_resource_class(rc)
    w = {'rc': rc, 'fast': fast, 'slow': slow, 'ag1': ag1, 'ag2': ag2}
    a = api.create_provider('osc-%s-ac-a' % tag)['uuid']
    api.set_inventories(a, {rc: {'total': 8}, 'MEMORY_MB': {'total': 2048}})
    api.set_traits(a, [fast])
    api.set_aggregates(a, [ag1])
    b = api.create_provider('osc-%s-ac-b' % tag)['uuid']
    api.set_inventories(b, {rc: {'total': 4, 'reserved': 1}})
    api.set_traits(b, [slow])
    api.set_aggregates(b, [ag2])
    n = api.create_provider('osc-%s-ac-n' % tag)['uuid']
    api.set_inventories(n, {'MEMORY_MB': {'total': 4096}})
    api.set_traits(n, ['CUSTOM_OSC_%s_NESTED' % tag])
    n0 = api.create_provider('osc-%s-ac-n-0' % tag, parent=n)['uuid']
    n1 = api.create_provider('osc-%s-ac-n-1' % tag, parent=n)['uuid']
    for child, trait in ((n0, fast), (n1, slow)):
        api.set_inventories(child, {rc: {'total': 4}})
        api.set_traits(child, [trait])
    w.update(a=a, b=b, n=n, n0=n0, n1=n1)
    return w


def candidates(rows):
    """{candidate number: {rp: allocation text}}"""
    out = {}
    for row in rows:
        out.setdefault(row['#'], {})[row['resource provider']] = \
            row['allocation']
    return out


def test_allocation_candidates_at_1_10(osc, ac_world):
    w = ac_world
    rows = osc('1.10', ['allocation', 'candidate', 'list', '--resource',
                        '%s=2' % w['rc']])
    assert set(rows[0]) == {'#', 'allocation', 'resource provider',
                            'inventory used/capacity'}
    cands = candidates(rows)
    # before 1.29 a candidate may not use two providers of one tree, but
    # a child alone is a candidate
    assert sorted(list(c) for c in cands.values()) == sorted(
        [[w['a']], [w['b']], [w['n0']], [w['n1']]])
    by_rp = {row['resource provider']: row for row in rows}
    assert by_rp[w['a']]['allocation'] == '%s=2' % w['rc']
    # before 1.27 the summaries only show the requested classes
    assert by_rp[w['a']]['inventory used/capacity'] == '%s=0/8' % w['rc']
    assert by_rp[w['b']]['inventory used/capacity'] == '%s=0/3' % w['rc']
    rows = osc('1.12', ['allocation', 'candidate', 'list', '--resource',
                        '%s=4' % w['rc']])
    assert {row['resource provider'] for row in rows} == {
        w['a'], w['n0'], w['n1']}


def test_allocation_candidates_limit_required_member_of(osc, ac_world):
    w = ac_world
    rows = osc('1.16', ['allocation', 'candidate', 'list', '--resource',
                        '%s=1' % w['rc'], '--limit', '1'])
    assert len(candidates(rows)) == 1
    rows = osc('1.17', ['allocation', 'candidate', 'list', '--resource',
                        '%s=1' % w['rc'], '--required', w['fast']])
    assert {row['resource provider'] for row in rows} == {w['a'], w['n0']}
    assert {row['traits'] for row in rows} == {w['fast']}
    rows = osc('1.21', ['allocation', 'candidate', 'list', '--resource',
                        '%s=1' % w['rc'], '--member-of', w['ag2']])
    assert {row['resource provider'] for row in rows} == {w['b']}
    rows = osc('1.21', ['allocation', 'candidate', 'list', '--resource',
                        '%s=1' % w['rc'], '--member-of',
                        '%s,%s' % (w['ag1'], w['ag2'])])
    assert {row['resource provider'] for row in rows} == {w['a'], w['b']}
    rows = osc('1.22', ['allocation', 'candidate', 'list', '--resource',
                        '%s=1' % w['rc'], '--forbidden', w['fast']])
    assert {row['resource provider'] for row in rows} == {w['b'], w['n1']}
    rows = osc('1.24', ['allocation', 'candidate', 'list', '--resource',
                        '%s=1' % w['rc'], '--member-of', w['ag1'],
                        '--member-of', w['ag2']])
    assert rows == []
    osc.fails('1.17', ['allocation', 'candidate', 'list', '--resource',
                       '%s=1' % w['rc'], '--required',
                       'CUSTOM_OSC_NO_SUCH_TRAIT'], status=400,
              message='No such trait')
    osc.fails('1.10', ['allocation', 'candidate', 'list', '--resource',
                       'CUSTOM_OSC_NO_SUCH_CLASS=1'], status=400)


def test_allocation_candidates_granular_groups(osc, ac_world):
    w = ac_world
    # 1.25: numbered groups on flat providers
    rows = osc('1.25', ['allocation', 'candidate', 'list',
                        '--group', '1', '--resource', '%s=1' % w['rc'],
                        '--group', '2', '--resource', '%s=1' % w['rc']])
    cands = candidates(rows)
    # both groups on one provider; never two providers of one tree <1.29
    assert sorted(list(c) for c in cands.values()) == sorted(
        [[w['a']], [w['b']], [w['n0']], [w['n1']]])
    assert {row['allocation'] for row in rows} == {'%s=2' % w['rc']}
    rows = osc('1.25', ['allocation', 'candidate', 'list',
                        '--group', '1', '--resource', '%s=1' % w['rc'],
                        '--group', '2', '--resource', '%s=1' % w['rc'],
                        '--group-policy', 'isolate'])
    assert rows == []
    # 1.29: groups spread over a tree
    rows = osc('1.29', ['allocation', 'candidate', 'list',
                        '--group', '1', '--resource', '%s=1' % w['rc'],
                        '--group', '2', '--resource', '%s=1' % w['rc'],
                        '--group-policy', 'isolate'])
    cands = candidates(rows)
    assert sorted(sorted(c) for c in cands.values()) == [
        sorted([w['n0'], w['n1']])] * 2
    rows = osc('1.29', ['allocation', 'candidate', 'list',
                        '--group', '1', '--resource', '%s=1' % w['rc'],
                        '--group', '2', '--resource', '%s=1' % w['rc'],
                        '--group-policy', 'none'])
    cands = candidates(rows)
    assert len(cands) == 6  # a, b, and 4 combinations of n0/n1
    # since 1.27 the summaries show every class of the provider
    by_rp = {row['resource provider']: row for row in rows}
    assert set(by_rp[w['a']]['inventory used/capacity'].split(',')) == {
        '%s=0/8' % w['rc'], 'MEMORY_MB=0/2048'}  # JSON objects: any order
    rows = osc('1.29', ['allocation', 'candidate', 'list',
                        '--resource', 'MEMORY_MB=1024',
                        '--group', '1', '--resource', '%s=2' % w['rc'],
                        '--required', w['fast'],
                        '--group', '2', '--resource', '%s=2' % w['rc'],
                        '--forbidden', w['fast'],
                        '--group-policy', 'isolate'])
    cands = candidates(rows)
    assert list(cands.values()) == [{
        w['n']: 'MEMORY_MB=1024', w['n0']: '%s=2' % w['rc'],
        w['n1']: '%s=2' % w['rc']}]
    by_rp = {row['resource provider']: row for row in rows}
    assert by_rp[w['n0']]['traits'] == w['fast']
    assert by_rp[w['n']]['inventory used/capacity'] == 'MEMORY_MB=0/4096'


def test_allocation_candidates_any_traits_at_1_39(osc, ac_world):
    w = ac_world
    rows = osc('1.39', ['allocation', 'candidate', 'list', '--resource',
                        '%s=3' % w['rc'], '--required',
                        '%s,%s' % (w['fast'], w['slow'])])
    got = candidates(rows)
    assert sorted(c for cand in got.values() for c in cand) == sorted(
        [w['a'], w['b'], w['n0'], w['n1']])
    rows = osc('1.39', ['allocation', 'candidate', 'list',
                        '--group', '1', '--resource', '%s=1' % w['rc'],
                        '--required', '%s,%s' % (w['fast'], w['slow']),
                        '--forbidden', w['fast'],
                        '--group-policy', 'none'])
    assert {row['resource provider'] for row in rows} == {w['b'], w['n1']}
