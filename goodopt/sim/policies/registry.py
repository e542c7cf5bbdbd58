"""Every simulation policy by name, plug-ins included, and how one is made from its options."""

from __future__ import annotations

from typing import Any

from goodopt.errors import ValidationError
from goodopt.plugins import POLICY_GROUP, PluginRegistry
from goodopt.solvers.options import OPTIONS, refuse_file_options
from goodopt.validation import check_label

from ...records import Record
from .fixed_size import FifoPolicy, OptimusPolicy, TiresiasPolicy
from .gavel_policy import GavelPolicy
from .goodput_policies import EqualSharePolicy, GoodputPolicy, GreedyPolicy, MilpPolicy, PolluxPolicy, SiaPolicy
from .policy import Policy, SimPolicyOptions
from .shockwave_policy import ShockwavePolicy
from .themis_policy import ThemisPolicy

#: Policy name -> class.
#: Every policy by name (plug-ins of the ``goodopt.policies`` entry points are added when it is first read).
POLICIES: PluginRegistry[type[Policy]] = PluginRegistry(POLICY_GROUP, lambda name, cls: register_policy(name, cls), {
    "pollux": PolluxPolicy,
    "milp": MilpPolicy,
    "sia": SiaPolicy,
    "greedy": GreedyPolicy,
    "equal-share": EqualSharePolicy,
    "optimus": OptimusPolicy,
    "tiresias": TiresiasPolicy,
    "fifo": FifoPolicy,
    "gavel": GavelPolicy,
    "themis": ThemisPolicy,
    "shockwave": ShockwavePolicy,
})


def register_policy(name: str, cls: type[Policy]) -> None:
    """Add a simulation policy class under ``name``: from then on ``simulate``, sweeps and the command line
    take it."""
    if not (isinstance(cls, type) and issubclass(cls, Policy)):
        raise ValidationError(f"policy {name!r}", "a plug-in policy must be a Policy subclass", "see docs/extending.md")
    if not (isinstance(cls.Options, type) and issubclass(cls.Options, SimPolicyOptions)):
        raise ValidationError(f"policy {name!r}", "a policy's Options must be a frozen SimPolicyOptions subclass",
                              "declare its options as in docs/extending.md")
    check_label(f"policy {name!r}", name, "name a policy by a plain label such as lottery (it names the "
                "run's folder)")
    if name in POLICIES:
        raise ValidationError(f"policy {name!r}", "the name is taken", "choose another name")
    POLICIES[name] = cls


def policy_options(name: str) -> Record:
    """The options of policy ``name`` and their defaults (its options class, :attr:`Policy.Options`)."""
    return POLICIES[name].Options.defaults()


def make_policy(name: str | Policy, **options: Any) -> Policy:  # Any: option values, checked by the policy
    """A policy by name with its keyword options (validated by the class)."""
    if isinstance(name, Policy):
        return name
    if name not in POLICIES:
        raise ValidationError("policy", f"unknown policy {name!r}", f"choose one of {', '.join(POLICIES)}")
    if "options" in options and options["options"] is not None and not isinstance(options["options"], dict):
        raise ValidationError(f"{name}.options", f"must map option -> value, got {options['options']!r}",
                              "see docs/options.md")
    try:
        policy = POLICIES[name](**options)
    except TypeError as exc:
        raise ValidationError("policy options", f"{name}: {exc}", "see the policy's docstring") from None
    if isinstance(policy, GoodputPolicy):  # its solver options, checked as the solve will check them
        refuse_file_options(f"{name}.options", policy.options)

        cls = OPTIONS[policy.method]
        try:
            cls.build({**({"seed": 0} if cls.randomised else {}), **policy.options})
        except ValidationError as exc:
            raise ValidationError(f"{name}.{exc.field}", exc.problem, exc.fix) from None
    return policy
