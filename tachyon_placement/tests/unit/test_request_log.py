"""The access log line (api/app.py RequestLog): one line per request,
whatever the request holds."""
import logging

import webob

from tachyon_placement.api import app


def _logged(caplog, path, method='GET', **environ):
    def answer(environ, start_response):
        start_response('204 No Content', [])
        return [b'']
    request = webob.Request.blank('/')
    request.environ.update(environ, PATH_INFO=path, REQUEST_METHOD=method)
    with caplog.at_level(logging.INFO, logger='tachyon_placement.api.app'):
        caplog.clear()
        request.get_response(app.RequestLog(answer))
    lines = [record.getMessage() for record in caplog.records
             if record.name == 'tachyon_placement.api.app']
    assert len(lines) == 1, lines
    return lines[0]


def test_a_newline_in_the_target_cannot_forge_a_line(caplog):
    # What a server hands over for GET /x%0aINFO%20FORGED3: PATH_INFO is
    # unquoted.
    line = _logged(caplog, '/x\nINFO FORGED3\r\x1b[2J', QUERY_STRING='a=\n')
    assert '\n' not in line and '\r' not in line and '\x1b' not in line
    assert '"GET /x\\x0aINFO FORGED3\\x0d\\x1b[2J?a=\\x0a"' in line


def test_quotes_and_backslashes_stay_inside_the_request_line(caplog):
    line = _logged(caplog, '/a" status: 200 \\', method='G\tT')
    assert '"G\\x09T /a\\" status: 200 \\\\" status: 204' in line


def test_an_ordinary_request_is_logged_as_placement_does(caplog):
    line = _logged(caplog, '/resource_providers', QUERY_STRING='name=cn1',
                   REMOTE_ADDR='192.0.2.7')
    assert line.startswith('192.0.2.7 "GET /resource_providers?name=cn1" '
                           'status: 204 len: ')


def test_printable_keeps_text_that_needs_no_escape():
    text = 'cn1 é /resource_providers?member_of=in:a,b'
    assert app.printable(text) == text
    assert app.printable('\u2028\x7f\x85') == '\\u2028\\x7f\\x85'
