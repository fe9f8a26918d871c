"""Parsing of Placement's query-string mini-languages.

resources=VCPU:2,MEMORY_MB:1024; required=A,!B or in:A,B (1.39);
member_of=<uuid> | in:<uuid>,<uuid> | !<uuid> | !in:... ; in_tree=<uuid>.
Error texts are Placement's, word for word: clients and tests match them.
"""
import itertools

from oslo_utils import uuidutils

from tachyon_placement.api import errors

_RESOURCES_FORM = ('Badly formed resources parameter. Expected resources '
                   'query string parameter in form: '
                   '?resources=VCPU:2,MEMORY_MB:1024. Got: %s.')


def parse_resources(value):
    """'VCPU:2,MEMORY_MB:1024' -> {'VCPU': 2, 'MEMORY_MB': 1024}."""
    if value.strip() == '':
        raise errors.BadRequest(_RESOURCES_FORM % 'empty string')
    amounts = {}
    for item in value.split(','):
        try:
            rc_name, amount = item.split(':')
        except ValueError:
            raise errors.BadRequest(_RESOURCES_FORM % item)
        try:
            amount = int(amount)
        except ValueError:
            raise errors.BadRequest(
                'Requested resource %(resource_name)s expected positive '
                'integer amount. Got: %(amount)s.'
                % {'resource_name': rc_name, 'amount': amount})
        if amount < 1:
            raise errors.BadRequest(
                'Requested resource %(resource_name)s requires amount >= 1. '
                'Got: %(amount)d.'
                % {'resource_name': rc_name, 'amount': amount})
        amounts[rc_name] = amount
    return amounts


def parse_traits(value, allow_forbidden=False, allow_any=False):
    """One ``required`` value -> (list of any-of sets, forbidden set)."""
    if value.startswith('in:'):
        if not allow_any:
            raise errors.BadRequest(
                "Invalid query string parameters: The format "
                "'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since "
                "microversion 1.39. Got: %s" % value)
        any_of = {name.strip() for name in value[3:].split(',')}
        if not all(any_of):
            raise errors.BadRequest(
                "Invalid query string parameters: Expected 'required' "
                "parameter value of the form: in:HW_CPU_X86_VMX,CUSTOM_MAGIC. "
                "Got an empty trait in: %s" % value)
        if any(name.startswith('!') for name in any_of):
            raise errors.BadRequest(
                "Invalid query string parameters: The format "
                "'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does not support forbidden "
                "traits. Got: %s" % value)
        return [any_of], set()

    names = [name.strip() for name in value.split(',')]
    # Any number of leading '!' mean forbidden: Placement's documented-by-bug
    # behaviour, kept for compatibility.
    forbidden = {name.lstrip('!') for name in names if name.startswith('!')}
    if not all(itertools.chain(forbidden, names)):
        form = ('HW_CPU_X86_VMX,!CUSTOM_MAGIC' if allow_forbidden
                else 'HW_CPU_X86_VMX,CUSTOM_MAGIC')
        raise errors.BadRequest(
            "Invalid query string parameters: Expected 'required' parameter "
            "value of the form: %s. Got an empty trait in: %s"
            % (form, value))
    if forbidden and not allow_forbidden:
        raise errors.BadRequest(
            "Invalid query string parameters: Expected 'required' parameter "
            "value of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: %s" % value)
    required = [{name} for name in names if not name.startswith('!')]
    return required, forbidden


def required_traits(req, suffix=''):
    """All ``required<suffix>`` params -> (list of any-of sets, forbidden)."""
    values = req.GET.getall('required' + suffix)
    allow_any = req.has('any_traits')
    if not allow_any:
        # Before 1.39 a repeated parameter means the last one wins.
        values = values[-1:]
    required, forbidden = [], set()
    for value in values:
        any_of, none_of = parse_traits(
            value, allow_forbidden=req.has('forbidden_traits'),
            allow_any=allow_any)
        required += any_of
        forbidden |= none_of
    return required, forbidden


def parse_member_of(value):
    """One member_of value -> (any-of set, forbidden set)."""
    if ',' in value and not (value.startswith('in:')
                             or value.startswith('!in:')):
        raise errors.BadRequest(
            "Multiple values for 'member_of' must be prefixed with the 'in:' "
            "or '!in:' keyword using the valid microversion. Got: %s" % value)
    required = forbidden = set()
    if value.startswith('!in:'):
        forbidden = set(value[4:].split(','))
    elif value.startswith('!'):
        forbidden = {value[1:]}
    elif value.startswith('in:'):
        required = set(value[3:].split(','))
    else:
        required = {value}
    for agg_uuid in required | forbidden:
        if not uuidutils.is_uuid_like(agg_uuid):
            raise errors.BadRequest(
                "Invalid query string parameters: Expected 'member_of' "
                "parameter to contain valid UUID(s). Got: %s" % agg_uuid)
    return required, forbidden


def member_of(req, suffix=''):
    """All ``member_of<suffix>`` params -> (list of any-of sets, forbidden)."""
    values = req.GET.getall('member_of' + suffix)
    if not req.has('multi_member_of') and len(values) > 1:
        raise errors.BadRequest(
            'Multiple member_of%s parameters are not supported' % suffix)
    required, forbidden = [], set()
    for value in values:
        any_of, none_of = parse_member_of(value)
        if any_of:
            required.append(any_of)
        if none_of:
            if not req.has('forbidden_aggregates'):
                raise errors.BadRequest(
                    'Forbidden member_of%s parameters are not supported in '
                    'the specified microversion' % suffix)
            forbidden |= none_of
    return required, forbidden


def in_tree(value):
    uuid = value.strip()
    if not uuidutils.is_uuid_like(uuid):
        raise errors.BadRequest(
            "Invalid query string parameters: Expected 'in_tree' parameter "
            "to be a format of uuid. Got: %(val)s" % {'val': value})
    return uuid
