"""doc/source builds with Sphinx, warnings as errors (what tox -e docs
runs): the admin guides, the configuration and policy references
generated from the code, which show every option group and rule, and the
benchmark page with its plots drawn from the kept results."""
import os
import pathlib

from bench import plots
from tachyon_placement import policies
from tachyon_placement.conf import opts
from tachyon_placement.tests.unit import sphinx_site


def test_the_docs_build_without_warnings(tmp_path):
    html = pathlib.Path(sphinx_site.build(os.path.join('doc', 'source'),
                                          tmp_path))
    options = (html / 'configuration' / 'config.html').read_text()
    for group, listed in opts.list_opts():
        name = getattr(group, 'name', group)
        assert name in options, name
        for option in listed:
            assert option.dest in options, (name, option.dest)
    # Tachyon's Nova weigher's options (nova.conf's [tachyon]).
    from tachyon_placement.nova import options as nova_options
    weigher = (html / 'configuration' / 'nova-weigher.html').read_text()
    for option in nova_options.OPTS:
        assert option.dest in weigher, option.dest
    rules = (html / 'configuration' / 'policy.html').read_text()
    for rule in policies.list_rules():
        assert rule.name in rules, rule.name
    for guide in ('capacity', 'whatif', 'telemetry', 'ha', 'backup'):
        assert (html / 'admin' / ('%s.html' % guide)).exists(), guide
    for guide in ('monitoring', 'telemetry-walkthrough', 'operations'):
        assert (html / 'admin' / ('%s.html' % guide)).exists(), guide
    for page in ('install/index', 'user/index', 'contributor/architecture'):
        assert (html / ('%s.html' % page)).exists(), page
    # Each plot bench.plots draws is on the results page, and its image
    # was drawn (a PNG file, not an empty one).
    results = (html / 'contributor' / 'bench-results.html').read_text()
    for plot in plots.PLOTS:
        name = plot.__name__.replace('_', '-') + '.png'
        assert name in results, name
    images = list((html / '_images').glob('*.png'))
    assert len(images) >= len(plots.PLOTS), images
    for image in images:
        assert image.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n', image
