"""The backup file: what the writer writes, the reader accepts whole and
nothing else."""
import gzip
import json
import os

import pytest

from tachyon_placement.backup import archive

LABELS = ('ResourceProvider', 'Consumer')
KINDS = ('CONSUMES',)


def _uuid(index):
    return '00000000-0000-4000-8000-%012d' % index


def _properties(index):
    if index % 2:
        return {'uuid': _uuid(index), 'name': 'h%d' % index,
                'generation': 1, 'load': 1.5}
    return {'uuid': _uuid(index), 'generation': 0, 'project_id': 'p',
            'user_id': 'u', 'load': 1.5}


def _write(path, nodes=3):
    writer = archive.Writer(str(path))
    writer.header(1, 42, 'falkordb', 'test')
    for index in range(nodes):
        writer.node(str(index), ['ResourceProvider' if index % 2
                                 else 'Consumer'], _properties(index))
    writer.relationship('0', 'CONSUMES', '1',
                        {'resource_class': 'VCPU', 'used': 2})
    writer.finish()
    return str(path)


def _lines(path):
    with open(path) as source:
        return source.readlines()


def _rewrite(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text(''.join(lines))
    return str(path)


def test_what_is_written_reads_back(tmp_path):
    path = _write(tmp_path / 'b.jsonl')
    assert not os.path.exists(path + '.partial')
    header = archive.check(path, LABELS, KINDS)
    assert (header['schema_version'], header['graph_version'],
            header['nodes'], header['relationships']) == (1, 42, 3, 1)
    assert list(archive.records(path)) == [
        ('node', '0', 'Consumer', _properties(0)),
        ('node', '1', 'ResourceProvider', _properties(1)),
        ('node', '2', 'Consumer', _properties(2)),
        ('relationship', '0', 'CONSUMES', '1',
         {'resource_class': 'VCPU', 'used': 2})]


def test_a_gz_name_is_compressed(tmp_path):
    path = _write(tmp_path / 'b.jsonl.gz')
    with gzip.open(path, 'rt') as source:
        assert json.loads(source.readline())['format'] == archive.FORMAT
    assert archive.check(path, LABELS, KINDS)['nodes'] == 3


@pytest.mark.parametrize('name', ['b.jsonl', 'b.jsonl.gz'])
def test_a_backup_is_readable_by_its_owner_only(tmp_path, name):
    """A backup is the whole placement database: 0600 under any umask
    (under 022 it was 0644), a partial one left before included."""
    (tmp_path / (name + '.partial')).write_text('old')
    os.chmod(tmp_path / (name + '.partial'), 0o644)
    umask = os.umask(0)
    try:
        path = _write(tmp_path / name)
    finally:
        os.umask(umask)
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o600)
    assert archive.check(path, LABELS, KINDS)['nodes'] == 3


def test_an_abandoned_backup_leaves_no_file(tmp_path):
    writer = archive.Writer(str(tmp_path / 'b.jsonl'))
    writer.header(1, 1, 'neo4j', 'test')
    writer.abandon()
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize('case, change', [
    ('cut short', lambda lines: lines[:-1]),
    ('empty', lambda lines: []),
    ('counts', lambda lines: lines[:-1] + [
        '{"end": {"nodes": 4, "relationships": 1}}\n']),
    ('after the end', lambda lines: lines + lines[1:2]),
    ('a node twice', lambda lines: lines[:2] + lines[1:]),
    ('a node after relationships', lambda lines: lines[:3] + lines[4:5]
     + lines[3:4] + lines[5:]),
    ('an unknown end', lambda lines: lines[:4] + [lines[4].replace(
        '"end":"1"', '"end":"9"')] + lines[5:]),
    ('an unknown type', lambda lines: lines[:4] + [lines[4].replace(
        'CONSUMES', 'LIKES')] + lines[5:]),
    ('two labels', lambda lines: lines[:1] + [lines[1].replace(
        '["Consumer"]', '["Consumer","ResourceProvider"]')] + lines[2:]),
    ('properties not an object', lambda lines: lines[:1] + [
        lines[1].split('"properties"')[0] + '"properties":[]}\n']
        + lines[2:]),
    ('another format version', lambda lines: [lines[0].replace(
        '"format_version":1', '"format_version":2')] + lines[1:]),
    ('not JSON', lambda lines: lines[:2] + ['{\n'] + lines[2:]),
])
def test_a_file_that_is_not_whole_is_refused(tmp_path, case, change):
    lines = _lines(_write(tmp_path / 'good.jsonl'))
    changed = change(lines)
    assert changed != lines, case       # the case changes something
    path = _rewrite(tmp_path, 'bad.jsonl', changed)
    with pytest.raises(archive.BadBackup):
        archive.check(path, LABELS, KINDS)


def _changed_record(lines, index, change):
    record = json.loads(lines[index])
    change(record)
    return lines[:index] + [json.dumps(record) + '\n'] + lines[index + 1:]


@pytest.mark.parametrize('case, index, key, value', [
    # The review's: served after a restore, exit 0.
    ('a provider uuid that is none', 2, 'uuid', 'not-a-uuid'),
    ('a generation that is a string', 2, 'generation', 'evil'),
    ('an allocation past the API\'s', 4, 'used', 2 ** 64),
    ('a class name the API refuses', 4, 'resource_class', 'vcpu'),
    ('an integer past 64 bits anywhere', 1, 'load', 2 ** 64),
    ('an object as a value', 1, 'load', {'a': 1}),
    ('a list of lists', 1, 'load', [[1]]),
    ('a provider without its name', 2, 'name', None),
    ('a consumer user that is no string', 1, 'user_id', 7),
])
def test_values_the_api_would_refuse_are_refused(tmp_path, case, index,
                                                 key, value):
    lines = _lines(_write(tmp_path / 'good.jsonl'))

    def change(record):
        if value is None:
            del record['properties'][key]
        else:
            record['properties'][key] = value
    path = _rewrite(tmp_path, 'bad.jsonl', _changed_record(lines, index,
                                                           change))
    with pytest.raises(archive.BadBackup) as refused:
        archive.check(path, LABELS, KINDS)
    assert 'line %d' % (index + 1) in str(refused.value), case


@pytest.mark.parametrize('key, value', [
    ('schema_version', '1'), ('schema_version', None),
    ('graph_version', -1), ('graph_version', [1]), ('taken_at', 5)])
def test_a_header_of_other_types_is_refused_not_a_traceback(tmp_path, key,
                                                            value):
    lines = _lines(_write(tmp_path / 'good.jsonl'))

    def change(record):
        record[key] = value
    header = json.loads(lines[0])
    change(header)
    path = _rewrite(tmp_path, 'bad.jsonl',
                    [json.dumps(header) + '\n'] + lines[1:])
    with pytest.raises(archive.BadBackup, match='header'):
        archive.check(path, LABELS, KINDS)


def test_a_line_past_the_bound_is_refused_before_it_is_read_whole(
        tmp_path, monkeypatch):
    monkeypatch.setattr(archive, 'MAX_LINE', 1000)
    lines = _lines(_write(tmp_path / 'good.jsonl'))
    long_line = '{"node": "9", "labels": ["Trait"], "properties": {"name":' \
        ' "%s"}}\n' % ('A' * 5000)
    path = tmp_path / 'bad.jsonl.gz'
    with gzip.open(path, 'wt') as out:
        out.write(''.join(lines[:1] + [long_line] + lines[1:]))
    with pytest.raises(archive.BadBackup, match='longer than 1000'):
        archive.check(str(path), LABELS, KINDS)


def test_inventories_are_held_to_the_api_rules():
    from tachyon_placement.backup import values
    good = {'total': 8, 'reserved': 0, 'min_unit': 1, 'max_unit': 8,
            'step_size': 1, 'allocation_ratio': 16.0}
    assert values.problem('PROVIDES', good) is None
    for key, value in (('total', 2 ** 63 - 1), ('total', 0),
                       ('reserved', -1), ('allocation_ratio', 0),
                       ('step_size', 1.5), ('max_unit', '8')):
        assert values.problem('PROVIDES', dict(good, **{key: value})), (
            key, value)
