// Small enhancements only: every page works without this file.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // An erase button stays disabled until the confirmation repeats the user id exactly
  // (the server checks the same again).
  for (const form of document.querySelectorAll("form[data-typed-confirm]")) {
    const target = form.querySelector("[name=user_id]");
    const typed = form.querySelector("[name=confirm]");
    const button = form.querySelector("button[type=submit]");
    const check = () => { button.disabled = !typed.value || typed.value !== target.value; };
    target.addEventListener("input", check);
    typed.addEventListener("input", check);
    check();
  }
  wireBulk(document);
});

// Select every row of a list at once; a bulk action stays disabled until a row is chosen
// (the server asks again before anything is deleted). Wired again after htmx swaps the rows.
function wireBulk(root) {
  for (const form of root.querySelectorAll("form.bulk")) {
    const boxes = () => form.querySelectorAll("input[name=memory_ids]");
    const all = form.querySelector("[data-select-all]");
    const act = form.querySelector("[data-needs-selection]");
    const sync = () => {
      const chosen = [...boxes()].filter((b) => b.checked).length;
      if (act) act.disabled = chosen === 0;
      if (all) all.checked = chosen > 0 && chosen === boxes().length;
    };
    if (all) all.addEventListener("change", () => {
      for (const b of boxes()) b.checked = all.checked;
      sync();
    });
    form.addEventListener("change", sync);
    sync();
  }
}
document.addEventListener("htmx:afterSettle", (event) => wireBulk(event.target));
