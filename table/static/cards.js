// Cards and suits drawn as inline SVG (no images, no fonts needed for the suit shapes).
//
// A card is a two-character string: rank `23456789TJQKA` then suit `CDHS` ("AH", "TS"); T shows as 10.
// A card's SVG uses a 70 x 100 viewBox; its shown size comes from CSS (`.card` width and height), so
// the same drawing serves the hand (70 x 100 px) and the small cards elsewhere.

const SVG_NS = "http://www.w3.org/2000/svg";

export const SUIT_NAMES = { C: "Clubs", D: "Diamonds", H: "Hearts", S: "Spades" };
export const SUIT_SYMBOLS = { C: "\u2663", D: "\u2666", H: "\u2665", S: "\u2660" };
const RED_SUITS = new Set(["D", "H"]);
const RED_INK = "#c62828";
const BLACK_INK = "#1b1b1b";

// Suit outlines in a 100 x 100 box, as path data (the club is three circles and a stem, nonzero fill).
const SUIT_PATHS = {
  D: "M50 2 L88 50 L50 98 L12 50 Z",
  H: "M50 94 C22 72 2 54 2 30 C2 13 15 3 29 3 C40 3 47 10 50 19 C53 10 60 3 71 3 C85 3 98 13 98 30 " +
    "C98 54 78 72 50 94 Z",
  S: "M50 2 C78 26 98 42 98 62 C98 77 87 86 74 86 C64 86 57 81 53 73 C54 85 58 93 67 98 L33 98 " +
    "C42 93 46 85 47 73 C43 81 36 86 26 86 C13 86 2 77 2 62 C2 42 22 26 50 2 Z",
  C: "M50 4 a23 23 0 1 1 -0.1 0 Z M25 40 a23 23 0 1 1 -0.1 0 Z M75 40 a23 23 0 1 1 -0.1 0 Z " +
    "M45 52 C46 76 41 88 31 98 L69 98 C59 88 54 76 55 52 Z",
};

let backPatternCount = 0; // each back gets its own pattern id, so a card never depends on another's defs

/** The SVG element `name` with attributes `attributes` (all set as strings). */
function svgElement(name, attributes = {}) {
  const element = document.createElementNS(SVG_NS, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, String(value));
  return element;
}

export function cardRank(card) {
  return card[0] === "T" ? "10" : card[0];
}

export function cardSuit(card) {
  return card[1];
}

export function suitColour(suit) {
  return RED_SUITS.has(suit) ? RED_INK : BLACK_INK;
}

/** Plain text for a card, e.g. "10♥" (for titles, labels and logs). */
export function cardText(card) {
  return cardRank(card) + SUIT_SYMBOLS[cardSuit(card)];
}

/** A suit shape as an SVG `<path>` fitted in the square (x, y, size) of the parent SVG's coordinates. */
function suitPath(suit, x, y, size, rotate = false) {
  const scale = size / 100;
  let transform = `translate(${x} ${y}) scale(${scale})`;
  if (rotate) transform = `rotate(180 ${x + size / 2} ${y + size / 2}) ` + transform;
  return svgElement("path", { d: SUIT_PATHS[suit], fill: suitColour(suit), transform });
}

/** A standalone suit icon (an inline `<svg class="suit-icon">` of `size` px), for buttons and labels. */
export function suitIcon(suit, size = 16) {
  const icon = svgElement("svg", { viewBox: "0 0 100 100", width: size, height: size, class: "suit-icon" });
  icon.setAttribute("aria-label", SUIT_NAMES[suit]);
  icon.appendChild(suitPath(suit, 0, 0, 100));
  return icon;
}

/** The face of `card` as an `<svg>` (viewBox 70 x 100): corners with rank and suit, a large suit in the middle,
 * a framed letter for the court cards. */
function cardFace(card) {
  const rank = cardRank(card);
  const suit = cardSuit(card);
  const ink = suitColour(suit);
  const face = svgElement("svg", { viewBox: "0 0 70 100", class: "card-svg", "aria-hidden": "true" });
  face.appendChild(svgElement("rect", { x: 0.75, y: 0.75, width: 68.5, height: 98.5, rx: 6, fill: "#fff",
    stroke: "#8a8a8a", "stroke-width": 1.5 }));
  for (const corner of [false, true]) {
    const group = svgElement("g", corner ? { transform: "rotate(180 35 50)" } : {});
    const label = svgElement("text", { x: 9, y: 17, "text-anchor": "middle", fill: ink, class: "card-rank",
      "font-size": rank === "10" ? 13 : 15, "letter-spacing": rank === "10" ? -1.2 : 0 });
    label.textContent = rank;
    group.appendChild(label);
    group.appendChild(suitPath(suit, 3.5, 20, 11));
    face.appendChild(group);
  }
  if ("JQK".includes(rank)) {
    face.appendChild(svgElement("rect", { x: 17, y: 15, width: 36, height: 70, rx: 3, fill: RED_SUITS.has(suit) ?
      "#fdecea" : "#eceff4", stroke: ink, "stroke-width": 1 }));
    const letter = svgElement("text", { x: 35, y: 51, "text-anchor": "middle", fill: ink, "font-size": 26,
      "font-weight": 700, class: "card-rank" });
    letter.textContent = rank;
    face.appendChild(letter);
    face.appendChild(suitPath(suit, 26, 58, 18));
  } else {
    const size = rank === "A" ? 38 : 30;
    face.appendChild(suitPath(suit, 35 - size / 2, 50 - size / 2, size));
  }
  return face;
}

/** A face-down card's `<svg>`: a blue back with a diamond lattice inside a white border. */
function cardBack() {
  const patternId = `card-back-${++backPatternCount}`;
  const back = svgElement("svg", { viewBox: "0 0 70 100", class: "card-svg", "aria-hidden": "true" });
  const defs = svgElement("defs");
  const pattern = svgElement("pattern", { id: patternId, width: 8, height: 8, patternUnits: "userSpaceOnUse",
    patternTransform: "rotate(45)" });
  pattern.appendChild(svgElement("rect", { width: 8, height: 8, fill: "#1f4f8f" }));
  pattern.appendChild(svgElement("rect", { width: 4, height: 4, fill: "#2f6bb8" }));
  pattern.appendChild(svgElement("circle", { cx: 6, cy: 6, r: 1, fill: "#9cc0ee" }));
  defs.appendChild(pattern);
  back.appendChild(defs);
  back.appendChild(svgElement("rect", { x: 0.75, y: 0.75, width: 68.5, height: 98.5, rx: 6, fill: "#fff",
    stroke: "#8a8a8a", "stroke-width": 1.5 }));
  back.appendChild(svgElement("rect", { x: 5, y: 5, width: 60, height: 90, rx: 3.5, fill: `url(#${patternId})` }));
  return back;
}

/** A card as a `<div class="card" data-card="AH">` holding its SVG face, or a face-down `<div class="card back">`
 * when `card` is null. `size` ("hand", "small" or "tiny") picks the CSS size class. */
export function cardElement(card, size = "small") {
  const element = document.createElement("div");
  element.className = `card card-${size}`;
  if (card === null) {
    element.classList.add("back");
    element.appendChild(cardBack());
  } else {
    element.dataset.card = card;
    element.title = `${cardRank(card)} of ${SUIT_NAMES[cardSuit(card)].toLowerCase()}`;
    element.appendChild(cardFace(card));
  }
  return element;
}

/** An action string as DOM nodes: "play AH" becomes "play A♥" with the suit in its colour, "trump H" shows
 * the suit, others stay text. */
export function actionNodes(action) {
  const span = document.createElement("span");
  span.className = "action-text";
  const [verb, argument] = action.split(" ");
  if ((verb === "play" || verb === "discard") && argument && argument.length === 2) {
    span.append(verb + " ");
    span.appendChild(cardSpan(argument));
  } else if (verb === "trump" && argument in SUIT_NAMES) {
    span.append("trump ");
    span.appendChild(suitSpan(argument));
  } else {
    span.textContent = action;
  }
  return span;
}

/** "A♥" as a `<span class="card-name">` in the suit's colour. */
export function cardSpan(card) {
  const span = document.createElement("span");
  span.className = `card-name suit-${cardSuit(card)}`;
  span.textContent = cardText(card);
  return span;
}

/** "♥ Hearts" as a `<span class="suit-name">` in the suit's colour. */
export function suitSpan(suit, withName = false) {
  const span = document.createElement("span");
  span.className = `suit-name suit-${suit}`;
  span.textContent = withName ? `${SUIT_SYMBOLS[suit]} ${SUIT_NAMES[suit]}` : SUIT_SYMBOLS[suit];
  return span;
}
