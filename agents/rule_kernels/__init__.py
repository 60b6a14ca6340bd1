"""The rule agents' decisions as compiled kernels, read straight from the observation bytes.

:class:`agents.rule_based.RuleBasedAgent` packs a config's card tables and a personality into two arrays
(:func:`pack_rule_inputs`: ``ints`` int64 at the ``A_*`` offsets, ``floats`` float64 at the ``W_*`` offsets)
and calls :func:`rule_actions`, which decides one game at a time from its observation row and mask row
(several agents of one config at once: :class:`agents.rule_based.RuleAgentGroup` stacks their arrays).
A kernel reads only the observation (the pieces of :data:`pedro_env.observation_layout.PIECES`, at the
starts ``pieces``) and the mask, so it sees what the seat may see and nothing else. The rules themselves
are docs/agents.md's; the float arithmetic keeps numpy's order (pairwise sums:
:func:`agents.rule_kernels.inputs.pairwise_sum`), so the decisions are those recorded from the numpy agents in
tests/golden/rule_decisions.npz. With ``NUMBA_DISABLE_JIT=1`` every kernel runs as plain Python.
"""

from pathlib import Path

from pedro_env.kernels.cache import register_kernel_sources

register_kernel_sources(*Path(__file__).parent.glob("*.py"))  # before the first kernel of the package

from agents.rule_kernels.bidding import capture_feature_rows  # noqa: E402 - after the registration
from agents.rule_kernels.decide import hand_estimates, rule_actions, rule_discards  # noqa: E402
from agents.rule_kernels.inputs import pack_rule_inputs  # noqa: E402

__all__ = ["capture_feature_rows", "hand_estimates", "pack_rule_inputs", "rule_actions", "rule_discards"]
