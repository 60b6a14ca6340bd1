// The analysis panel (#analysis): what a policy and the search make of one decision (docs/table.md's Analysis).
//
// A caller hands the panel a subject: {decision, title, load(search) -> Promise<Analysis>}; the panel asks for the
// policy's view at once and for the search's values when #ask-search is clicked. An answer that arrives after the
// subject changed is dropped. The search values are deal points (the mover's team's score change less the
// opponents'); the policy's value is its own estimate in its units.

import { actionNodes } from "./cards.js";

function element(tag, className = "", text = null) {
  const made = document.createElement(tag);
  if (className) made.className = className;
  if (text !== null) made.textContent = text;
  return made;
}

function signed(number, digits = 2) {
  return (number >= 0 ? "+" : "\u2212") + Math.abs(number).toFixed(digits);
}

export function createAnalysisPanel(panel) {
  const title = panel.querySelector(".analysis-title");
  const body = panel.querySelector(".analysis-body");
  const askSearch = panel.querySelector("#ask-search");
  let subject = null;
  let asked = 0; // counts requests: an answer to an older one is dropped

  askSearch.addEventListener("click", () => {
    if (subject) load(true);
  });

  /** Show the analysis of `next` ({decision, title (string or node), load(search)}). */
  function show(next) {
    subject = next;
    title.replaceChildren(next.title);
    askSearch.disabled = false;
    load(false);
  }

  /** Empty the panel, with `message` in place of a decision. */
  function clear(message = "Click a move to analyse it.") {
    subject = null;
    asked++;
    title.textContent = message;
    body.replaceChildren();
    askSearch.disabled = true;
  }

  async function load(search) {
    const request = ++asked;
    const current = subject;
    const status = element("p", "analysis-status", search ? "searching\u2026 (a few seconds)" : "asking the policy\u2026");
    if (search) {
      body.querySelector(".analysis-search")?.remove();
      body.querySelector(".analysis-status")?.remove();
      body.appendChild(status);
      askSearch.disabled = true;
    } else {
      body.replaceChildren(status);
    }
    try {
      const analysis = await current.load(search);
      if (request !== asked) return;
      renderAnalysis(analysis, search);
    } catch (error) {
      if (request !== asked) return;
      status.remove();
      const message = element("p", "analysis-error", error.message);
      if (search) body.appendChild(message);
      else body.replaceChildren(message);
    } finally {
      if (request === asked) askSearch.disabled = subject === null;
    }
  }

  function renderAnalysis(analysis, withSearch) {
    body.replaceChildren();
    body.appendChild(policySection(analysis));
    if (withSearch) body.appendChild(searchSection(analysis));
  }

  function policySection(analysis) {
    const section = element("div", "analysis-policy");
    const policy = analysis.policy;
    if (!policy) {
      section.appendChild(element("p", "analysis-note",
        "No policy here plays this number of players (install torch, or add --models with one trained for it)."));
      return section;
    }
    const head = element("div", "analysis-section-head");
    head.appendChild(element("span", "policy-name", `Policy ${policy.agent}`));
    head.appendChild(element("span", "analysis-tag " + (policy.recorded ? "recorded" : "computed"),
      policy.recorded ? "recorded at the move" : "computed now"));
    section.appendChild(head);
    for (const [action, probability] of policy.top || []) {
      const row = element("div", "policy-row");
      row.dataset.action = action;
      if (action === analysis.chosen) row.classList.add("chosen");
      const label = element("span", "row-action");
      label.appendChild(actionNodes(action));
      const bar = element("span", "prob-bar");
      const fill = element("span", "prob-fill");
      fill.style.width = `${Math.max(0, Math.min(1, probability)) * 100}%`;
      bar.appendChild(fill);
      row.append(label, bar, element("span", "row-number", `${(probability * 100).toFixed(1)}%`));
      section.appendChild(row);
    }
    if (typeof policy.value === "number") {
      section.appendChild(element("div", "analysis-value", `Value: ${signed(policy.value)}`));
    }
    if (analysis.chosen) {
      const chosen = element("div", "analysis-chosen", "Chosen: ");
      chosen.appendChild(actionNodes(analysis.chosen));
      section.appendChild(chosen);
    }
    return section;
  }

  function searchSection(analysis) {
    const section = element("div", "analysis-search");
    const search = analysis.search;
    if (!search) {
      section.appendChild(element("p", "analysis-note", "One legal move only: nothing for the search to weigh."));
      return section;
    }
    const head = element("div", "analysis-section-head");
    head.appendChild(element("span", "policy-name", `Search ${search.agent}`));
    head.appendChild(element("span", "analysis-tag", "deal points"));
    section.appendChild(head);
    const values = search.values || [];
    const spread = Math.max(1e-9, ...values.map(([, value]) => Math.abs(value)));
    const chosen = search.chosen ?? analysis.chosen;
    for (const [action, value] of values) {
      const row = element("div", "search-row");
      row.dataset.action = action;
      if (action === search.best) row.classList.add("best");
      if (action === chosen) row.classList.add("chosen");
      const label = element("span", "row-action");
      label.appendChild(actionNodes(action));
      const bar = element("span", "value-bar");
      const fill = element("span", "value-fill " + (value >= 0 ? "positive" : "negative"));
      fill.style.width = `${(Math.abs(value) / spread) * 50}%`;
      bar.appendChild(fill);
      const marks = element("span", "row-marks");
      if (action === search.best) marks.appendChild(element("span", "mark-best", "best"));
      if (action === chosen) marks.appendChild(element("span", "mark-chosen", "chosen"));
      row.append(label, bar, element("span", "row-number", signed(value)), marks);
      section.appendChild(row);
    }
    if (typeof search.loss === "number" && search.loss > 0.5) {
      section.appendChild(element("p", "loss",
        `The chosen move loses ${search.loss.toFixed(1)} points against the best.`));
    }
    return section;
  }

  return { show, clear, get subject() { return subject; } };
}
