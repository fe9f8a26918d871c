"""What a metric's definition must be before it is stored: a PromQL
query that parses and gives an instant vector (promql-parser: the Rust
parser of the promql-parser crate, the grammar of Prometheus 2.x/3.x),
and a label rewrite that RE2 runs (Prometheus' own regular expressions:
linear in the text, so no pattern can stall the collector) whose
replacement names only groups the pattern has."""
import functools
import re

import promql_parser
import re2

# A query is a text of at most 4096 characters (the schema); its nesting
# is bounded before it is parsed (the parser and the typing below recurse
# once per level: 2,000 parentheses were a 500).
MAX_NESTING = 32

_GROUP_REFERENCE = re.compile(r'\\(?:(\d+)|g<([^>]*)>)')
# Prometheus' (Go's regexp Expand): ${name}, $name (the longest run of
# letters, digits and "_": "$1x" is the group "1x"), and $$ for "$"; a "$"
# followed by nothing of these is itself.
_DOLLAR_REFERENCE = re.compile(
    r'\$(?:\{([A-Za-z0-9_]+)\}|([A-Za-z0-9_]+)|(\$))')


class Invalid(ValueError):
    """The definition cannot be stored: the message says why."""


def _value_type(expression):
    """PromQL's type of ``expression``: vector, matrix, scalar, string."""
    if isinstance(expression, (promql_parser.VectorSelector,
                               promql_parser.AggregateExpr)):
        return 'vector'
    if isinstance(expression, (promql_parser.MatrixSelector,
                               promql_parser.SubqueryExpr)):
        return 'matrix'
    if isinstance(expression, promql_parser.NumberLiteral):
        return 'scalar'
    if isinstance(expression, promql_parser.StringLiteral):
        return 'string'
    if isinstance(expression, (promql_parser.ParenExpr,
                               promql_parser.UnaryExpr)):
        return _value_type(expression.expr)
    if isinstance(expression, promql_parser.Call):
        return str(expression.func.return_type).rpartition('.')[2].lower()
    if isinstance(expression, promql_parser.BinaryExpr):
        sides = {_value_type(expression.lhs), _value_type(expression.rhs)}
        return 'vector' if 'vector' in sides else 'scalar'
    return 'unknown'


def _nesting(query):
    """The deepest nesting of brackets in ``query``, outside strings."""
    depth = deepest = 0
    quote = None
    escaped = False
    for char in query:
        if quote:
            if escaped:
                escaped = False
            elif char == '\\' and quote != '`':
                escaped = True
            elif char == quote:
                quote = None
        elif char in '\'"`':
            quote = char
        elif char in '([{':
            depth += 1
            deepest = max(deepest, depth)
        elif char in ')]}':
            depth -= 1
    return deepest


def check_query(query):
    """Invalid unless ``query`` parses and gives an instant vector."""
    if _nesting(query) > MAX_NESTING:
        raise Invalid('query: it nests brackets more than %d deep'
                      % MAX_NESTING)
    try:
        expression = promql_parser.parse(query)
    except (ValueError, RuntimeError, RecursionError) as exc:
        raise Invalid('query: it does not parse: %s' % exc)
    kind = _value_type(expression)
    if kind != 'vector':
        raise Invalid('query: it gives a %s, not an instant vector (one '
                      'value per series; put a range inside a function, '
                      'e.g. avg_over_time(x[5m]))' % kind)


@functools.lru_cache(maxsize=256)
def compiled(pattern):
    """The RE2 form of a rewrite pattern (Invalid when RE2 refuses it)."""
    try:
        return re2.compile(pattern)
    except re2.error as exc:
        raise Invalid('rewrite: bad pattern: %s' % exc)


def python_replacement(replacement):
    """``replacement`` in Prometheus' syntax (``$1``, ``${1}``, ``$name``,
    ``${name}``, ``$$``) as the template RE2's sub takes (``\\g<1>``...);
    Python's own ``\\1`` and ``\\g<name>`` are kept as they are (stored
    definitions use them)."""
    def expanded(match):
        name = match.group(1) or match.group(2)
        return '$' if name is None else '\\g<%s>' % name
    return _DOLLAR_REFERENCE.sub(expanded, replacement or '')


def check_rewrite(pattern, replacement):
    """Invalid unless RE2 compiles ``pattern`` and ``replacement`` names
    only groups it has, in Prometheus' syntax or Python's (a missing one
    used to stop the collector; ``h$1`` was stored and matched nothing)."""
    regex = compiled(pattern)
    for number, name in _GROUP_REFERENCE.findall(
            python_replacement(replacement)):
        if number and int(number) > regex.groups:
            raise Invalid('rewrite: the replacement refers to group %s, '
                          'the pattern has %d' % (number, regex.groups))
        if name and not (name.isdigit() and int(name) <= regex.groups
                         or name in regex.groupindex):
            raise Invalid('rewrite: the replacement refers to group %r, '
                          'which the pattern does not have' % name)
