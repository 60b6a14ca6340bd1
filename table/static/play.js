// Play mode: the setup form, a match against the agents, the move log, deal summaries and the match result.
//
// The page decides no rule: it offers exactly the server's `view.legal` actions and shows the Match it gets back.
// Every request about the match goes through one queue, so two never run at once; the agents' moves come one
// per POST .../advance, `pace` ms apart, and a new match (or leaving play mode) stops that loop.

import { ApiError, clearError, requestJson, requestText, showError } from "./api.js";
import { actionNodes, suitIcon, SUIT_NAMES } from "./cards.js";
import { createBoard, dealSummaryText, renderDealHistory, teamNames } from "./board.js";
import { setupForm } from "./setup.js";

const THINKING_DELAY_MS = 150; // an advance slower than this shows #thinking
const SUMMARY_PAUSE_MS = 2500; // a deal summary holds the agents this long at pace 600 (scaled with the pace)
const RETRY_BUSY_MS = 1500; // after a 409/503 the loop tries again this much later

function element(tag, className = "", text = null) {
  const made = document.createElement(tag);
  if (className) made.className = className;
  if (text !== null) made.textContent = text;
  return made;
}

function button(action, label, className = "move-button") {
  const made = element("button", className);
  made.type = "button";
  made.dataset.action = action;
  if (typeof label === "string") made.textContent = label;
  else made.append(...label);
  return made;
}

/** Play mode wired to the page; `analysis` is the shared analysis panel, `onWatchRecord(text)` opens a record in
 * the viewer. */
export function createPlay({ analysis, onWatchRecord }) {
  const byId = (id) => document.getElementById(id);
  const setupElement = byId("setup-form");
  const playArea = byId("play-area");
  const moveLog = byId("move-log");
  const paceInput = byId("pace");
  const paceLive = byId("pace-live");
  const board = createBoard(byId("table-host"), { ids: true });

  const thinking = element("div", "thinking");
  thinking.id = "thinking";
  thinking.hidden = true;
  board.centre.appendChild(thinking);
  const dealSummary = element("div", "deal-summary overlay-panel");
  dealSummary.id = "deal-summary";
  dealSummary.hidden = true;
  const matchResult = element("div", "match-result overlay-panel");
  matchResult.id = "match-result";
  matchResult.hidden = true;
  board.overlay.append(dealSummary, matchResult);

  const state = {
    kinds: new Map(), // agent name -> kind (random, rule, search, policy)
    match: null,
    token: 0, // bumped by every new match: answers and timers of an older one are dropped
    queue: Promise.resolve(),
    pending: 0, // requests queued or running
    timer: null,
    selected: [], // cards chosen for discarding, in click order
    dealsSeen: 0,
    summaryUntil: 0, // Date.now() until which an open deal summary holds the agents
    paused: false, // true while the page shows another mode
    resignArmed: false,
  };

  const setup = setupForm({
    onOptions: (options) => {
      for (const agent of options.agents) state.kinds.set(agent.name, agent.kind);
    },
    onStart: startMatch,
  });

  /** Run `task` after every request already queued for the match; its failure is shown, never thrown. */
  function enqueue(task) {
    countPending(+1);
    const run = state.queue.then(task).finally(() => countPending(-1));
    state.queue = run.catch(() => {});
    return run;
  }

  /** Requests queued or running, also on <body data-pending> (tests wait for "0" before they look). */
  function countPending(change) {
    state.pending += change;
    document.body.dataset.pending = String(state.pending);
  }

  function pace() {
    const value = Number.parseInt(paceLive.value, 10);
    return Number.isFinite(value) && value >= 0 ? value : 600;
  }

  async function startMatch(bodyText) {
    clearError();
    const match = await requestJson("POST", "/api/matches", bodyText);
    state.token++;
    clearTimeout(state.timer);
    state.match = null;
    state.selected = [];
    state.dealsSeen = 0;
    state.summaryUntil = 0;
    paceLive.value = paceInput.value || "600";
    moveLog.replaceChildren();
    dealSummary.hidden = true;
    matchResult.hidden = true;
    analysis.clear("Click a move, or analyse your current decision.");
    setupElement.hidden = true;
    playArea.hidden = false;
    apply(match);
  }

  /** Take `match` (a Match answer) as the state of the table and draw it. */
  function apply(match) {
    const previous = state.match;
    if (match.decisions_from > 0 && previous && previous.id === match.id) {
      // the server sent the decisions from `since` on: the earlier ones are those already held
      match.decisions = previous.decisions.slice(0, match.decisions_from).concat(match.decisions);
    }
    state.match = match;
    const deals = match.view.deals;
    if (deals.length > state.dealsSeen) {
      showDealSummary(deals[deals.length - 1]);
      state.summaryUntil = Date.now() + SUMMARY_PAUSE_MS * (pace() / 600);
    }
    state.dealsSeen = deals.length;
    const legal = new Set(match.view.legal);
    state.selected = state.selected.filter((card) => legal.has(`discard ${card}`));
    render(previous);
    schedule();
  }

  /** The address of a change to the current match, asking only for the decisions the page does not hold yet. */
  function matchUrl(change) {
    return `/api/matches/${state.match.id}/${change}?since=${state.match.decisions.length}`;
  }

  function legalCards(match) {
    const cards = new Map();
    if (match.status !== "your_turn") return cards;
    for (const action of match.view.legal) {
      const [verb, card] = action.split(" ");
      if ((verb === "play" || verb === "discard") && card) cards.set(card, action);
    }
    return cards;
  }

  function render(previous = null) {
    const match = state.match;
    board.render(match.view, {
      players: match.players,
      youSeat: match.seat,
      bottomSeat: match.seat,
      shownSeat: null,
      highlightSeat: match.status === "over" ? null : match.view.actor, // a resigned match keeps its actor
      legalCards: legalCards(match),
      selected: new Set(state.selected),
      onCardClick: cardClicked,
    });
    renderActions(match);
    renderMoveLog(match, previous);
    renderDealHistory(byId("deal-history"), match.view.deals);
    renderResult(match);
    showThinking(match, false);
    const over = match.status === "over";
    byId("resign").hidden = over;
    byId("watch-last").hidden = !over;
    byId("download-record").href = `/api/matches/${encodeURIComponent(match.id)}/record`;
    const notes = byId("match-notes");
    notes.textContent = (match.notes ?? []).join(" ");
    notes.hidden = !notes.textContent;
    byId("match-status").textContent = over ? "match over" : match.status === "your_turn" ? "your turn" : "agents playing";
  }

  function cardClicked(card, action) {
    if (action.startsWith("play ")) {
      sendMoves([action]);
    } else if (action.startsWith("discard ")) {
      const at = state.selected.indexOf(card);
      if (at >= 0) state.selected.splice(at, 1);
      else state.selected.push(card);
      render();
    }
  }

  function renderActions(match) {
    const slot = board.actions;
    slot.replaceChildren();
    if (match.status !== "your_turn") return;
    const legal = match.view.legal;
    const phase = match.view.phase;
    const row = element("div", "action-row");
    if (legal.some((action) => action === "pass" || action.startsWith("bid "))) {
      const group = element("div", "button-group");
      group.id = "bid-buttons";
      group.appendChild(element("span", "prompt", "Your bid:"));
      for (const action of legal) {
        if (action === "pass") group.appendChild(button(action, "Pass", "move-button pass-button"));
        else if (action.startsWith("bid ")) group.appendChild(button(action, action.slice(4)));
      }
      row.appendChild(group);
    } else if (legal.some((action) => action.startsWith("trump "))) {
      const group = element("div", "button-group");
      group.id = "trump-buttons";
      group.appendChild(element("span", "prompt", "Name trumps:"));
      for (const action of legal.filter((each) => each.startsWith("trump "))) {
        const suit = action.slice(6);
        group.appendChild(button(action, [suitIcon(suit, 18), ` ${SUIT_NAMES[suit] || suit}`], "move-button trump-button"));
      }
      row.appendChild(group);
    } else if (phase === "discard" || legal.includes("done")) {
      const group = element("div", "button-group");
      const count = state.selected.length;
      const canDiscard = legal.some((action) => action.startsWith("discard "));
      group.appendChild(element("span", "prompt", canDiscard ? "Click the cards to discard, then:" : "Nothing to discard:"));
      const label = count > 0 ? `Discard ${count} and done` : "Done";
      const done = button(count > 0 ? "discard" : "done", label, "move-button primary");
      done.id = "discard-done";
      done.disabled = count === 0 && !legal.includes("done");
      group.appendChild(done);
      row.appendChild(group);
    } else if (legal.some((action) => action.startsWith("play "))) {
      row.appendChild(element("span", "prompt", match.view.trick.length === 0 ? "Your lead: click a card." : "Your play: click a card."));
    }
    const analyse = element("button", "small-button", "Analyse this decision");
    analyse.type = "button";
    analyse.id = "analyse-current";
    row.appendChild(analyse);
    slot.appendChild(row);
  }

  board.actions.addEventListener("click", (event) => {
    const target = event.target.closest("button");
    if (!target || target.disabled || !state.match) return;
    if (target.id === "analyse-current") {
      analyseDecision(state.match.decisions.length, true);
    } else if (target.id === "discard-done") {
      const discards = state.selected.map((card) => `discard ${card}`);
      sendMoves(discards.length ? [...discards, "done?"] : ["done"]);
    } else if (target.dataset.action) {
      sendMoves([target.dataset.action]);
    }
  });

  /** Send `actions` in order, each after the previous answer; "done?" sends done only if the new view lists it.
   * The first refusal stops the rest and shows its message. */
  function sendMoves(actions) {
    const token = state.token;
    dealSummary.hidden = true;
    state.summaryUntil = 0;
    clearError();
    for (const button of board.actions.querySelectorAll("button")) button.disabled = true;
    enqueue(async () => {
      for (const action of actions) {
        if (token !== state.token) return;
        let text = action;
        if (action === "done?") {
          if (state.match.status !== "your_turn" || !state.match.view.legal.includes("done")) break;
          text = "done";
        }
        const match = await requestJson("POST", matchUrl("move"), { action: text });
        if (token !== state.token) return;
        apply(match);
      }
    }).catch((error) => {
      showError(error);
      if (token === state.token && state.match) render();
    });
  }

  /** After `pace` ms (longer while a deal summary holds the table) ask for one agent move, if it is their turn. */
  function schedule(delay = null) {
    clearTimeout(state.timer);
    const match = state.match;
    if (!match || match.status !== "agent_turn" || state.paused) return;
    let wait = delay ?? pace();
    if (!dealSummary.hidden && state.summaryUntil > Date.now()) wait = Math.max(wait, state.summaryUntil - Date.now());
    const token = state.token;
    state.timer = setTimeout(() => advance(token), wait);
  }

  function advance(token) {
    if (token !== state.token || state.pending > 0 || state.paused) {
      if (token === state.token && state.pending > 0) state.queue.then(() => schedule());
      return;
    }
    enqueue(async () => {
      const match = state.match;
      if (token !== state.token || match.status !== "agent_turn" || state.paused) return;
      const slow = setTimeout(() => { thinking.hidden = false; }, THINKING_DELAY_MS);
      try {
        const answer = await requestJson("POST", matchUrl("advance"));
        if (token === state.token) apply(answer);
      } catch (error) {
        if (token !== state.token) return;
        showError(error);
        if (error instanceof ApiError && (error.status === 409 || error.status === 503)) schedule(RETRY_BUSY_MS);
      } finally {
        clearTimeout(slow);
        if (token === state.token) showThinking(state.match, false);
      }
    });
  }

  /** #thinking names the agent to move: shown at once for a search agent, else when `slow` (a pending advance). */
  function showThinking(match, slow) {
    const actor = match.view.actor;
    if (match.status !== "agent_turn" || actor === null) {
      thinking.hidden = true;
      return;
    }
    const name = match.players[actor];
    thinking.textContent = `P${actor} (${name}) is thinking\u2026`;
    thinking.hidden = !(slow || state.kinds.get(name) === "search");
  }

  function renderMoveLog(match, previous) {
    const reveal = previous && previous.status !== "over" && match.status === "over"; // thoughts shown at the end
    if (reveal || moveLog.childElementCount > match.decisions.length) moveLog.replaceChildren();
    for (let index = moveLog.childElementCount; index < match.decisions.length; index++) {
      const decision = match.decisions[index];
      const item = element("li", `seat-${decision.seat}`);
      item.dataset.decision = String(decision.index);
      item.dataset.seat = String(decision.seat);
      const before = match.decisions[index - 1];
      if (!before || before.deal !== decision.deal) {
        item.classList.add("deal-start");
        item.dataset.deal = String(decision.deal);
      }
      if (decision.seat === match.seat) item.classList.add("mine");
      item.appendChild(element("span", "log-seat", decision.seat === match.seat ? "You" : `P${decision.seat}`));
      item.append(" ");
      item.appendChild(actionNodes(decision.action));
      if (decision.thoughts) item.appendChild(element("span", "log-thoughts", "\u03c0"));
      item.title = "Analyse this decision";
      moveLog.appendChild(item);
    }
    if (match.decisions.length) moveLog.lastElementChild.scrollIntoView({ block: "nearest" });
  }

  moveLog.addEventListener("click", (event) => {
    const item = event.target.closest("li[data-decision]");
    if (item && state.match) analyseDecision(Number(item.dataset.decision), false);
  });

  /** Ask for the analysis of decision `index` of the current match (`current`: the person's pending one). */
  function analyseDecision(index, current) {
    const match = state.match;
    for (const item of moveLog.querySelectorAll("li.active")) item.classList.remove("active");
    moveLog.querySelector(`li[data-decision="${index}"]`)?.classList.add("active");
    const decision = match.decisions[index];
    const title = element("span");
    if (current || !decision) {
      title.textContent = `Your decision now (decision ${index + 1})`;
    } else {
      title.append(`Decision ${index + 1}: P${decision.seat} `);
      title.appendChild(actionNodes(decision.action));
    }
    const url = `/api/matches/${encodeURIComponent(match.id)}/analysis?decision=${index}`;
    analysis.show({
      decision: index,
      title,
      load: (search) => enqueue(() => requestJson("GET", url + (search ? "&search=1" : ""))),
    });
  }

  function showDealSummary(deal) {
    const match = state.match;
    const names = teamNames(match.players, match.view.scores.length, match.seat);
    dealSummary.replaceChildren();
    dealSummary.appendChild(element("h3", "", `Deal ${deal.number}`));
    if (deal.redeal) {
      dealSummary.appendChild(element("p", "", "Everybody passed: the deal is thrown in."));
    } else {
      const outcome = deal.made ? "made it" : deal.made === false ? "was set" : "";
      const line = element("p", "deal-outcome " + (deal.made ? "made" : "set"));
      line.append(`P${deal.maker} (${match.players[deal.maker]}) bid ${deal.bid} in `);
      if (deal.trump) line.appendChild(suitIcon(deal.trump, 14));
      line.append(` and ${outcome}.`);
      dealSummary.appendChild(line);
      const table = element("table", "deal-table");
      const head = element("tr");
      head.append(element("th", "", ""), element("th", "", "points"), element("th", "", "change"), element("th", "", "score"));
      table.appendChild(head);
      names.forEach((name, team) => {
        const row = element("tr", `team-${team}`);
        const delta = deal.delta[team];
        row.append(element("td", "", name), element("td", "", String(deal.points[team])),
          element("td", delta < 0 ? "negative" : "", (delta > 0 ? "+" : "") + delta), element("td", "", String(deal.scores[team])));
        table.appendChild(row);
      });
      dealSummary.appendChild(table);
    }
    dealSummary.appendChild(element("p", "deal-line", dealSummaryText(deal)));
    const close = element("button", "primary", "Continue");
    close.type = "button";
    close.id = "deal-summary-close";
    close.addEventListener("click", () => {
      dealSummary.hidden = true;
      state.summaryUntil = 0;
      schedule(0);
    });
    dealSummary.appendChild(close);
    dealSummary.hidden = false;
  }

  function renderResult(match) {
    if (match.status !== "over") {
      matchResult.hidden = true;
      return;
    }
    dealSummary.hidden = true; // the result says it all
    const lastDeal = match.view.deals[match.view.deals.length - 1];
    const result = match.result || {};
    const scores = result.scores || match.view.scores;
    const names = teamNames(match.players, scores.length, match.seat);
    let headline;
    if (match.resigned) headline = "You resigned.";
    else if (result.winner === null || result.winner === undefined) headline = "The match ended without a winner.";
    else headline = `${names[result.winner]} ${names[result.winner].includes("&") || names[result.winner] === "You" ||
      names[result.winner] === "Opponents" ? "win" : "wins"}!`;
    matchResult.replaceChildren();
    matchResult.appendChild(element("h3", "", headline));
    const detail = names.map((name, team) => `${name} ${scores[team]}`).join(" \u2013 ");
    const deals = result.deals ? ` after ${result.deals} deal${result.deals === 1 ? "" : "s"}` : "";
    matchResult.appendChild(element("p", "", `Scores: ${detail}${deals}.`));
    if (lastDeal && !match.resigned) matchResult.appendChild(element("p", "deal-line", `Last: ${dealSummaryText(lastDeal)}`));
    const buttons = element("div", "result-buttons");
    const watch = element("button", "primary", "Watch this match");
    watch.type = "button";
    watch.addEventListener("click", watchLast);
    const again = element("button", "", "New match");
    again.type = "button";
    again.addEventListener("click", newMatch);
    const hide = element("button", "", "Show the table");
    hide.type = "button";
    hide.addEventListener("click", () => { matchResult.hidden = true; });
    buttons.append(watch, again, hide);
    matchResult.appendChild(buttons);
    if (!matchResult.dataset.shownFor || matchResult.dataset.shownFor !== match.id) {
      matchResult.hidden = false;
      matchResult.dataset.shownFor = match.id;
    }
  }

  async function watchLast() {
    const match = state.match;
    if (!match) return;
    try {
      const text = await enqueue(() => requestText(`/api/matches/${encodeURIComponent(match.id)}/record`));
      await onWatchRecord(text, `match ${match.id}`);
    } catch (error) {
      showError(error);
    }
  }

  function newMatch() {
    state.token++;
    clearTimeout(state.timer);
    thinking.hidden = true;
    playArea.hidden = true;
    setupElement.hidden = false;
    setup.focus();
  }

  byId("new-match").addEventListener("click", newMatch);
  byId("watch-last").addEventListener("click", watchLast);
  byId("resign").addEventListener("click", () => {
    const resign = byId("resign");
    if (!state.resignArmed) { // a second click within 3 s resigns (no blocking confirm dialog)
      state.resignArmed = true;
      resign.textContent = "Really resign?";
      resign.classList.add("armed");
      setTimeout(() => {
        state.resignArmed = false;
        resign.textContent = "Resign";
        resign.classList.remove("armed");
      }, 3000);
      return;
    }
    state.resignArmed = false;
    resign.textContent = "Resign";
    resign.classList.remove("armed");
    const token = state.token;
    enqueue(async () => {
      const match = await requestJson("POST", matchUrl("resign"));
      if (token === state.token) apply(match);
    }).catch(showError);
  });
  paceLive.addEventListener("change", () => schedule());

  return {
    /** Play mode hidden (false) or shown again (true): the agents wait while the person looks elsewhere. */
    setActive(active) {
      state.paused = !active;
      if (active) {
        if (state.match) schedule();
      } else {
        clearTimeout(state.timer);
      }
    },
  };
}
