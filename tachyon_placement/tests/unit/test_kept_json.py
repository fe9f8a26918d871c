"""Memos keep encoded documents sized to fit (api/wsgi.py to_keep)."""
import tracemalloc

from tachyon_placement.api import wsgi

PROVIDER = {'uuid': '1b9f3c2e-8a4d-4c61-9e0f-5d7a2b3c4e01', 'name': 'cn-1',
            'generation': 3, 'parent_provider_uuid': None,
            'links': [{'rel': 'self', 'href': '/resource_providers/'
                       '1b9f3c2e-8a4d-4c61-9e0f-5d7a2b3c4e01'}]}


def allocated_per_object(make, count=2000):
    tracemalloc.start()
    try:
        kept = [make() for _ in range(count)]
        size = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(kept) == count
    return size / count


def test_a_kept_document_holds_its_length_not_the_encoders_buffer():
    encoded = wsgi.encode_json(PROVIDER)
    assert wsgi.to_keep(encoded) == encoded
    # What the encoder returns holds a buffer several times the document
    # (the reason for to_keep); a kept copy holds about its length.
    assert allocated_per_object(lambda: wsgi.encode_json(PROVIDER)) > (
        3 * len(encoded))
    assert allocated_per_object(lambda: wsgi.to_keep(encoded)) < (
        len(encoded) + 64)
