// The review screen, keyboard first. Saving is htmx's job (hx-post on the form, triggered by
// "save-now" and "save-soon" from here: the site's CSP forbids eval, so no htmx trigger
// filters); this file moves the focus between rubrics, scores with 1-5, links trace events to
// the focused rubric, lets htmx show 4xx answers from the autosave, and keeps the heartbeat to
// visible pages.
(function () {
  "use strict";
  const form = document.getElementById("annotation-form");
  const rubrics = Array.from(document.querySelectorAll(".rubric[data-rubric]"));
  const help = document.getElementById("shortcut-help");
  let current = 0;

  function isTyping(element) {
    return element.matches("textarea, select, input:not([type=radio]):not([type=checkbox])");
  }

  function focusRubric(index, moveFocus) {
    if (!rubrics.length) return;
    current = Math.max(0, Math.min(rubrics.length - 1, index));
    rubrics.forEach((rubric, i) => rubric.classList.toggle("focused", i === current));
    const rubric = rubrics[current];
    if (moveFocus) {
      rubric.focus({ preventScroll: true });
      rubric.scrollIntoView({ block: "nearest" });
    }
    document.querySelectorAll(".link-target").forEach((label) => {
      label.textContent = rubric.dataset.code;
    });
  }

  function score(value) {
    const radio = rubrics[current].querySelector(`input[type=radio][value="${value}"]`);
    if (!radio || radio.disabled) return;
    radio.checked = true;
    radio.dispatchEvent(new Event("change", { bubbles: true })); // autosave
  }

  function changeLinks(rubric, change) {
    const input = rubric.querySelector("input[data-links]");
    const ids = input.value.split(/\s+/).filter(Boolean);
    input.value = change(ids).join(" ");
    input.dispatchEvent(new Event("change", { bubbles: true })); // autosave, chips come back
  }

  // Submitting while an autosave is in flight would send a version about to be superseded.
  function submit() {
    const button = document.querySelector("[data-key-submit]");
    if (!button) return;
    if (form && form.classList.contains("htmx-request")) {
      form.addEventListener("htmx:afterSettle", () => button.click(), { once: true });
    } else {
      button.click();
    }
  }

  function toggleHelp() {
    help.hidden = !help.hidden;
  }

  document.addEventListener("keydown", (event) => {
    const target = event.target;
    if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
      event.preventDefault();
      submit();
      return;
    }
    if (isTyping(target)) {
      if (event.key === "Escape") {
        target.blur();
        focusRubric(current, true);
      }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const key = event.key;
    if (/^[1-5]$/.test(key)) score(key);
    else if (key === "j" || key === "ArrowDown") focusRubric(current + 1, true);
    else if (key === "k" || key === "ArrowUp") focusRubric(current - 1, true);
    else if (key === "f") rubrics[current]?.querySelector("textarea")?.focus();
    else if (key === "s") submit();
    else if (key === "?") toggleHelp();
    else if (key === "Escape" && !help.hidden) toggleHelp();
    else return;
    event.preventDefault(); // also stops arrows moving a radio group's choice
  });

  // A choice or a link saves at once; typing saves after a pause (htmx's delay).
  if (form && form.hasAttribute("data-autosave")) {
    form.addEventListener("change", (event) => {
      if (!event.target.matches("textarea")) form.dispatchEvent(new Event("save-now"));
    });
    form.addEventListener("input", (event) => {
      if (event.target.matches("textarea")) form.dispatchEvent(new Event("save-soon"));
    });
  }

  document.addEventListener("focusin", (event) => {
    const index = rubrics.indexOf(event.target.closest(".rubric"));
    if (index >= 0 && index !== current) focusRubric(index, false);
  });

  document.addEventListener("click", (event) => {
    const link = event.target.closest("[data-link-event]");
    if (link && rubrics.length) {
      const id = link.dataset.linkEvent;
      changeLinks(rubrics[current], (ids) => (ids.includes(id) ? ids : [...ids, id]));
    }
    const unlink = event.target.closest("[data-unlink]");
    if (unlink) {
      const id = unlink.dataset.unlink;
      changeLinks(unlink.closest(".rubric"), (ids) => ids.filter((other) => other !== id));
    }
    if (event.target.closest("[data-help-toggle]")) toggleHelp();
  });

  // A conflict (409), a refused value (400) or a locked study (403) is an answer to show in
  // the save status, not an error for htmx to drop.
  document.body.addEventListener("htmx:beforeSwap", (event) => {
    const status = event.detail.xhr.status;
    if ([400, 403, 409].includes(status) && event.detail.target?.id === "save-status") {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

  // Time on task counts only while the page is in front of the annotator and they are at it:
  // a page left open on an unattended screen sends no heartbeat, so idle time is not counted
  // and the idle session can expire.
  const ACTIVE_MS = 120000;
  let lastActivity = Date.now();
  for (const type of ["keydown", "pointerdown", "pointermove", "wheel", "scroll", "input"]) {
    document.addEventListener(type, () => { lastActivity = Date.now(); }, { capture: true, passive: true });
  }
  document.body.addEventListener("htmx:beforeRequest", (event) => {
    if (event.detail.elt.id !== "heartbeat") return;
    if (document.visibilityState !== "visible" || Date.now() - lastActivity > ACTIVE_MS) {
      event.preventDefault();
    }
  });

  const firstOpen = rubrics.findIndex((rubric) => !rubric.querySelector("input:checked"));
  focusRubric(firstOpen >= 0 ? firstOpen : 0, false);
})();
