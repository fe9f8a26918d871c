"""Neo4j 5 engine through the official driver.

Each write statement runs in its own managed transaction (retried by the
driver on transient errors such as deadlocks).  Statements that update
several providers or consumers take their write locks first, in uuid order,
before reading generations: Neo4j reads at read-committed isolation.
"""
import neo4j
import neo4j.exceptions

from tachyon_placement.graph import engine
from tachyon_placement.graph import schema


def _plain(value):
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


class _GuardFailed(Exception):
    """Raised inside a managed transaction to roll it back."""


class Neo4jEngine(engine.Engine):
    dialect = 'neo4j'

    def __init__(self, uri, username=None, password=None, database=None):
        auth = (username, password) if username else None
        self._driver = neo4j.GraphDatabase.driver(uri, auth=auth)
        self._database = database

    def _session(self, access_mode):
        return self._driver.session(database=self._database,
                                    default_access_mode=access_mode)

    @staticmethod
    def _work(text, params, guarded=False):
        def run(tx):
            rows = [{key: _plain(value) for key, value in record.items()}
                    for record in tx.run(text, params)]
            if guarded and not rows:
                # The guard failed: undo the lock-taking writes.
                raise _GuardFailed()
            return rows
        return run

    def _run(self, statement, params, read_only):
        text = statement.text(self.dialect)
        mode = neo4j.READ_ACCESS if read_only else neo4j.WRITE_ACCESS
        try:
            with self._session(mode) as session:
                if read_only:
                    return session.execute_read(self._work(text, params))
                return session.execute_write(
                    self._work(text, params, statement.guarded))
        except _GuardFailed:
            return []
        except neo4j.exceptions.ConstraintError as exc:
            raise engine.ConstraintViolation(str(exc)) from exc
        except neo4j.exceptions.Neo4jError as exc:
            raise engine.GraphError('%s: %s' % (statement.name, exc)) from exc

    def read(self, statement, **params):
        return self._run(statement, params, read_only=True)

    def write(self, statement, **params):
        return self._run(statement, params, read_only=False)

    def ensure_schema(self):
        for statement in schema.DROP_OBSOLETE + schema.SCHEMA:
            self.write(statement)
        self.write(schema.BACKFILL_NAME_KEYS,
                   open=schema.NAME_KEY_OPEN, close=schema.NAME_KEY_CLOSE)

    def reset(self):
        self.write(schema.DELETE_ALL)

    def close(self):
        self._driver.close()
