# Tachyon Placement API reference: os-api-ref (tox -e api-ref builds it
# with warnings as errors).
extensions = [
    'os_api_ref',
    'openstackdocstheme',
]

# openstackdocstheme
openstackdocs_repo_name = 'x/tachyon-placement'
openstackdocs_use_storyboard = False
openstackdocs_auto_name = False
html_theme = 'openstackdocs'
html_theme_options = {'sidebar_mode': 'toc'}

project = 'Tachyon Placement API Reference'
copyright = '2026, Tachyon Placement developers'
source_suffix = '.rst'
master_doc = 'index'
pygments_style = 'native'
