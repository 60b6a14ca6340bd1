"""Perfect-information Monte Carlo search for the play phase: the ``search:pimc`` agent.

One concern a module, imports pointing down the list:

- :mod:`~agents.search.tables`: the rule tables as Python ints and lists (card sets are ints, bit
  ``card`` per member), built once per variant and trump;
- :mod:`~agents.search.knowledge`: what the viewer knows about the cards it has not seen, from the
  public view alone (:class:`HiddenCards`, :func:`hidden_cards`);
- :mod:`~agents.search.sampler`: deals of the unseen cards drawn uniformly among the consistent ones
  (:class:`HandSampler`);
- :mod:`~agents.search.solver`: alpha-beta over the remaining tricks of one known deal, and the
  objectives it maximises (:class:`TrickSearch`, :class:`DealScoring`);
- :mod:`~agents.search.agent`: the agent that puts them together (:class:`PimcAgent`).

Seats are relative to the viewer (``0`` = me, ``1`` my left, ...), teams likewise (``0`` = mine).
"""

from __future__ import annotations

from agents.search.agent import PimcAgent, SearchStats, current_trick
from agents.search.knowledge import HiddenCards, hidden_cards
from agents.search.sampler import HandSampler, SamplingError
from agents.search.solver import POINT_BITS, DealScoring, TrickSearch
from agents.search.tables import NO_LEAD, PlayTables, TrumpTables, card_list, play_tables, trump_tables

__all__ = [
    "NO_LEAD",
    "POINT_BITS",
    "DealScoring",
    "HandSampler",
    "HiddenCards",
    "PimcAgent",
    "PlayTables",
    "SamplingError",
    "SearchStats",
    "TrickSearch",
    "TrumpTables",
    "card_list",
    "current_trick",
    "hidden_cards",
    "play_tables",
    "trump_tables",
]
