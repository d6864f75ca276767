// The display menu of every page: theme and text size apply at once and are kept with the
// account (posted with fetch; the form's own submit button stays for pages without scripts).
(function () {
  "use strict";
  const form = document.querySelector("[data-display-form]");
  if (!form) return;
  form.querySelector("[data-display-apply]").hidden = true;
  form.addEventListener("change", (event) => {
    const { name, value } = event.target;
    if (name === "theme") document.documentElement.dataset.theme = value;
    else if (name === "text_size") document.documentElement.dataset.textSize = value;
    else return;
    fetch(form.action, {
      method: "POST",
      body: new URLSearchParams(new FormData(form)),
      headers: { "X-Requested-With": "fetch" },
      credentials: "same-origin",
    });
  });
})();
