"""The export inserts every table after those its foreign keys name,
whatever order the graph's rows come in: a consumer without a type, then
one with, put the consumers before their type, and MariaDB refused the
export (the Neo4j suite's row order, once)."""
from tachyon_placement.backup import placement_export


class _Connection:
    def __init__(self):
        self.tables = []

    def execute(self, statement, rows=None):
        self.tables.append(str(statement).split()[2])


def test_a_consumers_type_is_inserted_before_it():
    connection = _Connection()
    tables = placement_export._Tables(connection)
    writer = placement_export._Writer.__new__(placement_export._Writer)
    writer.tables = tables
    writer.project_ids, writer.user_ids, writer.type_ids = {}, {}, {}
    for uuid, kind in (('a', None), ('b', 'INSTANCE')):
        writer.consumers({'uuid': uuid, 'project_id': 'p', 'user_id': 'u',
                          'consumer_type': kind, 'generation': 1,
                          'created_at': None, 'updated_at': None})
    tables.flush()
    assert connection.tables == ['projects', 'users', 'consumer_types',
                                 'consumers'], connection.tables
