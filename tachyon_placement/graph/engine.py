"""The engine interface every graph backend implements.

Engines run registered ``Statement`` objects and return rows as plain
dicts.  ``write`` runs one statement as one atomic unit; ``transaction``
runs several statements as one atomic unit where the engine supports
multi-statement transactions (Neo4j) and serialises them under a lock where
it does not.
"""


class GraphError(Exception):
    """The engine failed (connection, constraint, syntax)."""


class ConstraintViolation(GraphError):
    """A uniqueness constraint refused a write."""


class Engine:
    dialect = None

    def read(self, statement, **params):
        raise NotImplementedError

    def write(self, statement, **params):
        raise NotImplementedError

    def ensure_schema(self):
        raise NotImplementedError

    def close(self):
        pass

    def reset(self):
        """Delete everything (tests only)."""
        raise NotImplementedError
