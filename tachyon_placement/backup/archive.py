"""The backup file: the graph as JSON lines, the same for every engine.

    {"format": "tachyon-graph-backup", "format_version": 1,
     "schema_version": 1, "graph_version": 4242, "engine": "falkordb",
     "taken_at": "2026-11-29T05:30:00Z", "tachyon": "..."}
    {"node": "17", "labels": ["ResourceProvider"], "properties": {...}}
    ... every node, then every relationship:
    {"relationship": "CONSUMES", "start": "17", "end": "18",
     "properties": {...}}
    {"end": {"nodes": 1234, "relationships": 5678}}

Ids are the source engine's, only meaningful within the file.  A name
ending in ``.gz`` is gzip-compressed.  The writer writes ``FILE.partial``
and renames it once whole; the reader checks a file whole (every line,
labels and types it knows, ends of relationships, the closing counts)
before anything is written from it.
"""
import datetime
import gzip
import json
import os

from tachyon_placement.backup import values

FORMAT = 'tachyon-graph-backup'
FORMAT_VERSION = 1
# The longest line read (a record is a node or a relationship with its
# properties: a few hundred characters; values.MAX_STRING bounds one).
MAX_LINE = 4 * 2 ** 20


class BadBackup(Exception):
    """The file is not a whole backup this release can restore."""


def _open(path, mode, compressed=None):
    if path.endswith('.gz') if compressed is None else compressed:
        return gzip.open(path, mode + 't', encoding='utf-8')
    return open(path, mode, encoding='utf-8')


def _private(path, compressed):
    """A new file at ``path`` for text, readable by this user only (0600
    whatever the umask: a backup is the whole placement database)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                         0o600)
    try:
        os.fchmod(descriptor, 0o600)
    finally:
        os.close(descriptor)
    # Opened again by name: truncating keeps the mode.
    return _open(path, 'w', compressed)


class Writer:
    """Writes a backup to ``path`` (through ``path.partial``)."""

    def __init__(self, path):
        self.path = path
        self._partial = path + '.partial'
        self._file = _private(self._partial, path.endswith('.gz'))
        self.nodes = self.relationships = 0

    def _line(self, record):
        self._file.write(json.dumps(record, separators=(',', ':'),
                                    allow_nan=False))
        self._file.write('\n')

    def header(self, schema_version, graph_version, engine, tachyon):
        self._line({
            'format': FORMAT, 'format_version': FORMAT_VERSION,
            'schema_version': schema_version, 'graph_version': graph_version,
            'engine': engine, 'tachyon': tachyon,
            'taken_at': datetime.datetime.now(datetime.timezone.utc)
            .strftime('%Y-%m-%dT%H:%M:%SZ')})

    def node(self, node_id, labels, properties):
        self._line({'node': node_id, 'labels': sorted(labels),
                    'properties': properties})
        self.nodes += 1

    def relationship(self, start, kind, end, properties):
        self._line({'relationship': kind, 'start': start, 'end': end,
                    'properties': properties})
        self.relationships += 1

    def finish(self):
        """Closes the file whole and gives it its name."""
        self._line({'end': {'nodes': self.nodes,
                            'relationships': self.relationships}})
        self._file.close()
        os.replace(self._partial, self.path)

    def abandon(self):
        self._file.close()
        try:
            os.unlink(self._partial)
        except OSError:
            pass


def _records(path):
    """(line number, record) of every line, each MAX_LINE characters at
    most (read no further: a 0.6 MB .gz of one 600 MB line took 1.3 GB)."""
    try:
        with _open(path, 'r') as lines:
            number = 0
            while True:
                line = lines.readline(MAX_LINE + 1)
                if not line:
                    return
                number += 1
                if len(line) > MAX_LINE:
                    raise BadBackup('%s line %d is longer than %d '
                                    'characters' % (path, number, MAX_LINE))
                try:
                    yield number, json.loads(line)
                except ValueError as exc:
                    raise BadBackup('%s line %d is not JSON: %s'
                                    % (path, number, exc)) from exc
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise BadBackup('%s cannot be read: %s' % (path, exc)) from exc


def _properties(record, number, name):
    properties = record.get('properties')
    if not isinstance(properties, dict):
        raise BadBackup('line %d: properties must be an object' % number)
    why = values.problem(name, properties)
    if why:
        raise BadBackup('line %d: %s %s' % (number, name, why))
    return properties


def check(path, labels, kinds):
    """The header of the backup at ``path`` once the whole file is found
    sound: nodes of ``labels`` only, then relationships of ``kinds`` only
    between nodes it holds, and the closing counts.  Holds the node ids
    (a set) meanwhile."""
    records = _records(path)
    header = next(records, (0, None))[1]
    if not isinstance(header, dict) or header.get('format') != FORMAT:
        raise BadBackup('%s is not a Tachyon graph backup' % path)
    if header.get('format_version') != FORMAT_VERSION:
        raise BadBackup('%s has backup format %s; this release reads %d'
                        % (path, header.get('format_version'),
                           FORMAT_VERSION))
    why = values.header_problem(header)
    if why:
        raise BadBackup('%s: its header is not one this release writes: %s'
                        % (path, why))
    nodes = set()
    relationships = 0
    end = None
    for number, record in records:
        if end is not None:
            raise BadBackup('line %d: a line after the end' % number)
        if not isinstance(record, dict):
            raise BadBackup('line %d: not an object' % number)
        if 'node' in record:
            if relationships:
                raise BadBackup('line %d: a node after relationships'
                                % number)
            found = record.get('labels')
            if not isinstance(found, list) or len(found) != 1 or \
                    found[0] not in labels:
                raise BadBackup('line %d: labels %s are not one this '
                                'release keeps' % (number, found))
            _properties(record, number, found[0])
            if not isinstance(record['node'], (str, int)) or isinstance(
                    record['node'], bool):
                raise BadBackup('line %d: a node id must be a string'
                                % number)
            if record['node'] in nodes:
                raise BadBackup('line %d: node %s twice'
                                % (number, record['node']))
            nodes.add(record['node'])
        elif 'relationship' in record:
            if record['relationship'] not in kinds:
                raise BadBackup('line %d: relationship type %s is not one '
                                'this release writes'
                                % (number, record['relationship']))
            if not all(isinstance(record.get(end), (str, int))
                       for end in ('start', 'end')) or \
                    record.get('start') not in nodes or \
                    record.get('end') not in nodes:
                raise BadBackup('line %d: a relationship to a node the '
                                'backup does not hold' % number)
            _properties(record, number, record['relationship'])
            relationships += 1
        elif 'end' in record:
            end = record['end']
        else:
            raise BadBackup('line %d: neither node, relationship nor end'
                            % number)
    if end is None:
        raise BadBackup('%s ends before its end line: cut short' % path)
    if end != {'nodes': len(nodes), 'relationships': relationships}:
        raise BadBackup('%s says %s but holds %d nodes and %d '
                        'relationships' % (path, end, len(nodes),
                                           relationships))
    header['nodes'] = len(nodes)
    header['relationships'] = relationships
    return header


def records(path):
    """The nodes ('node', id, label, properties) then relationships
    ('relationship', start, type, end, properties) of a checked file."""
    for _number, record in _records(path):
        if 'node' in record:
            yield 'node', record['node'], record['labels'][0], \
                record['properties']
        elif 'relationship' in record:
            yield ('relationship', record['start'], record['relationship'],
                   record['end'], record['properties'])
