"""The search agents: ``search:pimc`` (perfect-information Monte Carlo in the play phase) and ``search:full``
(sampled look-ahead for bids, trumps and discards, PIMC in the play).

One concern a module, imports pointing down the list:

- :mod:`~agents.search.tables`: card sets as Python ints (bit ``card`` per member), and the lookups the
  compiled search reads besides the engine's rule tables, built once per variant and trump;
- :mod:`~pedro_env.knowledge`: what the viewer knows about the cards it has not seen, from the
  public view alone (:class:`HiddenCards`, :func:`hidden_cards`);
- :mod:`~pedro_env.deal_sampler`: deals of the unseen cards drawn uniformly among the consistent ones
  (:class:`HandSampler`);
- :mod:`~agents.search.values`, :mod:`~agents.search.move_order`, :mod:`~agents.search.transposition`:
  what the trick search counts (:class:`DealScoring`, the point cards still held), the cards a node tries
  in order, its transposition table;
- :mod:`~agents.search.solver`: alpha-beta over the remaining tricks of one known deal
  (:class:`TrickSearch`), compiled over the engine's kernels (:mod:`pedro_env.kernels`: legal plays, the
  trick winner, deal scoring);
- :mod:`~agents.search.agent`: the agent that puts them together (:class:`PimcAgent`);
- :mod:`~agents.search.worlds`: engine states consistent with a view before play (:func:`sample_worlds`),
  weighted by the auction (:func:`auction_weights`);
- :mod:`~agents.search.rollout`: those worlds played to the end of the deal in one engine batch
  (:func:`play_out`);
- :mod:`~agents.search.lookahead`: the look-ahead agent (:class:`LookaheadAgent`), built on the three above
  and on :class:`PimcAgent` for the play.

Seats are relative to the viewer (``0`` = me, ``1`` my left, ...), teams likewise (``0`` = mine).
"""

from __future__ import annotations

from agents.search.agent import PimcAgent, SearchStats, current_trick
from agents.search.lookahead import LookaheadAgent, LookaheadStats, turn_digest
from agents.search.solver import TrickSearch
from agents.search.tables import NO_LEAD, card_list, search_tables
from agents.search.values import POINT_BITS, DealScoring
from pedro_env.deal_sampler import HandSampler, SamplingError
from pedro_env.knowledge import HiddenCards, hidden_cards

__all__ = [
    "NO_LEAD",
    "POINT_BITS",
    "DealScoring",
    "HandSampler",
    "HiddenCards",
    "LookaheadAgent",
    "LookaheadStats",
    "PimcAgent",
    "SamplingError",
    "SearchStats",
    "TrickSearch",
    "card_list",
    "current_trick",
    "hidden_cards",
    "search_tables",
    "turn_digest",
]
