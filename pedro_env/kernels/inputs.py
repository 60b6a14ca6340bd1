"""The kernels' inputs: where each state field lies, the config's switches, and everything a config fixes.

- ``buf`` (bytes) and ``eo`` (int64 per state field): the state, every field one contiguous block of
  ``buf`` in :class:`pedro_env.state.PedroState` field order (``F_*``, from :data:`pedro_env.state.FIELD_INDEX`),
  starting at element ``eo[F]`` of the buffer viewed as that field's dtype
  (:func:`pedro_env.kernels.bits.typed_views`).
- ``params`` (int64, ``P_*`` below): the config's rule switches and sizes, from :func:`config_params`.
- ``tab`` (int64, ``T_*`` of :mod:`pedro_env.cards`): the variant's lookup tables flattened.
- ``pieces`` (int64, ``O_*``, from :data:`pedro_env.observation_layout.PIECE_INDEX`): each observation piece's start.
- ``rules`` (int64, 2): the observation's ``rules`` piece of the config
  (:func:`pedro_env.observation_layout.rules_entries`) as its flags' bits (bit ``i``: entry ``i``) and its last
  entry, ``min_bid`` (:func:`rules_statics`).
- ``statics``: params, pieces, the to_go cap, rules and tab in one array (:func:`pack_statics`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from pedro_env.kernels.cache import announce_compiling
from pedro_env.observation_layout import PIECE_INDEX, PIECES, RULES_WIDTH
from pedro_env.state import FIELD_INDEX

# state fields, in PedroState order
F_SEED = FIELD_INDEX["seed"]
F_MATCH_INDEX = FIELD_INDEX["match_index"]
F_DEAL_INDEX = FIELD_INDEX["deal_index"]
F_PHASE = FIELD_INDEX["phase"]
F_ACTOR = FIELD_INDEX["actor"]
F_DEALER = FIELD_INDEX["dealer"]
F_HANDS = FIELD_INDEX["hands"]
F_STOCK = FIELD_INDEX["stock"]
F_IN_STOCK = FIELD_INDEX["in_stock"]
F_BIDS = FIELD_INDEX["bids"]
F_HIGH_BID = FIELD_INDEX["high_bid"]
F_MAKER = FIELD_INDEX["maker"]
F_TRUMP = FIELD_INDEX["trump"]
F_DISCARDS = FIELD_INDEX["discards"]
F_DONE = FIELD_INDEX["done"]
F_DRAWN = FIELD_INDEX["drawn"]
F_OPEN_DRAWS = FIELD_INDEX["open_draws"]
F_SET_ASIDE = FIELD_INDEX["set_aside"]
F_ROBBING = FIELD_INDEX["robbing"]
F_TRICK = FIELD_INDEX["trick"]
F_TRICK_LEADER = FIELD_INDEX["trick_leader"]
F_TRICK_SIZE = FIELD_INDEX["trick_size"]
F_TRICKS_DONE = FIELD_INDEX["tricks_done"]
F_LAST_TRICK = FIELD_INDEX["last_trick"]
F_LAST_TRICK_WINNER = FIELD_INDEX["last_trick_winner"]
F_PLAYED = FIELD_INDEX["played"]
F_VOIDS = FIELD_INDEX["voids"]
F_WON = FIELD_INDEX["won"]
F_LOW_TEAM = FIELD_INDEX["low_team"]
F_SCORES = FIELD_INDEX["scores"]
F_DEAL_OVER = FIELD_INDEX["deal_over"]
F_LAST_REDEAL = FIELD_INDEX["last_redeal"]
F_LAST_MAKER = FIELD_INDEX["last_maker"]
F_LAST_BID = FIELD_INDEX["last_bid"]
F_LAST_TRUMP = FIELD_INDEX["last_trump"]
F_LAST_POINTS = FIELD_INDEX["last_points"]
F_LAST_MADE = FIELD_INDEX["last_made"]
F_LAST_DELTA = FIELD_INDEX["last_delta"]
F_LAST_RENEGE = FIELD_INDEX["last_renege"]
F_REWARDS = FIELD_INDEX["rewards"]
F_TERMINATED = FIELD_INDEX["terminated"]
F_TRUNCATED = FIELD_INDEX["truncated"]
F_WINNER = FIELD_INDEX["winner"]

# config params
(
    P_PLAYERS,
    P_TEAMS,
    P_STOCK,
    P_HAND,
    P_MIN_BID,
    P_TOTAL,
    P_DEALER_FORCED,
    P_SIX_CARD,
    P_REFILL,
    P_SIMPLE,
    P_LOW_HELD,
    P_RENEGE_PENALTY,
    P_REWARD_WIN,
    P_EPISODE_DEAL,
    P_MAX_DEALS,
    P_TARGET,
) = range(16)
P_TEAM_OF_SEAT = 16  # n entries
NUM_PARAMS = 20
REFILL_CODES = {"maker_sorted": 0, "top": 1, "dealer_robs": 2}
REFILL_MAKER_SORTED, REFILL_TOP, REFILL_ROBS = 0, 1, 2

# observation pieces, indices into the ``pieces`` array
O_HAND = PIECE_INDEX["hand"]
O_OPEN_DRAWS = PIECE_INDEX["open_draws"]
O_DISCARDS = PIECE_INDEX["discards"]
O_SET_ASIDE = PIECE_INDEX["set_aside"]
O_PLAYED = PIECE_INDEX["played"]
O_TRICK = PIECE_INDEX["trick"]
O_WON = PIECE_INDEX["won"]
O_PHASE = PIECE_INDEX["phase"]
O_DEALER = PIECE_INDEX["dealer"]
O_BIDS = PIECE_INDEX["bids"]
O_MAKER = PIECE_INDEX["maker"]
O_TRUMP = PIECE_INDEX["trump"]
O_DONE = PIECE_INDEX["done"]
O_DRAWN = PIECE_INDEX["drawn"]
O_HAND_SIZES = PIECE_INDEX["hand_sizes"]
O_STOCK_LEFT = PIECE_INDEX["stock_left"]
O_ROBBING = PIECE_INDEX["robbing"]
O_TRICK_LEADER = PIECE_INDEX["trick_leader"]
O_VOIDS = PIECE_INDEX["voids"]
O_TRICKS_DONE = PIECE_INDEX["tricks_done"]
O_POINTS = PIECE_INDEX["points"]
O_TO_GO = PIECE_INDEX["to_go"]
O_TARGET = PIECE_INDEX["target"]
O_RULES = PIECE_INDEX["rules"]
NUM_PIECES = len(PIECES)


def config_params(config) -> np.ndarray:
    """(NUM_PARAMS,) int64 of a PedroConfig, for the kernels (every env builds these before its first step)."""
    announce_compiling()
    params = np.zeros(NUM_PARAMS, dtype=np.int64)
    params[P_PLAYERS] = config.num_players
    params[P_TEAMS] = config.num_teams
    params[P_STOCK] = config.stock_size
    params[P_HAND] = config.hand_size
    params[P_MIN_BID] = config.min_bid
    params[P_TOTAL] = config.total_points
    params[P_DEALER_FORCED] = config.all_pass == "dealer_forced"
    params[P_SIX_CARD] = config.six_card
    params[P_REFILL] = REFILL_CODES[config.refill]
    params[P_SIMPLE] = config.scoring == "simple"
    params[P_LOW_HELD] = config.low == "held"
    params[P_RENEGE_PENALTY] = config.renege == "penalty"
    params[P_REWARD_WIN] = config.reward == "win"
    params[P_EPISODE_DEAL] = config.episode == "deal"
    params[P_MAX_DEALS] = config.max_deals
    params[P_TARGET] = config.target_score
    params[P_TEAM_OF_SEAT : P_TEAM_OF_SEAT + config.num_players] = config.team_of_seat
    params.setflags(write=False)
    return params


# ---------------------------------------------------------------- one array of a config's constant inputs


S_PIECES = NUM_PARAMS  # statics: params, the observation's piece starts, the to_go cap, the rules, the tables
S_TO_GO_CAP = S_PIECES + NUM_PIECES
S_RULES = S_TO_GO_CAP + 1
S_TABLE = S_RULES + 2


def rules_statics(entries: np.ndarray) -> np.ndarray:
    """(2,) int64 of the ``rules`` piece's (RULES_WIDTH,) entries: its 0/1 flags as bits, then its last entry."""
    flags = entries[: RULES_WIDTH - 1].astype(np.int64)
    return np.array([int((flags << np.arange(flags.size)).sum()), int(entries[-1])], dtype=np.int64)


def pack_statics(
    params: np.ndarray, pieces: np.ndarray, to_go_cap: int, rules: np.ndarray, tab: np.ndarray
) -> np.ndarray:
    """Everything a config fixes, in one int64 array (one kernel argument instead of five)."""
    statics = np.concatenate([params, pieces, np.array([to_go_cap], dtype=np.int64), rules, tab]).astype(np.int64)
    statics.setflags(write=False)
    return statics


@njit(cache=True, inline="always")
def unpack_statics(statics):
    """(params, tab, pieces, to_go_cap, rules) views of :func:`pack_statics`'s array."""
    return (
        statics[:NUM_PARAMS],
        statics[S_TABLE:],
        statics[S_PIECES:S_TO_GO_CAP],
        statics[S_TO_GO_CAP],
        statics[S_RULES:S_TABLE],
    )
