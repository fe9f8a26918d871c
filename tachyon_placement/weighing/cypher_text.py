"""What a Cypher scorer's text may be, before any engine sees it.

An engine's parser and planner are not safe with hostile text: FalkorDB's
parser is exponential in the nesting of brackets (20 deep took 2.9 s, 24
deep 60 s, with no timeout), and administration commands (TERMINATE
TRANSACTIONS, SHOW, CREATE INDEX, ...) are not queries a read-only check
can judge the same way on both engines.  So the text is bounded and
scanned here first (pure Python, linear in its length): a scorer is a
query that reads, nothing else.
"""
import re

MAX_LENGTH = 8192
# Bracket and CASE nesting: 10 deep parses in a few milliseconds on
# FalkorDB (each level doubles it past about 8).
MAX_NESTING = 10

# Clauses and commands that do not read: writes (also refused by the
# engines' read-only runs and plans), schema and administration commands,
# transactions, procedure calls, files.
_REFUSED_WORDS = frozenset((
    'CREATE', 'MERGE', 'DELETE', 'DETACH', 'SET', 'REMOVE', 'FOREACH',
    'DROP', 'ALTER', 'RENAME', 'GRANT', 'DENY', 'REVOKE', 'TERMINATE',
    'SHOW', 'START', 'STOP', 'ENABLE', 'DEALLOCATE', 'REALLOCATE', 'USE',
    'LOAD', 'INDEX', 'CONSTRAINT', 'TRANSACTIONS', 'DATABASE', 'DATABASES',
    'USER', 'USERS', 'ROLE', 'ROLES', 'PRIVILEGES', 'SERVER', 'SERVERS',
    'ALIAS', 'FINISH', 'INSERT'))
# Expressions that build a value of any size inside one row, which
# neither engine counts against a query's memory until it is whole: both
# grew without bound on them (FalkorDB's server to 23.8 GB on
# range(1, 1e11); Neo4j's heap ran out on a list comprehension over
# range(1, 1e8), 36 s past its 2 s timeout, and it stopped answering).
# A scorer reads what the graph holds and aggregates it (collect, sum,
# ... are counted by both engines); it does not make lists.
_REFUSED_FUNCTIONS = frozenset(('RANGE', 'REDUCE'))
# Namespaced functions are user-defined (APOC, ...) but for these.
_FUNCTION_NAMESPACES = frozenset((
    'DATE', 'DATETIME', 'LOCALDATETIME', 'LOCALTIME', 'TIME', 'DURATION',
    'POINT', 'VECTOR'))
_OPENING = {'(': ')', '[': ']', '{': '}'}
_CLOSING = {')', ']', '}'}
_WORD = re.compile(r'[A-Za-z_][A-Za-z_0-9]*')


class Refused(ValueError):
    """The text is no scorer: the message says why."""


def _tokens(text):
    """(kind, value) of the text's words and brackets, outside string
    literals, escaped names and comments; Refused for an unterminated
    one."""
    position, length = 0, len(text)
    while position < length:
        char = text[position]
        if char in '\'"`':
            end = position + 1
            while end < length and text[end] != char:
                end += 2 if text[end] == '\\' and char != '`' else 1
            if end >= length:
                raise Refused('it has an unterminated %s'
                              % ('name' if char == '`' else 'string'))
            yield ('name' if char == '`' else 'string'), text[
                position + 1:end]
            position = end + 1
        elif text.startswith('//', position):
            end = text.find('\n', position)
            position = length if end < 0 else end + 1
        elif text.startswith('/*', position):
            end = text.find('*/', position + 2)
            if end < 0:
                raise Refused('it has an unterminated comment')
            position = end + 2
        elif char in _OPENING or char in _CLOSING:
            yield 'bracket', char
            position += 1
        elif char in '.:':
            yield 'punctuation', char
            position += 1
        else:
            match = _WORD.match(text, position)
            if match:
                yield 'word', match.group()
                position = match.end()
            else:
                position += 1


def _calls(tokens, index):
    """Whether the word at ``index`` starts a dotted name that is called
    (ns.fn(...))."""
    index += 1
    while index + 1 < len(tokens) and tokens[index][1] == '.' and (
            tokens[index + 1][0] == 'word'):
        index += 2
    return index < len(tokens) and tokens[index][1] == '('


def check(text):
    """Refused unless ``text`` is within the length and nesting bounds and
    uses only reading clauses (no procedure CALL: a CALL must open a
    subquery)."""
    if len(text) > MAX_LENGTH:
        raise Refused('it is longer than %d characters' % MAX_LENGTH)
    depth = 0
    stack = []
    tokens = list(_tokens(text))
    for index, (kind, value) in enumerate(tokens):
        previous = tokens[index - 1][1].upper() if index else None
        following = tokens[index + 1][1] if index + 1 < len(tokens) else None
        if kind == 'bracket':
            if value in _OPENING:
                stack.append(_OPENING[value])
            elif not stack or stack.pop() != value:
                raise Refused('its brackets do not match')
        elif kind == 'word':
            word = value.upper()
            if word == 'CASE':
                stack.append('END')
            elif word == 'END' and stack and stack[-1] == 'END':
                stack.pop()
            elif (word in _REFUSED_WORDS and previous not in ('.', ':')
                    and following != ':'):
                # (not a property, label, relationship type or map key)
                raise Refused('it may only read (it has %s)' % word)
            if previous == 'CALL':
                raise Refused('it may not call procedures')
            if following == '(' and previous != '.' and (
                    word in _REFUSED_FUNCTIONS):
                raise Refused('it may not build lists (it has %s)' % value)
            if following == '.' and previous != '.' and _calls(tokens, index) \
                    and word not in _FUNCTION_NAMESPACES:
                raise Refused('it may not call user-defined functions '
                              '(it has %s.)' % value)
            if previous == '[' and str(following).upper() == 'IN':
                raise Refused('it may not build lists (it has a list '
                              'comprehension)')
        depth = max(depth, len(stack))
        if depth > MAX_NESTING:
            raise Refused('it nests brackets or CASE more than %d deep'
                          % MAX_NESTING)
    if stack:
        raise Refused('its brackets do not match')
