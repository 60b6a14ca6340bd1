// The table renderer shared by play mode, the replay viewer and the two halves of a duplicate pair.
//
// A board is a felt rectangle laid out as a grid:
//   "tl      top     tr"       corners: scores, deal, phase and the out-of-play cards (tl); the contract (tr)
//   "left    centre  right"    centre: the current trick, each card toward its seat; under the right seat the
//                              stock's size
//   "actions actions actions"  the move buttons play mode puts there
//   "bottom  bottom  bottom"   the seat shown at the bottom (the person, or the viewer's chosen seat)
// Seats sit by position relative to the bottom seat, clockwise: 4 players bottom, left, top, right;
// 3 players bottom, left, right; 2 players bottom, top. Only play mode's board gets the ids of the page
// (#table, #hand, #trick, #scores, ...); every board has the same classes.

import { actionNodes, cardElement, suitIcon, SUIT_NAMES, SUIT_SYMBOLS } from "./cards.js";

const POSITIONS = { 2: ["bottom", "top"], 3: ["bottom", "left", "right"], 4: ["bottom", "left", "top", "right"] };
const PHASE_LABELS = { bid: "Bidding", trump: "Naming trumps", discard: "Discard and draw", play: "Play",
  over: "Match over" };

/** The seat's position ("bottom", "left", ...) at a table of `count` seats seen from `bottomSeat`. */
export function seatPosition(seat, bottomSeat, count) {
  const positions = POSITIONS[count] || POSITIONS[4];
  return positions[(seat - bottomSeat + count) % count] || "top";
}

/** Team names by team index: team t holds the seats s with s % numTeams == t. */
export function teamNames(players, numTeams, youSeat) {
  const count = players.length;
  const names = [];
  for (let team = 0; team < numTeams; team++) {
    const seats = [];
    for (let seat = team; seat < count; seat += numTeams) seats.push(seat);
    if (youSeat !== null && youSeat !== undefined && numTeams < count) {
      names.push(youSeat % numTeams === team ? "You & partner" : "Opponents");
    } else if (seats.length === 1) {
      names.push(seats[0] === youSeat ? "You" : `P${seats[0]} ${players[seats[0]]}`);
    } else {
      names.push(seats.map((seat) => `P${seat}`).join(" & "));
    }
  }
  return names;
}

/** A seat's label: "You (P0)" for the person, else "P1 · rule:heuristic". */
export function seatLabel(seat, players, youSeat) {
  if (seat === youSeat) return `You (P${seat})`;
  return `P${seat} \u00b7 ${players[seat] ?? "?"}`;
}

function element(tag, className = "", text = null) {
  const made = document.createElement(tag);
  if (className) made.className = className;
  if (text !== null) made.textContent = text;
  return made;
}

/** A board inside `root`; `ids` gives its parts the page's ids (play mode only); `compact` draws it smaller. */
export function createBoard(root, { ids = false, compact = false } = {}) {
  const board = element("div", "board" + (compact ? " compact" : ""));
  const part = (className, id, tag = "div") => {
    const made = element(tag, className);
    if (ids && id) made.id = id;
    return made;
  };
  const cornerTopLeft = part("board-corner corner-tl");
  const scores = part("info-scores", "scores");
  const dealLine = part("info-line");
  const dealNumber = part("info-deal", "deal-number", "span");
  const phase = part("info-phase", "phase", "span");
  dealLine.append(dealNumber, phase);
  const outOfPlayBox = element("div", "out-of-play-box");
  const outOfPlayTitle = element("div", "corner-title", "Out of play");
  const outOfPlay = part("out-of-play", "out-of-play");
  outOfPlayBox.append(outOfPlayTitle, outOfPlay);
  cornerTopLeft.append(scores, dealLine, outOfPlayBox);
  const cornerTopRight = part("board-corner corner-tr");
  const contract = part("info-contract", "contract");
  cornerTopRight.append(contract);
  const cornerBottomRight = part("board-corner corner-br");
  const centre = part("board-centre");
  const trick = part("trick", "trick");
  const trickCaption = element("div", "trick-caption");
  centre.append(trick, trickCaption);
  const actions = part("board-actions");
  const overlay = part("board-overlay");
  board.append(cornerTopLeft, cornerTopRight, cornerBottomRight, centre, actions, overlay);
  if (ids) board.id = "table";
  root.appendChild(board);
  let seatElements = [];

  /** Draw `view` (docs/table.md's View). Options:
   *  players (names by seat), youSeat (the person's seat or null), bottomSeat, shownSeat (null: every hand
   *  the view holds face up; a seat: only that one), legalCards (Map card -> action for the bottom hand),
   *  selected (Set of cards), onCardClick(card, action), highlightSeat (default view.actor),
   *  chosen ({seat, action}: the decision taken from this frame), lastTrickFresh (show the last trick). */
  function render(view, options) {
    const players = options.players;
    const count = view.hand_sizes.length;
    const numTeams = view.scores.length;
    const youSeat = options.youSeat ?? null;
    const bottomSeat = options.bottomSeat ?? 0;
    const highlightSeat = options.highlightSeat === undefined ? view.actor : options.highlightSeat;
    const names = teamNames(players, numTeams, youSeat);
    board.dataset.players = String(count);
    seatElements.forEach((seatElement) => seatElement.remove());
    seatElements = [];
    for (let seat = 0; seat < count; seat++) {
      const seatElement = renderSeat(view, seat, seatPosition(seat, bottomSeat, count), numTeams, options);
      seatElement.classList.toggle("actor", seat === highlightSeat);
      seatElements.push(seatElement);
      board.insertBefore(seatElement, overlay);
    }
    renderScores(scores, view, names);
    dealNumber.textContent = `Deal ${view.deal}`;
    phase.textContent = view.phase === "play" && !view.over
      ? `Trick ${Math.min(view.tricks_done + 1, 6)}` : PHASE_LABELS[view.phase] || view.phase;
    renderContract(contract, view);
    outOfPlay.replaceChildren(...view.out_of_play.map((card) => cardElement(card, "tiny")));
    outOfPlayBox.hidden = view.out_of_play.length === 0;
    cornerBottomRight.textContent = typeof view.stock_size === "number" && view.phase !== "play" && !view.over
      ? `Stock: ${view.stock_size} cards` : "";
    renderTrick(view, bottomSeat, count, options.lastTrickFresh ?? true, youSeat);
  }

  function renderSeat(view, seat, position, numTeams, options) {
    const { players, youSeat = null } = options;
    const seatElement = element("div", `seat pos-${position} team-${seat % numTeams}`);
    seatElement.dataset.seat = String(seat);
    const plate = element("div", "seat-plate");
    plate.appendChild(element("span", "seat-name", seatLabel(seat, players, youSeat)));
    if (view.dealer === seat) plate.appendChild(element("span", "chip dealer-chip", "dealer"));
    const bid = view.bids[seat];
    if (bid !== null && bid !== undefined) {
      const bidChip = element("span", "chip bid-chip" + (bid === "pass" ? " passed" : ""));
      bidChip.textContent = bid === "pass" ? "pass" : `bid ${bid}`;
      plate.appendChild(bidChip);
    }
    if (view.maker === seat && view.phase !== "bid") {
      const maker = element("span", "chip maker-chip", "maker ");
      if (view.trump) maker.appendChild(suitIcon(view.trump, 12));
      plate.appendChild(maker);
      seatElement.classList.add("maker");
    }
    seatElement.appendChild(plate);

    const isBottom = position === "bottom";
    const cardsRow = element("div", "seat-cards" + (isBottom ? " hand" : ""));
    if (isBottom && ids) cardsRow.id = "hand";
    const shown = options.shownSeat === null || options.shownSeat === undefined || options.shownSeat === seat;
    const hand = shown ? view.hands[seat] : null;
    const size = isBottom ? "hand" : "small";
    const cards = hand ? hand.map((card) => cardElement(card, size))
      : Array.from({ length: view.hand_sizes[seat] }, () => cardElement(null, size));
    const step = cardStep(cards.length, isBottom, board.classList.contains("compact"));
    cardsRow.style.setProperty("--step", `${step}px`);
    if (isBottom && hand) decorateHand(cards, options);
    cardsRow.append(...cards);
    seatElement.appendChild(cardsRow);

    const extra = element("div", "seat-extra");
    extra.appendChild(element("span", "hand-count", `${view.hand_sizes[seat]} card${view.hand_sizes[seat] === 1 ? "" : "s"}`));
    const discards = view.discards[seat] || [];
    if (discards.length) {
      extra.appendChild(element("span", "extra-label", "discarded"));
      const row = element("div", "seat-discards");
      row.append(...discards.map((card) => cardElement(card, "tiny")));
      extra.appendChild(row);
    }
    if (view.drawn && view.drawn[seat] > 0) extra.appendChild(element("span", "extra-label", `drew ${view.drawn[seat]}`));
    seatElement.appendChild(extra);

    const chosen = options.chosen;
    if (chosen && chosen.seat === seat) {
      seatElement.classList.add("chooser");
      const bubble = element("div", "chosen-bubble");
      bubble.appendChild(actionNodes(chosen.action));
      seatElement.appendChild(bubble);
      const card = chosen.action.split(" ")[1];
      if (card && card.length === 2) {
        const target = cards.find((cardNode) => cardNode.dataset.card === card);
        if (target) target.classList.add("chosen");
      }
    }
    return seatElement;
  }

  /** The current trick, each card toward its seat; with no card down yet, the trick just taken (`last_trick`),
   * faded after a moment by CSS. */
  function renderTrick(view, bottomSeat, count, lastTrickFresh, youSeat) {
    let cards = view.trick;
    let winner = null;
    trick.classList.remove("last-trick");
    trickCaption.replaceChildren();
    if (cards.length === 0 && view.last_trick && lastTrickFresh) {
      cards = view.last_trick.cards;
      winner = view.last_trick.winner;
      trick.classList.add("last-trick");
      const who = winner === youSeat ? "You take" : `P${winner} takes`;
      trickCaption.textContent = `${who} the trick`;
    }
    const signature = JSON.stringify([cards, winner, bottomSeat]);
    if (trick.dataset.signature === signature) return; // unchanged: keep the nodes (and the fade's timing)
    trick.dataset.signature = signature;
    trick.replaceChildren();
    for (const { seat, card } of cards) {
      const node = cardElement(card, "small");
      node.classList.add("trick-card", `pos-${seatPosition(seat, bottomSeat, count)}`);
      node.dataset.seat = String(seat);
      if (seat === winner) node.classList.add("winner");
      trick.appendChild(node);
    }
  }

  return { element: board, render, actions, overlay, centre };
}

/** Pixels between the left edges of neighbouring cards in a row of `count` (they overlap when many). */
function cardStep(count, isBottom, compact) {
  const [cardWidth, rowWidth] = isBottom ? (compact ? [46, 300] : [70, 560]) : (compact ? [30, 110] : [46, 170]);
  if (count <= 1) return cardWidth;
  return Math.min(isBottom ? cardWidth + 4 : cardWidth * 0.42, (rowWidth - cardWidth) / (count - 1));
}

/** Mark the bottom hand's cards: legal (clickable) ones, selected ones, and the rest dimmed on the person's turn. */
function decorateHand(cards, options) {
  const legalCards = options.legalCards || new Map();
  const selected = options.selected || new Set();
  for (const cardNode of cards) {
    const card = cardNode.dataset.card;
    const action = legalCards.get(card);
    if (action) {
      cardNode.classList.add("legal");
      cardNode.dataset.action = action;
      cardNode.tabIndex = 0;
      cardNode.setAttribute("role", "button");
      if (options.onCardClick) {
        cardNode.addEventListener("click", () => options.onCardClick(card, action));
        cardNode.addEventListener("keydown", (event) => {
          if (event.key === "Enter" || event.key === " ") {
            event.preventDefault();
            options.onCardClick(card, action);
          }
        });
      }
    } else if (legalCards.size > 0) {
      cardNode.classList.add("dimmed");
    }
    if (selected.has(card)) cardNode.classList.add("selected");
  }
}

function renderScores(container, view, names) {
  container.replaceChildren();
  view.scores.forEach((score, team) => {
    const row = element("div", `score-row team-${team}`);
    row.dataset.team = String(team);
    row.appendChild(element("span", "team-swatch"));
    row.appendChild(element("span", "team-name", names[team]));
    row.appendChild(element("span", "team-score", String(score)));
    if (view.phase === "play" && view.points_won) {
      row.appendChild(element("span", "team-points", `+${view.points_won[team]} this deal`));
    }
    container.appendChild(row);
  });
}

function renderContract(container, view) {
  container.replaceChildren();
  const hasMaker = view.maker !== null && view.maker !== undefined;
  if (view.phase === "bid" && view.high_bid > 0) {
    container.appendChild(element("div", "contract-line", `High bid ${view.high_bid}` + (hasMaker ? ` (P${view.maker})` : "")));
    container.appendChild(element("div", "contract-wait", "bidding goes on"));
  } else if (hasMaker) {
    container.appendChild(element("div", "contract-line", `P${view.maker} bid ${view.high_bid}`));
    if (view.trump) {
      const trump = element("div", "contract-trump");
      trump.appendChild(suitIcon(view.trump, 26));
      trump.appendChild(element("span", "", `${SUIT_NAMES[view.trump]} are trumps`));
      container.appendChild(trump);
    } else {
      container.appendChild(element("div", "contract-wait", "trumps not named yet"));
    }
  } else {
    container.appendChild(element("div", "contract-wait", view.over ? "" : "No bid yet"));
  }
}

/** Numbers per team as "8–6", or "−14 / 12" when one is negative (a dash would read as a minus). */
export function scoreList(numbers) {
  if (numbers.every((number) => number >= 0)) return numbers.join("\u2013");
  return numbers.map((number) => String(number).replace("-", "\u2212")).join(" / ");
}

/** One line for a deal summary (docs/table.md's DealSummary), e.g.
 * "Deal 3: P1 bid 7 in ♥, made; points 8–6; scores 15–4", or "Deal 2: thrown in". */
export function dealSummaryText(deal) {
  if (deal.redeal) return `Deal ${deal.number}: thrown in (everybody passed)`;
  const outcome = deal.made === null || deal.made === undefined ? "" : deal.made ? ", made" : ", set";
  const trump = deal.trump ? ` in ${SUIT_SYMBOLS[deal.trump]}` : "";
  let text = `Deal ${deal.number}: P${deal.maker} bid ${deal.bid}${trump}${outcome}; points ${scoreList(deal.points)}; ` +
    `scores ${scoreList(deal.scores)}`;
  if (deal.renege !== null && deal.renege !== undefined) text += ` (team ${deal.renege} reneged)`;
  return text;
}

/** Fill `list` (an <ol>) with one <li> per deal summary, the newest last. */
export function renderDealHistory(list, deals) {
  if (list.childElementCount === deals.length && list.dataset.count === String(deals.length)) return;
  list.replaceChildren(...deals.map((deal) => {
    const item = element("li", deal.redeal ? "deal-thrown" : deal.made === false ? "deal-set" : "deal-made");
    item.dataset.deal = String(deal.number);
    item.textContent = dealSummaryText(deal);
    return item;
  }));
  list.dataset.count = String(deals.length);
}
