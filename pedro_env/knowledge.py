"""What the searcher knows about the cards it has not seen, read from the public view alone.

:func:`hidden_cards` turns one game of a :class:`~pedro_env.view.PublicView`
(:func:`pedro_env.view.decode_observations`, nothing else) in the play phase into
:class:`HiddenCards` constraints: the cards the viewer has not seen, how many unknown cards each
other seat holds, the cards it knows a seat holds (the maker's face-up draws), the effective suits
each seat has shown void in, which cards the dead stock can hold, and how many trumps a seat's
unknown cards can include (at most / at least). Seats are relative to the viewer (``0`` = me, ``1``
my left, ...); card sets are Python ints (bit ``card`` set per member).
"""

from __future__ import annotations

from dataclasses import dataclass

from pedro_env.cards import HAND_AT_PLAY, RuleTables
from pedro_env.view import PublicView


@dataclass
class HiddenCards:
    """Constraints on the cards the viewer has not seen, for one game in the play phase.

    Locations are the other seats ``1 .. n-1`` (relative) and the dead stock (cards that never came
    into play). Lists indexed by relative seat have an unused entry 0 (the viewer's own hand is known).
    """

    unseen: int  # card set: every card the viewer has not seen (other hands' unknown cards + dead stock)
    known: list[int]  # per seat: cards known to be in that hand (the maker's unplayed face-up draws)
    hidden_counts: list[int]  # per seat: unknown cards in that hand (hand size minus known cards)
    forbidden: list[int]  # per seat: cards the seat cannot hold (effective suits it has shown void in)
    trump_caps: list[int]  # per seat: the most trumps its unknown cards can include
    trump_floors: list[int]  # per seat: the fewest trumps its unknown cards can include (the kept_trumps belief)
    dead_count: int  # cards in the dead stock
    dead_forbidden: int  # cards the dead stock cannot hold (every trump when the refill set them aside)
    trumps: int  # the trump set of this deal
    suit_sets: list[int]  # the card set of each effective suit 0..3

    @property
    def num_players(self) -> int:
        return len(self.known)

    def violations(self, hands: list[int]) -> list[str]:
        """Every constraint a full deal breaks (``hands[seat]`` for seats 1..n-1, the own hand ignored), [] if none."""
        problems = []
        n = self.num_players
        placed = 0
        for seat in range(1, n):
            hand = hands[seat]
            if hand & placed:
                problems.append(f"seat {seat} shares cards with another hand")
            placed |= hand
            if self.known[seat] & ~hand:
                problems.append(f"seat {seat} lacks a known card")
            unknown = hand & ~self.known[seat]
            if unknown & ~self.unseen:
                problems.append(f"seat {seat} holds a seen card")
            if unknown.bit_count() != self.hidden_counts[seat]:
                problems.append(
                    f"seat {seat} holds {unknown.bit_count()} unknown cards, not {self.hidden_counts[seat]}"
                )
            if hand & self.forbidden[seat]:
                problems.append(f"seat {seat} holds a card of a suit it showed void in")
            if (unknown & self.trumps).bit_count() > self.trump_caps[seat]:
                problems.append(f"seat {seat} holds more than {self.trump_caps[seat]} unknown trumps")
            if (unknown & self.trumps).bit_count() < self.trump_floors[seat]:
                problems.append(f"seat {seat} holds fewer than {self.trump_floors[seat]} unknown trumps")
        dead = self.unseen & ~placed
        if dead & self.dead_forbidden:
            problems.append("the dead stock holds a card it cannot hold")
        if dead.bit_count() != self.dead_count:
            problems.append(f"the dead stock holds {dead.bit_count()} cards, not {self.dead_count}")
        return problems


def hidden_cards(view: PublicView, game: int, tables: RuleTables, kept_trumps: bool = False) -> HiddenCards:
    """The :class:`HiddenCards` of game ``game`` of a view in the play phase (relative seats).

    Inferences, each from public facts only:

    - the maker's face-up draws (``open_draws``) stay in the maker's hand until played;
    - a seat that played off-suit without trumping holds no card of that effective suit (``voids``);
    - refill ``maker_sorted``/``top`` (not ``six_card``): every trump left in the stock after the
      refill was set aside face up, so the dead stock holds no trump; ``dealer_robs``: the dealer took
      the whole stock, so there is no dead stock (the counts give 0); ``six_card``: the stock was
      never seen and may hold anything;
    - refill ``maker_sorted``: if the maker drew more cards than its face-up trumps, the stock had no
      trump left when the maker drew, so the maker's face-down draws and every later drawer's draws
      (turn order eldest .. dealer) are non-trumps: such a seat's hand at play start held at least that
      many non-trumps, which caps the trumps among its unknown cards (:func:`_trump_caps`).

    With ``kept_trumps`` one belief about the players is added (not a rule: it holds for players who
    discard their non-trumps first, as the rule-based agents and sensible people do): a player who
    said done while the reservation rule still allowed another discard, or who discarded a trump,
    kept only trumps, so its hand at play start held at least its kept cards in trumps (the robbing
    dealer who discarded a trump kept six trumps). That floors the trumps among its unknown cards
    (:func:`_kept_trump_floors`).
    """
    config = view.config
    n = config.num_players
    trump = int(view.trump[game])
    trumps = int(tables.trump_set[trump])
    suit_sets = [int(cards) for cards in tables.suit_set[trump]]
    unseen = _unseen(view, game)
    maker = int(view.maker[game])
    played = [int(x) for x in view.played[game]]
    open_draws = int(view.open_draws[game])
    known = [0] * n
    if maker > 0:
        known[maker] = open_draws & ~played[maker]
    sizes = [int(x) for x in view.hand_sizes[game]]
    hidden_counts = [0] + [sizes[seat] - known[seat].bit_count() for seat in range(1, n)]
    void_bits = [int(x) for x in view.voids[game]]
    forbidden = [0] * n
    for seat in range(1, n):
        for suit in range(4):
            if void_bits[seat] >> suit & 1:
                forbidden[seat] |= suit_sets[suit]
    trump_caps = _trump_caps(view, game, trumps, played, hidden_counts)
    trump_floors = _kept_trump_floors(view, game, trumps, played, trump_caps) if kept_trumps else [0] * n
    dead_count = unseen.bit_count() - sum(hidden_counts)
    dead_forbidden = trumps if (config.refill != "dealer_robs" and not config.six_card) else 0
    return HiddenCards(
        unseen=unseen,
        known=known,
        hidden_counts=hidden_counts,
        forbidden=forbidden,
        trump_caps=trump_caps,
        trump_floors=trump_floors,
        dead_count=dead_count,
        dead_forbidden=dead_forbidden,
        trumps=trumps,
        suit_sets=list(suit_sets),
    )


def _trump_caps(view: PublicView, game: int, trumps: int, played: list[int], hidden_counts: list[int]) -> list[int]:
    """Per relative seat, the most trumps its unknown cards can include: its ``hidden_counts`` entry, less
    the face-down non-trumps it still holds under refill ``maker_sorted`` (see :func:`hidden_cards`)."""
    config = view.config
    n = config.num_players
    maker = int(view.maker[game])
    trump_caps = list(hidden_counts)
    if config.refill != "maker_sorted" or config.six_card or maker < 0:
        return trump_caps
    drawn = [int(x) for x in view.drawn[game]]
    face_up = int(view.open_draws[game]).bit_count()
    if drawn[maker] > face_up:  # the maker found no more trumps in the stock
        dealer = int(view.dealer[game])
        draw_turn = [(seat - dealer - 1) % n for seat in range(n)]  # eldest draws first
        for seat in range(1, n):
            if draw_turn[seat] < draw_turn[maker]:
                continue
            face_down_non_trumps = drawn[seat] - (face_up if seat == maker else 0)
            non_trumps_played = (played[seat] & ~trumps).bit_count()
            still_hidden = max(0, face_down_non_trumps - non_trumps_played)
            trump_caps[seat] = max(0, hidden_counts[seat] - still_hidden)
    return trump_caps


def _kept_trump_floors(view: PublicView, game: int, trumps: int, played: list[int], trump_caps: list[int]) -> list[int]:
    """Per relative seat, the fewest trumps its unknown cards can include under the ``kept_trumps`` belief
    (see :func:`hidden_cards`): the trumps it kept less those it has played from its hand at play start,
    at most its cap; all 0 under ``six_card`` or before there is a maker."""
    config = view.config
    n = config.num_players
    trump_floors = [0] * n
    if config.six_card or int(view.maker[game]) < 0:
        return trump_floors
    open_draws = int(view.open_draws[game])
    floors = _kept_trump_counts(view, game, trumps)
    for seat in range(1, n):
        from_start_hand = (played[seat] & trumps & ~open_draws).bit_count()
        trump_floors[seat] = max(0, min(floors[seat] - from_start_hand, trump_caps[seat]))
    return trump_floors


def _kept_trump_counts(view: PublicView, game: int, trumps: int) -> list[int]:
    """Per relative seat, the trumps its hand kept through the discard under the ``kept_trumps`` belief
    (see :func:`hidden_cards`); 0 where the belief says nothing. The reservation rule is replayed from
    the public discard counts: no card is drawn before everyone (the robbing dealer apart) is done."""
    config = view.config
    n = config.num_players
    dealer = int(view.dealer[game])
    discards = [int(x) for x in view.discards[game]]
    kept_trumps = [0] * n
    reserved = 0
    for offset in range(1, n + 1):  # eldest first, the dealer last
        seat = (dealer + offset) % n
        if config.refill == "dealer_robs" and seat == dealer:
            kept_trumps[seat] = HAND_AT_PLAY if discards[seat] & trumps else 0
            continue
        kept = config.hand_size - discards[seat].bit_count()
        could_discard_more = kept > 0 and reserved + (HAND_AT_PLAY - (kept - 1)) <= config.stock_size
        if could_discard_more or discards[seat] & trumps:
            kept_trumps[seat] = kept
        reserved += HAND_AT_PLAY - kept
    return kept_trumps


def _unseen(view: PublicView, game: int) -> int:
    """Cards of game ``game`` the viewer has not seen (as :meth:`PublicView.unseen`, for one game)."""
    seen = int(view.hand[game]) | int(view.open_draws[game]) | int(view.set_aside[game])
    for seat in range(view.config.num_players):
        seen |= int(view.discards[game, seat]) | int(view.played[game, seat])
    return ((1 << 52) - 1) & ~seen
