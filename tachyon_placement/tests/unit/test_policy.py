"""Tests for policy rules, enforcer construction and RequestContext.can."""
import copy

import pytest
from oslo_config import cfg
from oslo_policy import opts as policy_opts
from oslo_policy import policy as oslo_policy

from tachyon_placement.api import context
from tachyon_placement.api import errors
from tachyon_placement import policies
from tachyon_placement import policy
from tachyon_placement.policies import allocation
from tachyon_placement.policies import reshaper
from tachyon_placement.policies import resource_provider
from tachyon_placement.policies import trait
from tachyon_placement.policies import usage

PROJECT = 'c1f8ce9dbbd34a1bb42fcdd81f3d7b2c'
ALT_PROJECT = '7a1a9f8e4c2d4d2f9b8e6a5c3d1b0f9e'
SERVICE_PROJECT = 'f0e1d2c3b4a5968778695a4b3c2d1e0f'

PERSONAS = {
    'project_admin': dict(roles=['admin', 'member', 'reader'],
                          project_id=PROJECT),
    'alt_project_admin': dict(roles=['admin', 'member', 'reader'],
                              project_id=ALT_PROJECT),
    'service': dict(roles=['service'], project_id=SERVICE_PROJECT),
    'project_member': dict(roles=['member', 'reader'], project_id=PROJECT),
    'project_reader': dict(roles=['reader'], project_id=PROJECT),
    'alt_project_reader': dict(roles=['reader'], project_id=ALT_PROJECT),
    'no_roles': dict(roles=[], project_id=PROJECT),
    'system_admin': dict(roles=['admin', 'member', 'reader'],
                         system_scope='all'),
    'system_reader': dict(roles=['reader'], system_scope='all'),
}

ADMIN_OR_SERVICE_RULES = [
    rule.name for rule in policies.list_rules()
    if rule.check_str == 'rule:admin_or_service_api'
]


# oslo.policy >= 5 dropped [oslo_policy] enforce_scope: scope_types are
# always enforced, so only enforce_new_defaults selects the mode.
def _conf(**oslo_policy_opts):
    conf = cfg.ConfigOpts()
    policy_opts.set_defaults(conf)
    conf([], project='placement', default_config_files=[])
    for name, value in oslo_policy_opts.items():
        conf.set_override(name, value, group='oslo_policy')
    return conf


def _secure():
    return policy.make_enforcer(
        _conf(enforce_new_defaults=True),
        suppress_deprecation_warnings=True)


def _legacy():
    # Mirrors LegacyRBACPolicyFixture: only enforce_new_defaults differs.
    return policy.make_enforcer(
        _conf(enforce_new_defaults=False),
        suppress_deprecation_warnings=True)


def _ctx(enforcer, persona, **extra):
    kwargs = dict(PERSONAS[persona], user_id='u1')
    kwargs.update(extra)
    return context.RequestContext(enforcer=enforcer, **kwargs)


@pytest.fixture(scope='module')
def secure():
    return _secure()


@pytest.fixture(scope='module')
def legacy():
    return _legacy()


# ---------------------------------------------------------------- rule set

def _signature(rule):
    dep = rule.deprecated_rule
    return {
        'type': type(rule).__name__,
        'name': rule.name,
        'check_str': rule.check_str,
        'description': rule.description,
        'operations': getattr(rule, 'operations', None),
        'scope_types': rule.scope_types,
        'deprecated_rule': dep and (dep.name, dep.check_str,
                                    dep.deprecated_reason,
                                    dep.deprecated_since),
        'deprecated_reason': rule.deprecated_reason,
        'deprecated_since': rule.deprecated_since,
        'deprecated_for_removal': rule.deprecated_for_removal,
    }


def test_rules_match_upstream():
    upstream_policies = pytest.importorskip('placement.policies')
    theirs = [_signature(r) for r in upstream_policies.list_rules()]
    ours = [_signature(r) for r in policies.placement_rules()]
    assert [s['name'] for s in ours] == [s['name'] for s in theirs]
    for mine, upstream in zip(ours, theirs):
        assert mine == upstream, mine['name']


def test_rule_names_unique_and_types():
    rules = policies.list_rules()
    names = [r.name for r in rules]
    assert len(names) == len(set(names)) == 38 + 30
    # Placement's first, then Tachyon's own.
    assert all(name.startswith('tachyon:') for name in names[38:])
    assert not any(name.startswith('tachyon:') for name in names[:38])
    for rule in rules:
        assert isinstance(rule, oslo_policy.RuleDefault)
        if rule.name.startswith(('placement:', 'tachyon:')):
            assert isinstance(rule, oslo_policy.DocumentedRuleDefault)
            assert rule.scope_types == ['project']


def test_base_rules():
    rules = {r.name: r for r in policies.list_rules()}
    assert rules['admin_api'].check_str == 'role:admin'
    assert rules['admin_api'].deprecated_rule is None
    assert rules['service_api'].check_str == 'role:service'
    assert rules['admin_or_service_api'].check_str == (
        'role:admin or role:service')
    assert rules['project_reader_api'].check_str == (
        'role:reader and project_id:%(project_id)s')
    assert rules['project_reader_api'].scope_types is None
    assert rules['admin_or_project_reader_or_service_api'].check_str == (
        'role:admin or rule:project_reader_api or role:service')
    for name in ('service_api', 'admin_or_service_api', 'project_reader_api',
                 'admin_or_project_reader_or_service_api'):
        dep = rules[name].deprecated_rule
        assert (dep.name, dep.check_str, dep.deprecated_since) == (
            'rule:admin_api', 'role:admin', 'W')


def test_well_known_constants():
    assert resource_provider.LIST == 'placement:resource_providers:list'
    assert trait.TRAITS_LIST == 'placement:traits:list'
    assert allocation.RP_ALLOC_LIST == (
        'placement:resource_providers:allocations:list')
    assert usage.TOTAL_USAGES == 'placement:usages'
    assert reshaper.RESHAPE == 'placement:reshaper:reshape'


def test_list_rules_returns_fresh_list():
    first = policies.list_rules()
    first.clear()
    assert len(policies.list_rules()) == 38 + 30


# ------------------------------------------------------- secure RBAC mode

@pytest.mark.parametrize('rule', ADMIN_OR_SERVICE_RULES)
@pytest.mark.parametrize('persona, allowed', [
    ('project_admin', True),
    ('alt_project_admin', True),
    ('service', True),
    ('project_member', False),
    ('project_reader', False),
    ('no_roles', False),
    ('system_admin', False),
    ('system_reader', False),
])
def test_secure_admin_or_service(secure, rule, persona, allowed):
    ctx = _ctx(secure, persona)
    assert bool(ctx.can(rule, fatal=False)) is allowed


@pytest.mark.parametrize('persona, allowed', [
    ('project_admin', False),
    ('service', True),
    ('project_member', False),
    ('system_admin', False),
])
def test_secure_reshaper_is_service_only(secure, persona, allowed):
    ctx = _ctx(secure, persona)
    assert bool(ctx.can(reshaper.RESHAPE, fatal=False)) is allowed


@pytest.mark.parametrize('persona, target_project, allowed', [
    ('project_admin', PROJECT, True),
    ('project_admin', ALT_PROJECT, True),
    ('alt_project_admin', PROJECT, True),
    ('service', PROJECT, True),
    ('project_member', PROJECT, True),
    ('project_reader', PROJECT, True),
    ('project_reader', ALT_PROJECT, False),
    ('alt_project_reader', PROJECT, False),
    ('project_member', None, False),
    ('no_roles', PROJECT, False),
    ('system_admin', PROJECT, False),
    ('system_reader', PROJECT, False),
])
def test_secure_total_usages(secure, persona, target_project, allowed):
    ctx = _ctx(secure, persona)
    result = ctx.can(usage.TOTAL_USAGES,
                     target={'project_id': target_project}, fatal=False)
    assert bool(result) is allowed


def test_secure_usages_default_target_is_own_project(secure):
    assert _ctx(secure, 'project_reader').can(usage.TOTAL_USAGES)


# ------------------------------------------------------- legacy RBAC mode

@pytest.mark.parametrize('rule', ADMIN_OR_SERVICE_RULES + [reshaper.RESHAPE])
@pytest.mark.parametrize('persona, allowed', [
    ('project_admin', True),
    ('alt_project_admin', True),
    ('service', True),
    ('project_member', False),
    ('project_reader', False),
    ('no_roles', False),
])
def test_legacy_admin_allowed_everywhere(legacy, rule, persona, allowed):
    ctx = _ctx(legacy, persona)
    assert bool(ctx.can(rule, fatal=False)) is allowed


@pytest.mark.parametrize('persona, target_project, allowed', [
    ('project_admin', ALT_PROJECT, True),
    ('service', PROJECT, True),
    ('project_member', PROJECT, True),
    ('project_reader', PROJECT, True),
    ('project_member', ALT_PROJECT, False),
    ('project_reader', ALT_PROJECT, False),
])
def test_legacy_total_usages(legacy, persona, target_project, allowed):
    ctx = _ctx(legacy, persona)
    result = ctx.can(usage.TOTAL_USAGES,
                     target={'project_id': target_project}, fatal=False)
    assert bool(result) is allowed


def test_legacy_scope_enforced_by_default(legacy):
    with pytest.raises(errors.Forbidden):
        _ctx(legacy, 'system_admin').can(resource_provider.LIST)


def test_modes_coexist():
    legacy = _legacy()
    secure = _secure()
    assert _ctx(legacy, 'project_admin').can(reshaper.RESHAPE)
    assert not _ctx(secure, 'project_admin').can(
        reshaper.RESHAPE, fatal=False)
    # Registering did not alter the module level defaults.
    rule = [r for r in policies.list_rules() if r.name == reshaper.RESHAPE]
    assert rule[0].check_str == 'rule:service_api'


def test_oslo_policy_default_is_secure():
    enforcer = policy.make_enforcer(_conf(),
                                    suppress_deprecation_warnings=True)
    assert not _ctx(enforcer, 'project_admin').can(
        reshaper.RESHAPE, fatal=False)


# ----------------------------------------------------------------- can()

def test_can_raises_forbidden_with_message(secure):
    ctx = _ctx(secure, 'project_member')
    with pytest.raises(errors.Forbidden) as exc:
        ctx.can(resource_provider.CREATE)
    assert exc.value.detail == (
        'Policy does not allow placement:resource_providers:create to be '
        'performed.')
    assert exc.value.status == 403


def test_can_invalid_scope_is_forbidden(secure):
    ctx = _ctx(secure, 'system_admin')
    with pytest.raises(errors.Forbidden) as exc:
        ctx.can(trait.TRAITS_LIST)
    assert exc.value.detail == (
        'Policy does not allow placement:traits:list to be performed.')
    assert ctx.can(trait.TRAITS_LIST, fatal=False) is False


def test_can_non_fatal_returns_false(secure):
    assert _ctx(secure, 'project_reader').can(
        resource_provider.LIST, fatal=False) is False


def test_can_allowed_returns_true(secure):
    assert _ctx(secure, 'project_admin').can(resource_provider.LIST)


def test_can_unregistered_action(secure):
    with pytest.raises(oslo_policy.PolicyNotRegistered):
        _ctx(secure, 'project_admin').can('placement:nope')


def test_can_default_target():
    enforcer = policy.make_enforcer(
        _conf(), suppress_deprecation_warnings=True,
        rules={resource_provider.LIST:
               'project_id:%(project_id)s and user_id:%(user_id)s'})
    ctx = _ctx(enforcer, 'no_roles')
    assert ctx.can(resource_provider.LIST)
    assert not ctx.can(resource_provider.LIST,
                       target={'project_id': ALT_PROJECT, 'user_id': 'u1'},
                       fatal=False)


def test_can_without_enforcer():
    with pytest.raises(RuntimeError):
        context.RequestContext().can(resource_provider.LIST)


def test_context_attributes_and_from_environ(secure):
    conf = _conf()
    ctx = context.RequestContext(enforcer=secure, config=conf,
                                 project_id=PROJECT, roles=['admin'])
    assert ctx.enforcer is secure
    assert ctx.config is conf
    assert 'enforcer' not in ctx.to_dict()
    environ = {'HTTP_X_PROJECT_ID': PROJECT, 'HTTP_X_USER_ID': 'u1',
               'HTTP_X_ROLES': 'admin,member,reader'}
    ctx = context.RequestContext.from_environ(environ, enforcer=secure,
                                              config=conf)
    assert ctx.config is conf
    assert ctx.roles == ['admin', 'member', 'reader']
    assert ctx.can(resource_provider.LIST)
    assert context.RequestContext().enforcer is None


# -------------------------------------------------------------- overrides

def test_open_policy_overrides(secure):
    # What OpenPolicyFixture does: every rule but admin_api opened to '@'.
    overrides = {r.name: '@' for r in policies.list_rules()
                 if r.name != 'admin_api'}
    enforcer = policy.make_enforcer(
        _conf(enforce_new_defaults=True),
        rules=overrides, suppress_deprecation_warnings=True)
    ctx = _ctx(enforcer, 'no_roles')
    for name in overrides:
        assert ctx.can(name, target={'project_id': ALT_PROJECT})


def test_set_rules_on_existing_enforcer():
    enforcer = _secure()
    ctx = _ctx(enforcer, 'project_reader')
    assert not ctx.can(trait.TRAITS_LIST, fatal=False)
    policy.set_rules(enforcer, {trait.TRAITS_LIST: 'role:reader'})
    assert ctx.can(trait.TRAITS_LIST)
    # other rules are untouched
    assert not ctx.can(trait.TRAITS_SHOW, fatal=False)


def test_policy_file_overrides(tmp_path):
    policy_file = tmp_path / 'policy.yaml'
    policy_file.write_text(
        '"placement:resource_providers:list": "role:reader"\n'
        '"admin_or_service_api": "role:service"\n')
    conf = _conf(enforce_new_defaults=True, policy_file=str(policy_file))
    enforcer = policy.make_enforcer(conf, suppress_deprecation_warnings=True)
    reader = _ctx(enforcer, 'project_reader')
    admin = _ctx(enforcer, 'project_admin')
    assert reader.can(resource_provider.LIST)
    assert not reader.can(resource_provider.SHOW, fatal=False)
    assert not admin.can(resource_provider.SHOW, fatal=False)
    assert _ctx(enforcer, 'service').can(resource_provider.SHOW)


def test_policy_file_deprecated_rule_override_in_legacy_mode(tmp_path):
    # An operator who overrode the old "rule:admin_api" name keeps control
    # of the rules that deprecated it.
    policy_file = tmp_path / 'policy.yaml'
    policy_file.write_text('"rule:admin_api": "role:operator"\n')
    conf = _conf(enforce_new_defaults=False, policy_file=str(policy_file))
    enforcer = policy.make_enforcer(conf, suppress_deprecation_warnings=True)
    operator = context.RequestContext(
        enforcer=enforcer, roles=['operator'], project_id=PROJECT)
    assert operator.can(resource_provider.LIST)


def test_custom_default_rules():
    rules = [
        oslo_policy.RuleDefault(r.name, '@')
        if r.name == resource_provider.LIST else copy.deepcopy(r)
        for r in policies.list_rules()
    ]
    enforcer = policy.make_enforcer(_conf(), rules=rules,
                                    suppress_deprecation_warnings=True)
    assert _ctx(enforcer, 'no_roles').can(resource_provider.LIST)


def test_get_enforcer_for_cli_tools(monkeypatch):
    monkeypatch.setattr(cfg, 'CONF', cfg.ConfigOpts())
    enforcer = policy.get_enforcer()
    assert isinstance(enforcer, oslo_policy.Enforcer)
    assert cfg.CONF.oslo_policy.policy_file == 'policy.yaml'
    assert set(enforcer.registered_rules) == {
        r.name for r in policies.list_rules()}
    assert resource_provider.LIST in enforcer.rules


def test_an_unregistered_rule_is_one_500_logged_once(secure, caplog):
    """A bug (a rule nobody registered) is logged with its traceback once,
    by the last line of defence, not again on the way."""
    from tachyon_placement.api import app as api_app

    def handler(environ, start_response):
        _ctx(secure, 'project_admin').can('placement:no_such:rule')

    answered = []
    wrapped = api_app.FaultWrapper(handler)
    environ = {'REQUEST_METHOD': 'GET', 'PATH_INFO': '/x',
               'SERVER_NAME': 'x', 'SERVER_PORT': '80',
               'wsgi.url_scheme': 'http', 'HTTP_ACCEPT': 'application/json'}
    with caplog.at_level('DEBUG'):
        body = b''.join(wrapped(environ, lambda status, headers, exc=None:
                                answered.append(status)))
    assert answered[0].startswith('500'), answered
    assert b'no_such' in body
    tracebacks = [record for record in caplog.records if record.exc_info]
    assert len(tracebacks) == 1, [r.getMessage() for r in caplog.records]
