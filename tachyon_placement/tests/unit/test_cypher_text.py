"""The bounds a Cypher scorer's text must keep before an engine sees it
(weighing/cypher_text.py)."""
import pytest

from tachyon_placement.weighing import cypher_text

ACCEPTED = [
    # The README's example.
    "MATCH (rp:ResourceProvider)-[inv:PROVIDES]->(:ResourceClass "
    "{name: 'VCPU'}) RETURN rp.uuid AS uuid, "
    "inv.total - coalesce(inv.used, 0) AS score",
    "CALL { MATCH (n:ResourceProvider) RETURN n.uuid AS uuid, 1 AS score }"
    " RETURN uuid, score",
    # Words that are clauses elsewhere, as map keys, properties, labels.
    "MATCH (n:ResourceProvider {user: 1}) RETURN n.index AS uuid, "
    "CASE WHEN n.set THEN 2 ELSE 1 END AS score",
    # Inside strings and comments.
    "RETURN 'CREATE (n)' AS uuid, 1 AS score // DELETE everything",
    'RETURN "a\\"b /* x */" AS uuid, 1 AS score /* SET */',
    "MATCH (n) WHERE any(label IN labels(n) WHERE label = 'X') "
    "RETURN n.uuid AS uuid, 1 AS score",
    "RETURN date.truncate('day', date()) AS uuid, 1 AS score",
    'RETURN ' + '(' * 10 + '1' + ')' * 10 + ' AS uuid, 1 AS score',
]

REFUSED = [
    ("TERMINATE TRANSACTIONS 'neo4j-transaction-1'", 'TERMINATE'),
    ("SHOW TRANSACTIONS YIELD transactionId AS uuid", 'SHOW'),
    ("CREATE INDEX FOR (n:N) ON (n.x)", 'CREATE'),
    ("MATCH (n) SET n.x = 1 RETURN n.uuid AS uuid, 1 AS score", 'SET'),
    ("MATCH (n) DETACH DELETE n", 'DETACH'),
    ("LOAD CSV FROM 'file:///etc/passwd' AS l RETURN l", 'LOAD'),
    ("CALL db.labels() YIELD label RETURN label AS uuid, 1 AS score",
     'procedures'),
    ("RETURN apoc.text.repeat('x', 1000000000) AS uuid, 1 AS score",
     'user-defined'),
    ("UNWIND range(1, 100000000000) AS i WITH i WHERE i < 0 "
     "RETURN toString(i) AS uuid, i AS score", 'range'),
    ("RETURN reduce(s = [1], x IN [1, 2] | s + s) AS uuid", 'reduce'),
    ("RETURN size([x IN [1, 2] | toString(x)]) AS score", 'comprehension'),
    ('RETURN ' + '[' * 2000 + '1' + ']' * 2000 + ' AS uuid, 1 AS score',
     'deep'),
    ('RETURN ' + 'CASE WHEN true THEN ' * 11 + '1' + ' END' * 11
     + ' AS score', 'deep'),
    ("RETURN 'x AS uuid", 'unterminated'),
    ("RETURN 1 /* AS uuid", 'unterminated'),
    ("RETURN (1 AS uuid", 'match'),
    ("RETURN 1) AS uuid", 'match'),
    ('RETURN 1 AS uuid, 1 AS score ' + ' ' * 8192, 'longer'),
]


@pytest.mark.parametrize('text', ACCEPTED)
def test_reading_queries_pass(text):
    cypher_text.check(text)


@pytest.mark.parametrize('text,reason', REFUSED)
def test_other_text_is_refused_with_the_reason(text, reason):
    with pytest.raises(cypher_text.Refused) as refused:
        cypher_text.check(text)
    assert reason in str(refused.value)
