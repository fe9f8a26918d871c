# Tachyon Placement documentation (tox -e docs builds it with warnings as
# errors).  The configuration and policy references are generated from the
# code by oslo.config's and oslo.policy's Sphinx extensions.
extensions = [
    'myst_parser',
    'openstackdocstheme',
    'oslo_config.sphinxext',
    'oslo_config.sphinxconfiggen',
    'oslo_policy.sphinxext',
    'oslo_policy.sphinxpolicygen',
]

# oslo_config.sphinxconfiggen / oslo_policy.sphinxpolicygen: the samples
# the reference pages link to, generated at build time.
config_generator_config_file = [
    ('../../etc/tachyon-placement-config-generator.conf',
     '_static/tachyon-placement'),
]
policy_generator_config_file = [
    ('../../etc/tachyon-placement-policy-generator.conf',
     '_static/tachyon-placement'),
]

# openstackdocstheme
openstackdocs_repo_name = 'x/tachyon-placement'
openstackdocs_use_storyboard = False
openstackdocs_auto_name = False
html_theme = 'openstackdocs'
html_static_path = ['_static']

project = 'Tachyon Placement'
copyright = '2026, Tachyon Placement developers'
# Markdown (MyST) for the dated bench results moved from the README.
source_suffix = {'.rst': 'restructuredtext', '.md': 'markdown'}
master_doc = 'index'
pygments_style = 'native'
exclude_patterns = ['_build']


# The benchmark results page's plots, drawn at every build from the
# results kept in contributor/bench-data (bench/plots.py; the same as
# ``python -m bench.plots``), so they never lag the data.
def _draw_bench_plots(app):
    import os
    import sys
    root = os.path.abspath(os.path.join(app.srcdir, '..', '..'))
    if root not in sys.path:
        sys.path.insert(0, root)
    from bench import plots
    plots.draw()


def setup(app):
    app.connect('builder-inited', _draw_bench_plots)
