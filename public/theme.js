// The colour scheme, set before the page is first drawn (a classic script in <head>, so no
// flash of the other scheme): the visitor's choice (system, light or dark), kept in this
// browser. "system" follows the device and its changes. <html data-theme> holds the scheme in
// use, data-theme-choice the choice; the code highlighting's stylesheet follows the scheme.
// app.js sends "ai-chat:theme" with a new choice; other tabs hear of it through `storage`.
(() => {
  const KEY = "ai-chat:theme";
  const dark = matchMedia("(prefers-color-scheme: dark)");
  const saved = () => { try { return localStorage.getItem(KEY); } catch { return null; } };
  let choice = saved();
  const apply = () => {
    if (choice !== "light" && choice !== "dark") choice = "system";
    const scheme = choice === "system" ? (dark.matches ? "dark" : "light") : choice;
    const root = document.documentElement;
    root.dataset.theme = scheme;
    root.dataset.themeChoice = choice;
    for (const link of document.querySelectorAll("link[data-scheme]")) link.media = link.dataset.scheme === scheme ? "all" : "not all";
  };
  apply();
  dark.addEventListener("change", apply);
  addEventListener("storage", (event) => { if (event.key === KEY) { choice = event.newValue; apply(); } });
  document.addEventListener("ai-chat:theme", (event) => {
    choice = event.detail;
    try { localStorage.setItem(KEY, choice); } catch { /* full or refused: the choice lasts for this visit */ }
    apply();
  });
})();
