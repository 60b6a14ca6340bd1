"""The game statistics a training run logs (the ``game/`` scalars of TensorBoard), counted over the games it plays."""

from __future__ import annotations

import numpy as np

from pedro_env.vector import VectorStep


def tag_of(spec: str) -> str:
    """An agent spec as a TensorBoard tag piece: ``rule:heuristic`` -> ``rule_heuristic``."""
    return "".join(char if char.isalnum() or char in "-_." else "_" for char in spec)


class GameStats:
    """Counts over the deals and matches seen since the last log (what the ``game/`` scalars report).

    ``game/avg_bid`` and ``game/bid_made_rate`` count every deal (whoever bid); ``game/points_per_deal``
    (the policy's team's score change minus the mean of the other teams') and ``game/match_win_rate``
    count the games against opponents (partner games included), since self-play games are zero-sum by
    construction. The same figures per *group* of games (``groups``: ``self``, ``vs <member>``,
    ``with <partner>``) are logged as ``game/<group>/...`` with the policy's bidding table:
    ``contracts`` (share of the scored deals its team was the maker; not for ``self``, where every
    contract is the policy's), ``bid_made_rate`` and ``avg_bid`` of its contracts; a match undecided
    at ``max_deals`` counts as half a win.
    """

    NAMES = ("deals", "bid_total", "bids_made", "bids", "opponent_deals", "margin", "matches", "wins")
    GROUP_NAMES = ("deals", "contracts", "contracts_made", "contract_bids", "margin", "matches", "wins")

    def __init__(self, groups: list[str] | None = None, num_teams: int = 2) -> None:
        """``num_teams``: teams of the games (2, or 3 with three players); a seat's team is ``seat % num_teams``."""
        self.groups = list(groups or [])
        self.num_teams = num_teams
        self.values = dict.fromkeys(self.NAMES, 0.0)
        self.by_group = np.zeros((len(self.groups), len(self.GROUP_NAMES)), dtype=np.float64)

    def record(self, step: VectorStep, learner_team: np.ndarray, group: np.ndarray | None = None) -> None:
        """``learner_team`` (B,): the policy's team in a game against an opponent, -1 in self-play;
        ``group`` (B,): index into ``groups`` of each game."""
        if step.deal_over.any():
            games = np.flatnonzero(step.deal_over & ~step.deals["redeal"])
            bid = step.deals["maker"][games] >= 0
            self.values["deals"] += games.size
            self.values["bids"] += int(bid.sum())
            self.values["bid_total"] += float(step.deals["bid"][games][bid].sum())
            self.values["bids_made"] += int((step.deals["made"][games][bid] == 1).sum())
            against = games[learner_team[games] >= 0]
            if against.size:
                self.values["opponent_deals"] += against.size
                self.values["margin"] += float(self._margins(step.deals["delta"][against], learner_team[against]).sum())
            if group is not None and games.size:
                self._record_group_deals(step, games, learner_team, group)
        ended = np.flatnonzero((step.terminated | step.truncated) & (learner_team >= 0))
        if ended.size:
            won = step.terminated[ended] & (step.deals["winner"][ended] == learner_team[ended])
            self.values["matches"] += ended.size
            self.values["wins"] += int(won.sum())
            if group is not None:
                outcome = np.where(step.terminated[ended], won.astype(np.float64), 0.5)
                np.add.at(self.by_group[:, self.GROUP_NAMES.index("matches")], group[ended], 1.0)
                np.add.at(self.by_group[:, self.GROUP_NAMES.index("wins")], group[ended], outcome)

    def _record_group_deals(
        self, step: VectorStep, games: np.ndarray, learner_team: np.ndarray, group: np.ndarray
    ) -> None:
        deals = step.deals
        team = learner_team[games]
        maker = deals["maker"][games]
        maker_team = np.where(maker >= 0, maker % self.num_teams, -1)
        ours = (maker >= 0) & ((team < 0) | (maker_team == team))  # self-play: every contract is the policy's
        margin = np.where(team >= 0, self._margins(deals["delta"][games], np.maximum(team, 0)), 0.0)
        rows = group[games]
        columns = {
            "deals": np.ones(games.size),
            "contracts": ours.astype(np.float64),
            "contracts_made": (ours & (deals["made"][games] == 1)).astype(np.float64),
            "contract_bids": np.where(ours, deals["bid"][games], 0).astype(np.float64),
            "margin": margin,
        }
        for name, values in columns.items():
            np.add.at(self.by_group[:, self.GROUP_NAMES.index(name)], rows, values)

    @staticmethod
    def _margins(deltas: np.ndarray, team: np.ndarray) -> np.ndarray:
        """(G,) float64: team ``team[g]``'s score change in ``deltas`` (G, T) less the mean of the other teams'."""
        deltas = deltas.astype(np.float64)
        own = deltas[np.arange(team.size), team]
        return own - (deltas.sum(axis=1) - own) / (deltas.shape[1] - 1)

    def scalars(self) -> dict[str, float]:
        values = self.values
        out = {}
        if values["bids"]:
            out["game/avg_bid"] = values["bid_total"] / values["bids"]
            out["game/bid_made_rate"] = values["bids_made"] / values["bids"]
        if values["opponent_deals"]:
            out["game/points_per_deal"] = values["margin"] / values["opponent_deals"]
        if values["matches"]:
            out["game/match_win_rate"] = values["wins"] / values["matches"]
        for name, row in zip(self.groups, self.by_group):
            deals, contracts, made, bid_total, margin, matches, wins = row
            tag = f"game/{tag_of(name.replace(' ', '_'))}"
            if deals and name != "self":  # in self-play every contract is the policy's
                out[f"{tag}/contracts"] = contracts / deals
                out[f"{tag}/points_per_deal"] = margin / deals
            if contracts:
                out[f"{tag}/bid_made_rate"] = made / contracts
                out[f"{tag}/avg_bid"] = bid_total / contracts
            if matches:
                out[f"{tag}/match_win_rate"] = wins / matches
        return out

    def to_array(self) -> np.ndarray:
        """(len(NAMES) + groups * len(GROUP_NAMES),) float64: the counts, as :meth:`from_array` reads them."""
        return np.concatenate([[self.values[name] for name in self.NAMES], self.by_group.ravel()])

    def from_array(self, counts: np.ndarray) -> GameStats:
        """Statistics of this one's groups holding the ``counts`` of :meth:`to_array` (e.g. summed over ranks)."""
        out = GameStats(self.groups, self.num_teams)
        out.values = dict(zip(self.NAMES, counts[: len(self.NAMES)].tolist()))
        out.by_group = np.asarray(counts[len(self.NAMES) :], dtype=np.float64).reshape(self.by_group.shape).copy()
        return out

    @classmethod
    def merged(cls, parts: list[GameStats]) -> GameStats:
        """The counts of several statistics of the same groups added up (every rule set's games of a mix)."""
        return parts[0].from_array(np.sum([part.to_array() for part in parts], axis=0))

    def clear(self) -> None:
        self.values = dict.fromkeys(self.NAMES, 0.0)
        self.by_group[:] = 0.0
