"""Per-request context of the web layer: identity, configuration and
policy (a refusal is the API's 403)."""
from oslo_context import context
from oslo_log import log as logging
from oslo_policy import policy as oslo_policy

from tachyon_placement.api import errors

LOG = logging.getLogger(__name__)

POLICY_NOT_AUTHORIZED = 'Policy does not allow %(action)s to be performed.'


class RequestContext(context.RequestContext):
    """oslo.context RequestContext plus ``config`` and ``enforcer``.

    ``config`` is the ConfigOpts of the running service and ``enforcer`` the
    oslo.policy Enforcer built for it (see
    ``tachyon_placement.policy.make_enforcer``).  Both are plain attributes
    and are not part of ``to_dict()``.
    """

    def __init__(self, *args, enforcer=None, config=None, **kwargs):
        self.enforcer = enforcer
        self.config = config
        super().__init__(*args, **kwargs)

    def can(self, action, target=None, fatal=True):
        """Check that policy allows ``action`` on ``target`` for this context.

        :param action: rule name, e.g. ``placement:resource_providers:list``.
        :param target: mapping describing the object acted on; defaults to
            ``{'project_id': self.project_id, 'user_id': self.user_id}``.
        :param fatal: raise when not allowed (default); otherwise return
            ``False``.
        :raises tachyon_placement.api.errors.Forbidden: when not allowed
            (including a token of the wrong scope) and ``fatal`` is true.
        :raises oslo_policy.policy.PolicyNotRegistered: unknown action.
        :returns: a true value when allowed.
        """
        if self.enforcer is None:
            raise RuntimeError('RequestContext has no policy enforcer')
        if target is None:
            target = {'project_id': self.project_id,
                      'user_id': self.user_id}
        try:
            allowed = self.enforcer.authorize(action, target, self,
                                              do_raise=False)
        except oslo_policy.InvalidScope:
            allowed = False
        # A rule not registered (PolicyNotRegistered) is a bug: it goes up
        # to the FaultWrapper, which logs it once and answers 500.
        if allowed:
            return allowed
        LOG.debug('Policy check for %(action)s failed with credentials '
                  '%(credentials)s',
                  {'action': action, 'credentials': self.to_policy_values()})
        if fatal:
            raise errors.PolicyForbidden(
                POLICY_NOT_AUTHORIZED % {'action': action})
        return False
