"""A long list's document is sent in chunks, never whole (api/wsgi.py
JoinedItems)."""
import json

import pytest

from tachyon_placement.api import wsgi

HEAD = b'{"resource_providers":['
TAIL = b']}'


def items(count, size=700):
    return [json.dumps({'n': n, 'pad': 'x' * size}).encode()
            for n in range(count)]


@pytest.mark.parametrize('count', [0, 1, 2, 500, 5000])
def test_the_chunks_make_the_document_its_length_says(count):
    pieces = items(count)
    document = wsgi.JoinedItems(HEAD, pieces, TAIL)
    sent = b''.join(document)
    assert sent == HEAD + b','.join(pieces) + TAIL
    assert document.length == len(sent)
    assert json.loads(sent)['resource_providers'] == [
        json.loads(piece) for piece in pieces]


def test_a_short_document_is_one_chunk():
    assert len(list(wsgi.JoinedItems(HEAD, items(3), TAIL))) == 1
    assert list(wsgi.JoinedItems(HEAD, [], TAIL)) == [HEAD + TAIL]


def test_a_long_document_is_never_whole():
    pieces = items(20000)        # about 14 MB
    chunks = list(wsgi.JoinedItems(HEAD, pieces, TAIL))
    assert len(chunks) > 10
    # Items of about one length: chunks of about _CHUNK_BYTES.
    assert max(map(len, chunks)) <= wsgi._CHUNK_BYTES + 2 * len(pieces[-1])
    # ... and no write of a few bytes (the head and tail come with one).
    assert min(map(len, chunks[:-1])) > wsgi._CHUNK_BYTES // 2


def test_a_document_is_sent_again_the_same():
    # A server may iterate an app_iter only once, but a test client can
    # read a response body twice.
    document = wsgi.JoinedItems(HEAD, items(3000), TAIL)
    assert b''.join(document) == b''.join(document)
