// Watch mode (#viewer): step through saved matches, one table or the two halves of a duplicate pair.
//
// A Replay (docs/table.md) holds frames[k], the table before decision k (frames.length = decisions.length + 1:
// the last frame is the end), deal_starts, the frame of each deal's first decision, and the deal summaries once
// (deals: frame k follows the first frames[k].deals_done of them). The viewer keeps one frame index for the shown
// replay (the left one of a pair); the right half of a pair follows it deal by deal, at the same offset into the
// deal, clamped to that deal's frames. Shown numbers are 1-based ("decision 57 of 210", "trick 3"); indices sent
// to the server are 0-based.

import { clearError, requestJson, showError } from "./api.js";
import { actionNodes } from "./cards.js";
import { createBoard, renderDealHistory, seatLabel, teamNames } from "./board.js";

const ANALYSIS_DELAY_MS = 300; // the policy is asked once the frame stays put this long
const PHASE_WORDS = { bid: "bidding", trump: "naming trumps", discard: "discard and draw", play: "play", over: "over" };

function element(tag, className = "", text = null) {
  const made = document.createElement(tag);
  if (className) made.className = className;
  if (text !== null) made.textContent = text;
  return made;
}

/** The index into `replay.deal_starts` of the deal frame `frame` belongs to (0 before the first start). */
function dealIndexOf(replay, frame) {
  let found = 0;
  replay.deal_starts.forEach((start, index) => {
    if (start <= frame) found = index;
  });
  return found;
}

function lastFrame(replay) {
  return replay.frames.length - 1;
}

/** Whether decision `k` starts a trick of the play: (deal, trick) differs from decision k-1's and trick >= 0. */
function startsTrick(replay, k) {
  const decision = replay.decisions[k];
  if (!decision || decision.trick < 0) return false;
  const before = replay.decisions[k - 1];
  return !before || before.deal !== decision.deal || before.trick !== decision.trick;
}

/** "P0 & P2 won: P0 & P2 62, P1 & P3 41 after 9 deals" for a replay's result. */
export function resultText(replay) {
  const result = replay.result;
  if (!result || !result.scores) return "";
  const names = teamNames(replay.players, result.scores.length, null);
  const scores = result.scores.map((score, team) => `${names[team]} ${score}`).join(", ");
  const deals = result.deals ? ` after ${result.deals} deal${result.deals === 1 ? "" : "s"}` : "";
  if (result.winner === null || result.winner === undefined) return `No winner: ${scores}${deals}`;
  return `${names[result.winner]} won: ${scores}${deals}`;
}

/** A frame's label: "Deal 2, trick 3 — decision 57 of 210: P1 play A♥" (nodes, the card in colour). */
function frameLabel(replay, frame) {
  const label = element("span");
  const decision = replay.decisions[frame];
  const total = replay.decisions.length;
  if (!decision) {
    label.textContent = `End of the match \u2014 after decision ${total} of ${total}. ${resultText(replay)}`;
    return label;
  }
  const view = replay.frames[frame];
  const where = decision.trick >= 0 ? `trick ${decision.trick + 1}` : PHASE_WORDS[view.phase] || view.phase;
  label.append(`Deal ${decision.deal}, ${where} \u2014 decision ${frame + 1} of ${total}: P${decision.seat} `);
  label.appendChild(actionNodes(decision.action));
  return label;
}

export function createWatch({ analysis }) {
  const byId = (id) => document.getElementById(id);
  const scrubber = byId("scrubber");
  const jumpDeal = byId("jump-deal");
  const viewSeat = byId("view-seat");
  const scanButton = byId("scan");
  const scanStatus = byId("scan-status");
  const marksStrip = byId("marks-strip");
  const mistakes = byId("mistakes");
  const singleHost = byId("viewer-single");
  const pairView = byId("pair-view");
  const singleBoard = createBoard(singleHost);
  const state = {
    left: null, // the replay shown (the left half of a pair)
    right: null, // the right half of a duplicate pair, or null
    frame: 0,
    rightFrame: 0,
    halves: [], // [{root, board, label, ...}] of the pair view
    marks: [],
    analysisTimer: null,
    active: false,
  };

  const controls = ["first", "last", "prev-decision", "next-decision", "prev-trick", "next-trick", "prev-deal",
    "next-deal", "jump-deal", "view-seat", "scan", "scrubber"].map(byId);
  /** The stepping controls work once a replay is open. */
  function enableControls(enabled) {
    for (const control of controls) control.disabled = !enabled;
  }
  enableControls(false);
  byId("replay-info").textContent = "No match open.";

  /** Open record texts ([{text, name}]) as replays; two halves of one duplicate pair open side by side. */
  async function openRecords(records) {
    clearError();
    const opened = [];
    for (const { text, name } of records) {
      try {
        opened.push(await requestJson("POST", "/api/replays", text));
      } catch (error) {
        showError(new Error(`${name}: ${error.message}`));
      }
    }
    if (opened.length === 0) return;
    const newest = opened[opened.length - 1];
    const partner = opened.length >= 2 ? opened[opened.length - 2] : state.right ? null : state.left;
    if (partner && partner.id !== newest.id && newest.pair_key && partner.pair_key === newest.pair_key) {
      show(partner, newest);
    } else {
      show(newest, null);
    }
  }

  function show(left, right) {
    state.left = left;
    state.right = right;
    state.frame = 0;
    state.rightFrame = 0;
    state.marks = [];
    byId("viewer-empty").hidden = true;
    enableControls(true);
    singleHost.hidden = right !== null;
    pairView.hidden = right === null;
    if (right) buildPair();
    scrubber.max = String(lastFrame(left));
    jumpDeal.replaceChildren(...left.deal_starts.map((start, index) => {
      const option = element("option", "", `Deal ${index + 1}`);
      option.value = String(index);
      return option;
    }));
    const seatBefore = viewSeat.value;
    viewSeat.replaceChildren(element("option", "", "all open"));
    viewSeat.firstChild.value = "all";
    left.players.forEach((name, seat) => {
      const option = element("option", "", `P${seat} only`);
      option.value = String(seat);
      option.title = name;
      viewSeat.appendChild(option);
    });
    viewSeat.value = [...viewSeat.options].some((option) => option.value === seatBefore) ? seatBefore : "all";
    renderInfo();
    scanStatus.textContent = "";
    scanButton.disabled = false;
    renderMarks();
    goTo(0);
  }

  function buildPair() {
    pairView.replaceChildren();
    state.halves = [state.left, state.right].map((replay, index) => {
      const root = element("div", "pair-half");
      root.dataset.half = String(index);
      const head = element("div", "pair-head");
      head.appendChild(element("div", "pair-players", replay.players.map((name, seat) => `P${seat} ${name}`).join(" \u00b7 ")));
      head.appendChild(element("div", "pair-result", resultText(replay)));
      const label = element("div", "pair-label");
      root.append(head, label);
      const board = createBoard(root, { compact: true });
      pairView.appendChild(root);
      return { root, board, label, replay };
    });
  }

  function renderInfo() {
    const info = byId("replay-info");
    info.replaceChildren();
    const replays = state.right ? [state.left, state.right] : [state.left];
    replays.forEach((replay, index) => {
      const block = element("div", "replay-block");
      if (state.right) block.appendChild(element("div", "replay-half-name", index === 0 ? "Left table" : "Right table"));
      const list = element("ul", "replay-players");
      replay.players.forEach((name, seat) => list.appendChild(element("li", `seat-${seat}`, seatLabel(seat, replay.players, null))));
      block.appendChild(list);
      const facts = [`source: ${replay.source || "?"}`, `seed: ${replay.seed ?? "?"}`, `${replay.decisions.length} decisions`];
      block.appendChild(element("div", "replay-facts", facts.join(" \u00b7 ")));
      block.appendChild(element("div", "replay-result", resultText(replay)));
      info.appendChild(block);
    });
  }

  /** The frame of the right half that goes with frame `frame` of the left: same deal, same offset, clamped. */
  function rightFrameFor(frame) {
    const { left, right } = state;
    const deal = dealIndexOf(left, frame);
    if (deal >= right.deal_starts.length) return lastFrame(right);
    const start = right.deal_starts[deal];
    const end = deal + 1 < right.deal_starts.length ? right.deal_starts[deal + 1] - 1 : lastFrame(right);
    const offset = frame - (left.deal_starts[deal] ?? 0);
    return Math.max(start, Math.min(end, start + offset));
  }

  function goTo(frame) {
    if (!state.left) return;
    state.frame = Math.max(0, Math.min(lastFrame(state.left), frame));
    if (state.right) state.rightFrame = rightFrameFor(state.frame);
    render();
  }

  function boardOptions(replay, frame) {
    const decision = replay.decisions[frame];
    const seat = viewSeat.value === "all" ? null : Number(viewSeat.value);
    return {
      players: replay.players,
      youSeat: null,
      bottomSeat: seat ?? 0,
      shownSeat: seat,
      highlightSeat: decision ? decision.seat : null,
      chosen: decision ? { seat: decision.seat, action: decision.action } : null,
    };
  }

  function render() {
    const { left, frame } = state;
    const view = left.frames[frame];
    if (state.right) {
      const frames = [frame, state.rightFrame];
      state.halves.forEach((half, index) => {
        half.board.render(half.replay.frames[frames[index]], boardOptions(half.replay, frames[index]));
        half.label.replaceChildren(frameLabel(half.replay, frames[index]));
      });
    } else {
      singleBoard.render(view, boardOptions(left, frame));
    }
    byId("frame-label").replaceChildren(frameLabel(left, frame));
    scrubber.value = String(frame);
    if (left.deal_starts.length) jumpDeal.value = String(dealIndexOf(left, frame));
    renderDealHistory(byId("viewer-deal-history"), left.deals.slice(0, view.deals_done));
    for (const item of mistakes.querySelectorAll("li")) item.classList.toggle("active", Number(item.dataset.decision) === frame);
    for (const mark of marksStrip.querySelectorAll(".mark")) mark.classList.toggle("active", Number(mark.dataset.decision) === frame);
    scheduleAnalysis();
  }

  function scheduleAnalysis() {
    clearTimeout(state.analysisTimer);
    const { left, frame } = state;
    const decision = left.decisions[frame];
    if (!decision) {
      analysis.clear("The end of the match: no decision here.");
      return;
    }
    if (analysis.subject?.decision !== frame || analysis.subject?.replay !== left.id) {
      analysis.clear(`Decision ${frame + 1}\u2026`); // no stale figures while the frame moves
    }
    state.analysisTimer = setTimeout(() => {
      if (!state.active || state.left !== left || state.frame !== frame) return;
      const title = element("span");
      title.append(`${state.right ? "Left table, d" : "D"}ecision ${frame + 1}: P${decision.seat} `);
      title.appendChild(actionNodes(decision.action));
      const url = `/api/replays/${encodeURIComponent(left.id)}/analysis?decision=${frame}`;
      analysis.show({ decision: frame, replay: left.id, title, load: (search) => requestJson("GET", url + (search ? "&search=1" : "")) });
    }, ANALYSIS_DELAY_MS);
  }

  // ---------------------------------------------------------------- stepping
  const steps = {
    "first": () => 0,
    "last": () => lastFrame(state.left),
    "prev-decision": () => state.frame - 1,
    "next-decision": () => state.frame + 1,
    "prev-trick": () => {
      for (let k = state.frame - 1; k >= 0; k--) if (startsTrick(state.left, k)) return k;
      return 0;
    },
    "next-trick": () => {
      for (let k = state.frame + 1; k < state.left.decisions.length; k++) if (startsTrick(state.left, k)) return k;
      return lastFrame(state.left);
    },
    "prev-deal": () => [...state.left.deal_starts].reverse().find((start) => start < state.frame) ?? 0,
    "next-deal": () => state.left.deal_starts.find((start) => start > state.frame) ?? lastFrame(state.left),
  };
  for (const [id, target] of Object.entries(steps)) {
    byId(id).addEventListener("click", () => {
      if (state.left) goTo(target());
    });
  }
  scrubber.addEventListener("input", () => goTo(Number(scrubber.value)));
  jumpDeal.addEventListener("change", () => {
    if (state.left) goTo(state.left.deal_starts[Number(jumpDeal.value)] ?? 0);
  });
  viewSeat.addEventListener("change", () => {
    if (state.left) render();
  });
  document.addEventListener("keydown", (event) => {
    if (!state.active || !state.left || event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.target.closest("input, select, textarea")) return; // the scrubber steps by itself
    const moves = { ArrowLeft: state.frame - 1, ArrowRight: state.frame + 1, Home: 0, End: lastFrame(state.left) };
    if (event.key in moves) {
      event.preventDefault();
      goTo(moves[event.key]);
    }
  });

  byId("record-file").addEventListener("change", async (event) => {
    const files = [...event.target.files];
    const records = await Promise.all(files.map(async (file) => ({ text: await file.text(), name: file.name })));
    event.target.value = ""; // choosing the same file again opens it again
    await openRecords(records);
  });

  // ---------------------------------------------------------------- mistakes
  scanButton.addEventListener("click", async () => {
    const replay = state.left;
    if (!replay) return;
    scanButton.disabled = true;
    scanStatus.textContent = "scanning\u2026 (the search weighs every decision: tens of seconds)";
    try {
      const answer = await requestJson("POST", `/api/replays/${encodeURIComponent(replay.id)}/scan`);
      if (state.left !== replay) return;
      state.marks = answer.marks || [];
      scanStatus.textContent = `${answer.scanned} decisions weighed, ${state.marks.length} marked`;
      renderMarks();
    } catch (error) {
      if (state.left === replay) scanStatus.textContent = "scan failed";
      showError(error);
    } finally {
      if (state.left === replay) scanButton.disabled = false;
    }
  });

  function markText(mark) {
    const decision = state.left.decisions[mark.decision];
    const action = mark.action || decision?.action || "?";
    let text = `Decision ${mark.decision + 1}: P${mark.seat} ${action} loses ${Number(mark.loss).toFixed(1)} points`;
    if (mark.best) text += ` (best: ${mark.best})`;
    return text;
  }

  function renderMarks() {
    marksStrip.replaceChildren();
    mistakes.replaceChildren();
    if (!state.left) return;
    const span = Math.max(1, lastFrame(state.left));
    for (const mark of state.marks) {
      const node = element("button", `mark seat-${mark.seat}` + (mark.loss >= 3 ? " big" : ""));
      node.type = "button";
      node.dataset.decision = String(mark.decision);
      node.style.left = `${(mark.decision / span) * 100}%`;
      node.title = markText(mark);
      node.addEventListener("click", () => goTo(mark.decision));
      marksStrip.appendChild(node);
      const item = element("li", `seat-${mark.seat}`);
      item.dataset.decision = String(mark.decision);
      const decision = state.left.decisions[mark.decision];
      item.append(`Deal ${decision?.deal ?? "?"} \u00b7 P${mark.seat} `);
      item.appendChild(actionNodes(mark.action || decision?.action || "?"));
      item.appendChild(element("span", "mistake-loss", `\u2212${Number(mark.loss).toFixed(1)}`));
      if (mark.best) {
        const best = element("span", "mistake-best", "best ");
        best.appendChild(actionNodes(mark.best));
        item.appendChild(best);
      }
      item.title = markText(mark);
      item.addEventListener("click", () => goTo(mark.decision));
      mistakes.appendChild(item);
    }
    if (state.marks.length === 0) {
      mistakes.appendChild(element("li", "mistakes-empty", scanStatus.textContent.includes("weighed")
        ? "No decision loses a point or more." : "Click \u201cFind mistakes\u201d to let the search weigh every decision."));
    }
  }

  return {
    openRecords,
    /** Watch mode shown (true) or hidden (false). */
    setActive(active) {
      state.active = active;
      if (active && state.left) scheduleAnalysis();
      if (active && !state.left) analysis.clear("Open a record to analyse its decisions.");
    },
  };
}
