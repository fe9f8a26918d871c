"""Text the service can hold: the checks every request's input passes.

Graph engines hold Unicode text without NUL (FalkorDB's parser ends a
string at a NUL byte; Neo4j would store it, and then the two engines would
disagree), so a NUL, a lone surrogate (not encodable in UTF-8) or bytes
that are not UTF-8 never get past the API:

* in the path: no resource can have such a name, 404 like an unknown URL;
* in the query string: 400 ``Invalid query string parameters``;
* in a JSON body: 400 ``Malformed JSON``, as for nesting deeper than any
  Placement document (json and jsonschema recurse per level: a body of a
  thousand nested lists used to end in RecursionError).
"""
import json
import re
import urllib.parse

from tachyon_placement.api import errors

# Deepest Placement document (POST /allocations, /reshaper) nests 6 levels.
MAX_JSON_DEPTH = 32

_UNHOLDABLE = re.compile('[\x00\ud800-\udfff]')


def _problem(text):
    """Why ``text`` cannot be held, or None."""
    found = _UNHOLDABLE.search(text)
    if found is None:
        return None
    if found.group() == '\x00':
        return 'a NUL character'
    return 'a lone surrogate (\\u%04x)' % ord(found.group())


def _decoded(raw):
    """WSGI strings carry bytes as latin-1: the UTF-8 text, or None."""
    try:
        return raw.encode('latin-1').decode('utf-8')
    except UnicodeError:
        return None


def check_path(environ):
    path = _decoded(environ.get('PATH_INFO', ''))
    if path is None or _problem(path):
        raise errors.NotFound(None)


def check_query(environ):
    query = environ.get('QUERY_STRING', '')
    if not query:
        return
    try:
        text = urllib.parse.unquote_to_bytes(
            query.replace('+', ' ')).decode('utf-8')
    except UnicodeError:
        raise errors.BadRequest('Invalid query string parameters: the query '
                                'string is not UTF-8 text')
    problem = _problem(text)
    if problem:
        raise errors.BadRequest('Invalid query string parameters: the query '
                                'string contains %s' % problem)


def load_json(body):
    """The document in ``body``, or Placement's 400 Malformed JSON."""
    try:
        data = json.loads(body)
    except RecursionError:
        raise errors.BadRequest('Malformed JSON: nested too deeply')
    except ValueError as exc:
        raise errors.BadRequest('Malformed JSON: %(error)s' % {'error': exc})
    problem = _check_document(data)
    if problem:
        raise errors.BadRequest('Malformed JSON: %s' % problem)
    return data


def _check_document(data):
    """What makes a parsed document unholdable, or None (iterative, so
    depth is checked before anything recursive sees it)."""
    pending = [(data, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, str):
            problem = _problem(value)
            if problem:
                return 'a string contains %s' % problem
        elif isinstance(value, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                return 'nested deeper than %d levels' % MAX_JSON_DEPTH
            if isinstance(value, dict):
                pending.extend((key, depth) for key in value)
                pending.extend((item, depth + 1) for item in value.values())
            else:
                pending.extend((item, depth + 1) for item in value)
    return None
