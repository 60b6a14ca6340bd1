// The setup form (#setup-form), filled from GET /api/options.
//
// Agents: [{name, kind, about, players, unfit}]; rules: [{key, default, choices | min/max, about}]. A rule with
// choices gets a <select> whose option i stands for choices[i] (so booleans and ints keep their JSON type); a
// min/max rule a number input. The match request sends only the rules changed from their defaults.
// The seat pickers offer the agents that play the chosen number of players; the others stay listed, disabled,
// their reason (`unfit`) as the title. With 2 or 3 players there is no partner; with 3 the scoring is simple.

import { requestJson, showError } from "./api.js";

const DEFAULT_AGENT = "rule:heuristic";
const KIND_LABELS = { random: "Random", rule: "Rule-based", search: "Search", policy: "Trained policies" };

function element(tag, className = "", text = null) {
  const made = document.createElement(tag);
  if (className) made.className = className;
  if (text !== null) made.textContent = text;
  return made;
}

/** A rule's "about" line as plain text (the server writes ``code`` the reStructuredText way). */
function plainAbout(about) {
  return (about || "").replaceAll("``", "");
}

/** How many opponents a table of `players` seats has: two against a partnership of 4, every other seat else. */
export function opponentCount(players) {
  return players === 4 ? 2 : players - 1;
}

/** Wire the form: `onOptions(options)` once they arrive, `onStart(bodyText)` (may throw) when the person starts. */
export function setupForm({ onOptions, onStart }) {
  const byId = (id) => document.getElementById(id);
  const form = byId("setup-form");
  const seatSelect = byId("seat");
  const partner = byId("partner");
  const opponents = [byId("opponent-0"), byId("opponent-1")];
  const rulesBox = byId("rules-box");
  const about = byId("agent-about");
  const start = byId("start");
  let rules = [];
  let agents = [];

  function fillAgents(select) {
    select.replaceChildren();
    const groups = new Map();
    for (const agent of agents) {
      if (!groups.has(agent.kind)) {
        const group = element("optgroup");
        group.label = KIND_LABELS[agent.kind] || agent.kind;
        groups.set(agent.kind, group);
        select.appendChild(group);
      }
      const option = element("option", "", agent.name);
      option.value = agent.name;
      option.title = agent.about;
      groups.get(agent.kind).appendChild(option);
    }
    if (agents.some((agent) => agent.name === DEFAULT_AGENT)) select.value = DEFAULT_AGENT;
  }

  /** Enable in `select` the agents that play `players` seats, disable the others (their reason as the title), and
   * move a selection that no longer fits to the default agent. */
  function fitAgents(select, players) {
    for (const option of select.querySelectorAll("option")) {
      const agent = agents.find((each) => each.name === option.value);
      const plays = !agent || !Array.isArray(agent.players) || agent.players.includes(players);
      option.disabled = !plays;
      option.title = plays ? agent?.about ?? "" : `does not play ${players} players: ${agent.unfit}`;
    }
    const chosen = select.querySelector(`option[value="${CSS.escape(select.value)}"]`);
    if (!chosen || chosen.disabled) select.value = DEFAULT_AGENT;
  }

  /** Three-player Pedro scores simple only: fix the scoring control there, free it at other sizes. */
  function fitScoring(players) {
    const rule = rules.find((each) => each.key === "scoring");
    const control = rulesBox.querySelector('[data-rule="scoring"]');
    if (!rule || !control) return;
    const simple = rule.choices.indexOf("simple");
    if (players === 3 && simple >= 0) control.value = String(simple);
    control.disabled = players === 3;
    control.title = players === 3 ? "three-player Pedro scores simple only" : "";
  }

  function ruleControl(rule) {
    let control;
    if (Array.isArray(rule.choices)) {
      control = element("select");
      rule.choices.forEach((choice, index) => {
        const option = element("option", "", String(choice));
        option.value = String(index);
        control.appendChild(option);
      });
      control.value = String(Math.max(0, rule.choices.indexOf(rule.default)));
    } else {
      control = element("input");
      control.type = "number";
      control.step = "1";
      if (rule.min !== undefined) control.min = String(rule.min);
      if (rule.max !== undefined) control.max = String(rule.max);
      control.value = String(rule.default);
    }
    control.dataset.rule = rule.key;
    return control;
  }

  function fillRules() {
    rulesBox.replaceChildren();
    for (const rule of rules) {
      const label = element("label", "field rule-field");
      label.title = plainAbout(rule.about);
      label.appendChild(element("span", "field-name", rule.key.replaceAll("_", " ")));
      label.appendChild(ruleControl(rule));
      rulesBox.appendChild(label);
    }
    const players = rulesBox.querySelector('[data-rule="num_players"]');
    if (players) players.addEventListener("change", seatsChanged);
  }

  /** A rule control's typed value: the choice it stands for, or the integer typed (NaN if none). */
  function ruleValue(rule) {
    const control = rulesBox.querySelector(`[data-rule="${rule.key}"]`);
    if (Array.isArray(rule.choices)) return rule.choices[Number(control.value)];
    return Number.parseInt(control.value, 10);
  }

  function playerCount() {
    const rule = rules.find((each) => each.key === "num_players");
    return rule ? ruleValue(rule) : 4;
  }

  /** Re-fill the seats and show the partner and opponent selects a table of the chosen size has. */
  function seatsChanged() {
    const players = playerCount();
    const previous = Number.parseInt(seatSelect.value, 10) || 0;
    seatSelect.replaceChildren();
    for (let seat = 0; seat < players; seat++) {
      const option = element("option", "", `P${seat}`);
      option.value = String(seat);
      seatSelect.appendChild(option);
    }
    seatSelect.value = String(previous < players ? previous : 0);
    const hasPartner = players === 4;
    byId("partner-row").hidden = !hasPartner;
    partner.disabled = !hasPartner;
    const count = opponentCount(players);
    opponents.forEach((select, index) => {
      byId(`opponent-${index}-row`).hidden = index >= count;
      select.disabled = index >= count;
    });
    for (const select of [partner, ...opponents]) fitAgents(select, players);
    fitScoring(players);
    labelOpponents();
  }

  /** Name the opponent selects by the seats they fill: the server gives opponents[i] to the i-th seat, in seat
   * order, outside the person's team (team = seat % teams; 2 teams at 4 players, else one per seat). */
  function labelOpponents() {
    const players = playerCount();
    const teams = players === 4 ? 2 : players;
    const seat = Number.parseInt(seatSelect.value, 10) || 0;
    const others = [];
    for (let other = 0; other < players; other++) if (other % teams !== seat % teams) others.push(other);
    opponents.forEach((select, index) => {
      const name = byId(`opponent-${index}-row`).querySelector(".field-name");
      if (index >= others.length) return;
      const offset = (others[index] - seat + players) % players;
      const place = players === 2 ? "across" : offset === 1 ? "on your left" : offset === players - 1 ? "on your right" : "across";
      name.textContent = `Opponent P${others[index]} (${place})`;
    });
  }

  function showAbout(select) {
    const agent = agents.find((each) => each.name === select.value);
    about.textContent = agent ? `${agent.name}: ${agent.about}` : "";
  }

  /** The POST /api/matches body as JSON text, or throws naming the control that holds no valid value. */
  function matchRequest() {
    const players = playerCount();
    const changed = {};
    for (const rule of rules) {
      const value = ruleValue(rule);
      if (typeof value === "number" && Number.isNaN(value)) throw new Error(`the rule ${rule.key} needs a whole number`);
      if (value !== rule.default) changed[rule.key] = value;
    }
    const seedText = byId("seed").value.trim();
    if (seedText !== "" && !/^\d+$/.test(seedText)) {
      throw new Error("the seed is a whole number from 0 (or empty for a random one)");
    }
    const body = {
      seat: Number.parseInt(seatSelect.value, 10) || 0,
      opponents: opponents.slice(0, opponentCount(players)).map((select) => select.value),
      rules: changed,
      seed: null,
    };
    if (players === 4) body.partner = partner.value;
    // the seed goes as its digits: a JSON number past 2**53 would lose digits through a JS Number
    return JSON.stringify(body).replace('"seed":null', `"seed":${seedText === "" ? "null" : seedText.replace(/^0+(?=\d)/, "")}`);
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    start.disabled = true;
    try {
      await onStart(matchRequest());
    } catch (error) {
      showError(error);
    } finally {
      start.disabled = false;
    }
  });
  seatSelect.addEventListener("change", labelOpponents);
  for (const select of [partner, ...opponents]) {
    select.addEventListener("change", () => showAbout(select));
    select.addEventListener("focus", () => showAbout(select));
  }

  async function load() {
    try {
      const options = await requestJson("GET", "/api/options");
      agents = options.agents || [];
      rules = options.rules || [];
      for (const select of [partner, ...opponents]) fillAgents(select);
      fillRules();
      seatsChanged();
      showAbout(partner);
      onOptions(options);
      start.disabled = false;
    } catch (error) {
      rulesBox.replaceChildren(element("p", "analysis-error", `Cannot load the options: ${error.message}`));
      showError(error);
    }
  }
  load();

  return { focus: () => start.focus() };
}
