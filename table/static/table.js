// pedro-table's page: two modes, play (#mode-play) and watch (#mode-watch), sharing the analysis panel.
//
// Modules: cards.js (SVG cards), board.js (the table renderer), api.js (requests, the #error banner),
// setup.js (the new-match form), play.js (a match against the agents), watch.js (the replay viewer),
// analysis.js (the #analysis panel, moved into the sidebar of the mode shown).

import { clearError } from "./api.js";
import { createAnalysisPanel } from "./analysis.js";
import { createPlay } from "./play.js";
import { createWatch } from "./watch.js";

const byId = (id) => document.getElementById(id);
const analysisElement = byId("analysis");
const analysis = createAnalysisPanel(analysisElement);
const watch = createWatch({ analysis });
const play = createPlay({
  analysis,
  onWatchRecord: async (text, name) => {
    showMode("watch");
    await watch.openRecords([{ text, name }]);
  },
});

/** Show mode `mode` ("play" or "watch"): its section, its tab pressed, the analysis panel in its sidebar. */
function showMode(mode) {
  for (const each of ["play", "watch"]) {
    const shown = each === mode;
    byId(`${each}-mode`).hidden = !shown;
    const tab = byId(`mode-${each}`);
    tab.classList.toggle("active", shown);
    tab.setAttribute("aria-pressed", String(shown));
  }
  document.querySelector(`.analysis-slot[data-mode="${mode}"]`).appendChild(analysisElement);
  analysis.clear(mode === "play" ? "Click a move, or analyse your current decision." : "Open a record to analyse it.");
  play.setActive(mode === "play");
  watch.setActive(mode === "watch");
  document.body.dataset.mode = mode;
}

byId("mode-play").addEventListener("click", () => showMode("play"));
byId("mode-watch").addEventListener("click", () => showMode("watch"));
byId("error").querySelector(".error-close").addEventListener("click", clearError);
showMode("play");
