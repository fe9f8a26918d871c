"""Building oslo.policy enforcers for Placement's rules.

There is no process-wide enforcer: the application builds one per
``ConfigOpts`` with :func:`make_enforcer` and hands it to every
``tachyon_placement.api.context.RequestContext`` (``enforcer=`` kwarg), which
checks actions through ``context.can()``.

The enforcer honours the usual ``[oslo_policy]`` options: ``policy_file``
(an absolute path, or a name looked up in the config dirs), ``policy_dirs``,
``enforce_new_defaults`` (``False`` = legacy RBAC, where every rule also
accepts the deprecated ``role:admin`` default) and ``enforce_scope``.

How test fixtures override rules
--------------------------------
Any of these work; pick whichever matches the upstream fixture being
mirrored:

* Policy file: write a YAML file of ``name: check_str`` overrides, set
  ``conf.set_override('policy_file', path, group='oslo_policy')`` and call
  ``make_enforcer(conf)``.  The file is re-read when it changes on disk.
* Overrides at build time: ``make_enforcer(conf, rules={'name': '@'})``
  (a mapping) registers the normal defaults and then layers the overrides
  on top, like upstream's ``PolicyFixture.set_rules(rules, overwrite=False)``
  does for ``OpenPolicyFixture``.
* On an existing enforcer: :func:`set_rules` (``overwrite=False`` keeps the
  other rules).  Note that oslo.policy stops re-reading the policy file once
  rules were set by hand.
* Secure vs legacy RBAC (``SecureRBACPolicyFixture`` /
  ``LegacyRBACPolicyFixture``): set ``[oslo_policy] enforce_new_defaults``
  (and, if wanted, ``enforce_scope``) on the ConfigOpts *before*
  ``make_enforcer``; deprecated defaults are resolved when rules load.

Passing a list of ``RuleDefault`` as ``rules`` registers those instead of
:func:`tachyon_placement.policies.list_rules` (as upstream's ``init``).
Pass ``suppress_deprecation_warnings=True`` in tests to keep logs quiet.
"""
import collections.abc
import copy

from oslo_config import cfg
from oslo_policy import opts as policy_opts
from oslo_policy import policy as oslo_policy

from tachyon_placement import policies

SAMPLE_POLICY_FILE = 'policy.yaml'


def make_enforcer(conf, rules=None, suppress_deprecation_warnings=False):
    """Return a loaded ``oslo_policy.policy.Enforcer`` for ``conf``.

    :param conf: a ConfigOpts; ``[oslo_policy]`` options are registered on
        it by oslo.policy if not already present.
    :param rules: ``None`` for Placement's defaults; a list of RuleDefault to
        register instead of them; or a mapping of rule name to check string
        applied as overrides on top of the defaults.
    :param suppress_deprecation_warnings: silence deprecated-rule warnings
        (meant for tests).
    """
    overrides = None
    if isinstance(rules, collections.abc.Mapping):
        overrides, defaults = rules, None
    else:
        defaults = rules
    if defaults is None:
        defaults = policies.list_rules()

    enforcer = oslo_policy.Enforcer(conf)
    # Every Placement default changed in the secure-RBAC work; warning about
    # each of them on every load just floods logs, so (like Placement) keep
    # those quiet and leave real deprecation warnings to the caller.
    enforcer.suppress_default_change_warnings = True
    enforcer.suppress_deprecation_warnings = suppress_deprecation_warnings
    # oslo.policy may decorate the defaults it is given; keep ours pristine
    # so several enforcers (e.g. legacy and secure) can live side by side.
    enforcer.register_defaults(copy.deepcopy(list(defaults)))
    enforcer.load_rules()
    if overrides:
        set_rules(enforcer, overrides, overwrite=False)
    return enforcer


def set_rules(enforcer, rules, overwrite=False):
    """Apply ``{name: check_str}`` overrides to a loaded enforcer.

    With ``overwrite=True`` the given rules replace every loaded rule.
    """
    enforcer.set_rules(oslo_policy.Rules.from_dict(dict(rules)),
                       overwrite=overwrite)


def get_enforcer():
    """Enforcer for the ``oslo.policy.enforcer`` entry point.

    Only for the ``oslopolicy-*`` command line tools (policy generator,
    validator, upgrade...), never for the application.  Those tools work on
    the global ``cfg.CONF`` (the validator reads
    ``cfg.CONF.oslo_policy.policy_file`` itself), so, like Placement, this
    (re)parses ``cfg.CONF`` for ``project='placement'`` and defaults
    ``[oslo_policy] policy_file`` to ``policy.yaml``.
    """
    conf = cfg.CONF
    conf([], project='placement')
    policy_opts.set_defaults(conf, SAMPLE_POLICY_FILE)
    return make_enforcer(conf)
