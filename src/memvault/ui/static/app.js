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
});
