"""api-ref's JSON samples are what the service answers: the requests of
api_samples.py sent to a fresh Tachyon, on the suite's engine, give
exactly the sample files (tools/make-api-samples writes them)."""
import json
import os

from tachyon_placement.tests.functional import api_samples


def _read(path):
    with open(path) as sample:
        return json.load(sample)


def test_samples_are_the_services_answers(api):
    written = set()
    memory = {}
    for name, method, path, body, version, status in api_samples.STEPS:
        kind, number = version.split()
        path = api_samples.resolve(path, memory)
        found, answer = api.request(method, path, body, version=number,
                                    service=kind)
        api_samples.remember(name, answer, memory)
        assert found == status, (method, path, answer)
        if name is None:
            continue
        if body is not None:
            request_path = api_samples.sample_path(name, '-request')
            written.add(request_path)
            assert _read(request_path) == body, request_path
        if answer is not None:
            answer_path = api_samples.sample_path(name)
            written.add(answer_path)
            assert _read(answer_path) == api_samples.stable(answer), (
                '%s differs from the answer to %s %s (tools/make-api-'
                'samples writes it again): %s' % (
                    answer_path, method, path,
                    json.dumps(api_samples.stable(answer), sort_keys=True)))
    present = {os.path.join(directory, filename)
               for directory, _dirs, files in os.walk(
                   api_samples.SAMPLES_DIR) for filename in files}
    assert present == written, present ^ written
