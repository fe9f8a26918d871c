"""The backup file: what the writer writes, the reader accepts whole and
nothing else."""
import gzip
import json
import os

import pytest

from tachyon_placement.backup import archive

LABELS = ('ResourceProvider', 'Consumer')
KINDS = ('CONSUMES',)


def _write(path, nodes=3):
    writer = archive.Writer(str(path))
    writer.header(1, 42, 'falkordb', 'test')
    for index in range(nodes):
        writer.node(str(index), ['ResourceProvider' if index % 2
                                 else 'Consumer'], {'uuid': 'u%d' % index,
                                                    'used': 1.5})
    writer.relationship('0', 'CONSUMES', '1', {'used': 2})
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
        ('node', '0', 'Consumer', {'uuid': 'u0', 'used': 1.5}),
        ('node', '1', 'ResourceProvider', {'uuid': 'u1', 'used': 1.5}),
        ('node', '2', 'Consumer', {'uuid': 'u2', 'used': 1.5}),
        ('relationship', '0', 'CONSUMES', '1', {'used': 2})]


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
    ('properties not an object', lambda lines: lines[:1] + [lines[1].replace(
        '"properties":{"uuid":"u0","used":1.5}', '"properties":[]')]
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
