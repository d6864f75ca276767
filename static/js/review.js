// The review screen, keyboard first. The site's CSP forbids inline script and eval, so every
// behaviour lives in this vendored file; it posts the saves itself and has htmx swap the
// answers in (the status, the version, the link chips, what is missing). This file:
// - moves the focus between rubrics and through the conversation, scores with 1-5 (0 clears),
//   links trace events to the highlighted rubric, scrolls the conversation with Page Down and
//   Space while a rubric has the focus;
// - saves a choice at once and text after a pause, sending only the fields changed since the
//   server last confirmed them (each with the value it started from, so the server can merge a
//   save from a tab another tab has overtaken); when a save does not reach the server it says
//   so in the header, retries with a growing pause and says when all is saved again;
// - sends what is still unsent with a keepalive request when the page is hidden or closed, and
//   keeps text not yet saved in localStorage (keyed by user and item; only the annotator's own
//   text) until the server has it, putting it back after a re-login;
// - warns a minute before the idle logout, counts the time on the item, and tells the server
//   how long ago the person last pressed a key or clicked (its heartbeat is not activity);
// - puts the focus on the rubric to score (or the item's heading) when the item opens, and
//   lets Tab reach every rubric.
(function () {
  "use strict";
  const root = document.getElementById("review");
  if (!root) return;
  const form = document.getElementById("annotation-form");
  const editable = root.hasAttribute("data-editable");
  const autosaveUrl = editable ? form.dataset.autosave : null;
  const rubrics = Array.from(document.querySelectorAll(".rubric[data-rubric]"));
  const events = Array.from(document.querySelectorAll("[data-event]"));
  const head = document.getElementById("review-head");
  const panel = document.getElementById("panel");
  const casePanel = document.getElementById("case");
  const caseDetails = document.querySelector("[data-case-details]");
  const help = document.getElementById("shortcut-help");
  const helpToggle = document.querySelector("[data-help-toggle]");
  const announcer = document.getElementById("announce");
  const warning = document.getElementById("session-warning");
  const csrf = JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"];
  const SAVE_PAUSE_MS = 800;
  // REVIEW_SAVE_RETRY_SECONDS: 2, 4, 8, 15, then every 30 s unless the site says.
  const RETRY_MS = (form?.dataset.saveRetries || "2,4,8,15,30").split(",").map((s) => 1000 * Number(s));
  // A save the server has not answered by then counts as not saved (sent again, it is merged
  // with itself if it did arrive): REVIEW_SAVE_TIMEOUT_SECONDS, 20 unless the site says.
  const SAVE_TIMEOUT_MS = 1000 * Number(form?.dataset.saveTimeout || 20);
  const ACTIVE_MS = 120000;
  const WARN_MS = 60000;
  let current = 0;
  let currentEvent = null;

  // --- helpers -------------------------------------------------------------------------------

  function isTyping(element) {
    return element.matches("textarea, select, input:not([type=radio]):not([type=checkbox])");
  }

  function announce(text) {
    announcer.textContent = "";
    window.setTimeout(() => { announcer.textContent = text; }, 30);
  }

  function headBottom() {
    return Math.max(0, head.getBoundingClientRect().bottom);
  }

  // The sticky header's height, for the sticky columns and the events' scroll margin; the
  // submit bar's, so the panel scrolls a field into view above it (its scroll-padding).
  new ResizeObserver(() => {
    root.style.setProperty("--head-h", `${head.offsetHeight}px`);
  }).observe(head);
  const submitBar = panel?.querySelector(".submit-bar");
  if (submitBar) {
    new ResizeObserver(() => {
      root.style.setProperty("--bar-h", `${submitBar.offsetHeight}px`);
    }).observe(submitBar);
  }

  // The layout follows the page's width in rem (CSS container queries), so it changes with
  // the text size too: read it from the columns themselves rather than from the window.
  function docked() {
    return Boolean(panel) && getComputedStyle(panel).position === "fixed";
  }

  function wide() {
    return getComputedStyle(casePanel).position === "sticky";
  }

  // The sticky columns end at the window's bottom wherever they start (below the site's bar at
  // the top of the page, below the header once scrolled).
  function fitColumns() {
    for (const column of [panel, casePanel]) {
      if (!column) continue;
      const stuck = docked() || (column === casePanel && !wide());
      column.style.maxHeight = stuck
        ? ""
        : `${window.innerHeight - Math.max(column.getBoundingClientRect().top, 0) - 8}px`;
    }
  }
  let fitting = false;
  window.addEventListener("scroll", () => {
    if (fitting) return;
    fitting = true;
    window.requestAnimationFrame(() => { fitting = false; fitColumns(); });
  }, { passive: true });

  // The record and scenario: open in the side column of a wide screen, folded above the
  // conversation otherwise.
  let wasWide = null;
  function layoutCase() {
    if (caseDetails && wide() !== wasWide) caseDetails.open = wide();
    wasWide = wide();
    fitColumns();
  }
  window.addEventListener("resize", layoutCase);
  new MutationObserver(layoutCase).observe(document.documentElement, {
    attributes: true,
    attributeFilter: ["data-text-size"],
  });

  // --- rubrics ---------------------------------------------------------------------------------

  function linksOf(rubric) {
    return rubric.querySelector("input[data-links]").value.split(/\s+/).filter(Boolean);
  }

  // Events linked to the highlighted rubric are marked in the conversation.
  function markLinks() {
    const linked = rubrics.length ? new Set(linksOf(rubrics[current])) : new Set();
    for (const event of events) {
      event.querySelector(".linked-mark").hidden = !linked.has(event.id);
    }
  }

  // Only the panel scrolls to show a rubric: the conversation stays where the reader is. The
  // line of the rubric before it stays in view where there is room, to show where one is.
  function revealInPanel(element) {
    const box = element.getBoundingClientRect();
    const area = panel.getBoundingClientRect();
    const bar = panel.querySelector(".submit-bar");
    const bottom = Math.min(area.bottom, window.innerHeight) - (bar ? bar.offsetHeight : 0) - 8;
    const top = Math.max(area.top, headBottom()) + 8;
    const context = element.previousElementSibling?.matches(".rubric") ? 56 : 0;
    if (box.top < top + context) panel.scrollTop -= top + context - box.top;
    else if (box.bottom > bottom) {
      panel.scrollTop += Math.min(box.bottom - bottom, box.top - top - context);
    }
  }

  function scored(rubric) {
    return Boolean(rubric.querySelector(".scores input:checked"));
  }

  // Only the highlighted rubric shows its buttons; another one shows its chosen score (a Tab
  // stop) or, unscored, nothing to Tab to: the rubric itself is the Tab stop then.
  function setTabStops() {
    if (!editable) return;
    rubrics.forEach((rubric, i) => {
      rubric.tabIndex = i !== current && !scored(rubric) ? 0 : -1;
    });
  }

  function focusRubric(index, moveFocus) {
    if (!rubrics.length) return;
    current = Math.max(0, Math.min(rubrics.length - 1, index));
    rubrics.forEach((rubric, i) => rubric.classList.toggle("focused", i === current));
    setTabStops();
    const rubric = rubrics[current];
    if (moveFocus) rubric.focus({ preventScroll: true });
    revealInPanel(rubric);
    document.querySelectorAll(".link-target").forEach((label) => {
      label.textContent = rubric.dataset.code;
    });
    markLinks();
  }

  function levelName(rubric, radio) {
    return `${rubric.dataset.name}: ${radio.value} ${radio.parentElement.querySelector(".score-label").textContent}`;
  }

  function score(value) {
    const rubric = rubrics[current];
    const radio = rubric?.querySelector(`.scores input[type=radio][value="${value}"]`);
    if (!radio || radio.disabled) return;
    radio.checked = true;
    radio.dispatchEvent(new Event("change", { bubbles: true })); // saves
    revealInPanel(rubric); // the view follows the rubric being scored
    announce(levelName(rubric, radio));
  }

  // An unchecked radio group sends nothing (the saved score would stay): the hidden empty
  // field sends "no score" until a score is chosen again.
  function clearScore() {
    const rubric = rubrics[current];
    const checked = rubric?.querySelector(".scores input:checked");
    if (!checked || checked.disabled) return;
    checked.checked = false;
    rubric.querySelector("[data-no-score]").disabled = false;
    saveNow();
    announce(`${rubric.dataset.name}: score cleared`);
  }

  function changeLinks(rubric, change) {
    const input = rubric.querySelector("input[data-links]");
    input.value = change(linksOf(rubric)).join(" ");
    input.dispatchEvent(new Event("change", { bubbles: true })); // saves, chips come back
    markLinks();
  }

  // --- the conversation ------------------------------------------------------------------------

  function firstVisibleEvent() {
    const top = headBottom();
    return events.find((event) => event.getBoundingClientRect().bottom > top + 4) || events[0];
  }

  function moveEvent(step) {
    if (!events.length) return;
    let index = events.indexOf(currentEvent);
    index = index < 0 ? events.indexOf(firstVisibleEvent()) : index + step;
    setCurrentEvent(events[Math.max(0, Math.min(events.length - 1, index))]);
    currentEvent.focus({ preventScroll: true });
    currentEvent.scrollIntoView({ block: "nearest" });
  }

  function setCurrentEvent(event) {
    currentEvent?.classList.remove("current");
    currentEvent = event;
    currentEvent.classList.add("current");
  }

  function toggleLink(event) {
    if (!event || !editable || !rubrics.length) return;
    const rubric = rubrics[current];
    const id = event.id;
    const linked = linksOf(rubric).includes(id);
    changeLinks(rubric, (ids) => (linked ? ids.filter((other) => other !== id) : [...ids, id]));
    announce(`${id} ${linked ? "unlinked from" : "linked to"} ${rubric.dataset.name}`);
  }

  function toggleDetails(event) {
    const details = event?.querySelector("details");
    if (details) details.open = !details.open;
  }

  function scrollConversation(direction) {
    const bottom = docked() ? panel.getBoundingClientRect().top : window.innerHeight;
    const seen = Math.max(120, bottom - headBottom());
    window.scrollBy({ top: direction * (seen - 48), behavior: "instant" });
  }

  let caseReturn = null;
  function toggleCase() {
    if (!caseDetails) return;
    caseDetails.open = !caseDetails.open;
    if (wide()) return;
    if (caseDetails.open) {
      caseReturn = window.scrollY;
      casePanel.scrollIntoView({ block: "start" });
      window.scrollBy(0, -headBottom());
    } else if (caseReturn !== null) {
      window.scrollTo(0, caseReturn);
      caseReturn = null;
    }
  }

  // --- saving ----------------------------------------------------------------------------------

  // What the server holds, as it last said (the status's data-saved): a field whose value
  // differs from it is a change still to send.
  let confirmed = savedFields(document.getElementById("save-status")) || {};
  let saveTimer = null;
  let saving = null; // the save on its way, until its answer is shown
  let saveAgain = false; // a change came while it was on its way
  let keepaliveSent = null; // a keepalive save the page may still see answered
  let submitting = false;
  let submitQueued = false; // a submit held until the autosave on its way is answered
  let failures = 0; // saves in a row that did not reach the server
  let retryTimer = null;

  function savedFields(status) {
    try {
      return JSON.parse(status?.dataset.saved || "null");
    } catch {
      return null;
    }
  }

  // The form's fields as the server reads them: a rubric's score ("" for none), its feedback,
  // its linked events, the overall comment; text without the spaces around it.
  function formFields() {
    const fields = {};
    if (!form) return fields;
    for (const element of form.elements) {
      const name = element.name;
      if (!(name in confirmed) || element.matches("[data-no-score]")) continue;
      if (element.type === "radio") {
        fields[name] ??= "";
        if (element.checked) fields[name] = element.value;
      } else {
        fields[name] = element.value.trim();
      }
    }
    return fields;
  }

  function changedFields(fields = formFields()) {
    return Object.keys(fields).filter((name) => fields[name] !== confirmed[name]);
  }

  // Only the changed fields, each with the value it started from (base-<name>).
  function saveBody(fields, names) {
    const body = new URLSearchParams({ version: versionShown() });
    for (const name of names) {
      body.set(name, fields[name]);
      body.set(`base-${name}`, confirmed[name]);
    }
    return body;
  }

  function postSave(body, keepalive = false) {
    return fetch(autosaveUrl, {
      method: "POST",
      body,
      keepalive,
      signal: keepalive ? undefined : AbortSignal.timeout(SAVE_TIMEOUT_MS),
      credentials: "same-origin",
      headers: { "X-CSRFToken": csrf, "HX-Request": "true", "HX-Current-URL": location.href },
    });
  }

  function saveNow() {
    window.clearTimeout(saveTimer);
    saveTimer = null;
    window.clearTimeout(retryTimer);
    retryTimer = null;
    if (!editable || submitting) return;
    if (saving || keepaliveSent) {
      // Its answer brings the version this save must carry: send after it.
      saveAgain = true;
      return;
    }
    const fields = formFields();
    const names = changedFields(fields);
    if (!names.length) return;
    const sent = Object.fromEntries(names.map((name) => [name, fields[name]]));
    saving = postSave(saveBody(fields, names))
      .then((response) => showAnswer(response, sent))
      .catch(saveFailed)
      .finally(() => {
        saving = null;
        if (saveAgain) {
          saveAgain = false;
          saveNow();
        }
      });
  }

  function saveSoon() {
    window.clearTimeout(saveTimer);
    saveTimer = window.setTimeout(saveNow, SAVE_PAUSE_MS);
  }

  // 200: saved (the status, the version, the link chips and what is missing come back); 400,
  // 403, 409: refused or a conflict, shown in the status; anything else did not save.
  async function showAnswer(response, sent) {
    noteSession(response.headers.get("X-Session-Expires-In"));
    const redirect = response.headers.get("HX-Redirect");
    if (redirect) {
      location.href = redirect; // the session ended: log in, come back, the text is put back
      return;
    }
    if (![200, 400, 403, 409].includes(response.status)) throw new Error(`${response.status}`);
    const html = await response.text();
    window.htmx.swap("#save-status", html, { swapStyle: "outerHTML" });
    const recovered = failures > 0;
    failures = 0;
    if (response.status !== 200) return;
    Object.assign(confirmed, sent);
    takeSavedFields(savedFields(document.getElementById("save-status")));
    forgetSaved(sent);
    if (recovered) {
      const time = document.querySelector("#save-status .saved")?.textContent.replace("✓", "").trim();
      announce(`Reached the server again. ${time}: nothing is waiting.`);
    }
  }

  // After a save merged with another tab's, that tab's changes show here too; a field changed
  // here meanwhile keeps its text (and what the server last confirmed, so sending it again is
  // checked against the other tab's change).
  function takeSavedFields(saved) {
    if (!saved) return;
    const fields = formFields();
    for (const [name, value] of Object.entries(saved)) {
      if (fields[name] !== confirmed[name] || value === confirmed[name]) continue;
      confirmed[name] = value;
      setField(name, value);
    }
    markLinks();
    setTabStops();
  }

  function setField(name, value) {
    const radios = form.querySelectorAll(`input[type=radio][name="${name}"]`);
    if (radios.length) {
      for (const radio of radios) radio.checked = radio.value === value;
      form.querySelector(`input[data-no-score][name="${name}"]`).disabled = value !== "";
    } else {
      form.elements[name].value = value;
    }
  }

  // The server did not answer (network down) or failed (5xx): the change stays here, the
  // header says so, and the save is tried again after 2, 4, 8, 15, then every 30 seconds
  // (REVIEW_SAVE_RETRY_SECONDS).
  function saveFailed() {
    failures += 1;
    const pause = RETRY_MS[Math.min(failures, RETRY_MS.length) - 1];
    showWaiting();
    retryTimer = window.setTimeout(saveNow, pause);
  }

  function showWaiting() {
    const waiting = changedFields().length;
    const status = document.getElementById("save-status");
    const line = document.createElement("span");
    const retry = document.createElement("button");
    line.innerHTML = "<strong>Not saved</strong>: ";
    line.append(`${waiting} change${waiting === 1 ? "" : "s"} waiting; the server does not answer, retrying.`);
    retry.type = "button";
    retry.dataset.retrySave = "";
    retry.textContent = "Retry now";
    status.className = "save-status unsent";
    status.replaceChildren(line, retry);
    if (failures === 1) announce(`Not saved: ${line.textContent.split(": ")[1]}`);
  }

  function unsent() {
    return failures > 0 && changedFields().length > 0;
  }

  window.addEventListener("beforeunload", (event) => {
    if (unsent() && !submitting) event.preventDefault(); // the browser asks before leaving
  });

  // What was not yet sent goes out as the page is hidden or closed: a keepalive request
  // outlives the page, and the server checks its CSRF token and version like any save.
  function sendUnsaved() {
    if (!editable || submitting || saving || keepaliveSent) return;
    const fields = formFields();
    const names = changedFields(fields);
    if (!names.length) return;
    window.clearTimeout(saveTimer);
    saveTimer = null;
    const sent = Object.fromEntries(names.map((name) => [name, fields[name]]));
    keepaliveSent = postSave(saveBody(fields, names), true)
      .then((response) => showAnswer(response, sent)) // reached only when the page lived on
      .catch(() => saveFailed()) // too big for keepalive, or offline: the local copy keeps it
      .finally(() => {
        keepaliveSent = null;
        if (saveAgain) {
          saveAgain = false;
          saveNow();
        }
      });
  }

  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "hidden") sendUnsaved();
  });
  window.addEventListener("pagehide", sendUnsaved);

  // --- text kept in the browser until the server has it ---------------------------------------

  const draftKey = `review:unsaved:${root.dataset.user}:${root.dataset.item}`;
  // Text kept under the product's former name is still put back (then saved under the new key).
  const formerDraftKey = `healthbench:unsaved:${root.dataset.user}:${root.dataset.item}`;

  function readDraft() {
    try {
      const kept = window.localStorage.getItem(draftKey) ?? window.localStorage.getItem(formerDraftKey);
      return JSON.parse(kept) || { fields: {} };
    } catch {
      return { fields: {} };
    }
  }

  function writeDraft(draft) {
    try {
      window.localStorage.removeItem(formerDraftKey);
      if (Object.keys(draft.fields).length) window.localStorage.setItem(draftKey, JSON.stringify(draft));
      else window.localStorage.removeItem(draftKey);
    } catch {
      // storage full or switched off: the server's copy is all there is
    }
  }

  function versionShown() {
    return document.getElementById("version").value;
  }

  function keepTyped(field) {
    const draft = readDraft();
    draft.fields[field.name] = { text: field.value, version: versionShown(), at: Date.now() };
    writeDraft(draft);
  }

  let restoredNote = null; // the notice's line about text put back, until it is saved

  function forgetSaved(sent) {
    const draft = readDraft();
    for (const [name, kept] of Object.entries(draft.fields)) {
      if (sent[name] === kept.text.trim()) delete draft.fields[name];
    }
    writeDraft(draft);
    if (restoredNote && !Object.keys(draft.fields).length) {
      restoredNote.textContent = restoredNote.textContent.replace("Saving it now…", "Saved.");
      restoredNote = null;
    }
  }

  // After a re-login (or a page closed before its text reached the server) the text comes
  // back into its field and is saved, if the item was not saved from elsewhere since; else it
  // is shown to copy from, never written over newer work.
  function restoreDraft() {
    const draft = readDraft();
    const restored = [];
    const stale = [];
    for (const [name, kept] of Object.entries(draft.fields)) {
      const field = form?.elements[name];
      if (!field || field.value.trim() === kept.text.trim()) {
        delete draft.fields[name];
      } else if (editable && kept.version === versionShown()) {
        field.value = kept.text;
        restored.push(field.dataset.label);
      } else {
        stale.push([field.dataset.label, kept.text, name]);
      }
    }
    writeDraft(draft);
    if (!restored.length && !stale.length) return;
    const notice = document.getElementById("restore-notice");
    if (restored.length) {
      restoredNote = notice.querySelector("[data-restored]");
      restoredNote.textContent =
        `Put back what you typed here that had not reached the server (the session had ended ` +
        `or the page was closed): ${restored.join("; ")}. Saving it now…`;
      saveNow();
    }
    if (stale.length) showStale(notice, stale);
    notice.hidden = false;
    notice.querySelector("[data-dismiss-restore]").addEventListener("click", () => {
      const left = readDraft();
      for (const [, , name] of stale) delete left.fields[name];
      writeDraft(left);
      notice.hidden = true;
    }, { once: true });
  }

  function showStale(notice, stale) {
    const list = notice.querySelector("[data-stale-text]");
    for (const [label, text] of stale) {
      const term = document.createElement("dt");
      const value = document.createElement("dd");
      term.textContent = label;
      value.textContent = text;
      list.append(term, value);
    }
    notice.querySelector("[data-stale]").hidden = false;
  }

  // --- htmx: the heartbeat ---------------------------------------------------------------------

  document.body.addEventListener("htmx:beforeRequest", (event) => {
    if (event.detail.elt.id === "heartbeat" && !heartbeatDue()) event.preventDefault();
  });

  // The heartbeat is the page's own: it says how long ago the person last acted, and only
  // that keeps the session (accounts.middleware).
  document.body.addEventListener("htmx:configRequest", (event) => {
    if (event.detail.elt.id !== "heartbeat") return;
    event.detail.headers["X-Idle-Seconds"] = String(Math.floor((Date.now() - lastActivity) / 1000));
  });

  document.body.addEventListener("htmx:afterRequest", (event) => {
    noteSession(event.detail.xhr.getResponseHeader("X-Session-Expires-In"));
  });

  let restored = false;
  document.body.addEventListener("htmx:load", () => {
    if (restored) return; // htmx has set up the page: a restored text can be saved
    restored = true;
    restoreDraft();
  });

  // --- time on task, the session -----------------------------------------------------------

  // Time on task counts only while the page is in front of the annotator and they are at it:
  // a page left open on an unattended screen sends no heartbeat, so idle time is not counted.
  // Activity is what only a person does: a key, a click or a tap, turning the wheel, typing.
  // (Not "scroll": columns scroll by themselves when the layout changes; not a mouse that
  // moves: a desk is bumped.)
  let lastActivity = Date.now();
  for (const type of ["keydown", "pointerdown", "wheel", "touchstart", "input"]) {
    document.addEventListener(type, () => {
      lastActivity = Date.now();
      if (!warning.hidden) stayLoggedIn();
    }, { capture: true, passive: true });
  }

  function heartbeatDue() {
    return document.visibilityState === "visible" && Date.now() - lastActivity <= ACTIVE_MS;
  }

  const timer = document.getElementById("item-timer");
  let seconds = Number(timer.dataset.seconds) || 0;
  function showTime() {
    const minutes = Math.floor(seconds / 60) % 60;
    const hours = Math.floor(seconds / 3600);
    const secs = String(seconds % 60).padStart(2, "0");
    timer.textContent = hours ? `${hours}:${String(minutes).padStart(2, "0")}:${secs}` : `${minutes}:${secs}`;
  }

  // The session ends a fixed time after the last request of any tab; every answer says how
  // long is left, and the tabs share the latest word through localStorage.
  const sharedDeadline = `review:session-ends:${root.dataset.user}`;
  let deadline = 0;
  let leaving = false;

  function noteSession(secondsLeft) {
    if (secondsLeft === null || secondsLeft === undefined || secondsLeft === "") return;
    deadline = Date.now() + Number(secondsLeft) * 1000;
    try {
      window.localStorage.setItem(sharedDeadline, String(deadline));
    } catch {
      // this tab's own count is enough
    }
    watchSession();
  }

  function latestDeadline() {
    try {
      return Math.max(deadline, Number(window.localStorage.getItem(sharedDeadline)) || 0);
    } catch {
      return deadline;
    }
  }

  let staying = false;
  function stayLoggedIn() {
    if (staying) return;
    staying = true;
    fetch(root.dataset.keepaliveUrl, {
      method: "POST",
      credentials: "same-origin",
      headers: { "X-CSRFToken": csrf },
    })
      .then((response) => {
        if (response.redirected || !response.ok) window.location.reload();
        else noteSession(response.headers.get("X-Session-Expires-In"));
      })
      .finally(() => { staying = false; });
  }
  warning.querySelector("[data-stay]").addEventListener("click", stayLoggedIn);

  function watchSession() {
    const left = latestDeadline() - Date.now();
    if (failures > 0) {
      // The server does not answer: a reload would show an error page. The next answer says
      // whether the session is still there (or sends the page to the login).
    } else if (left <= -2000 && !leaving) {
      // Ended: reloading shows the login page (it says why), which returns here.
      leaving = true;
      sendUnsaved();
      window.location.reload();
    } else if (left <= WARN_MS) {
      const secs = Math.max(0, Math.ceil(left / 1000));
      warning.querySelector("[data-countdown]").textContent = `${Math.floor(secs / 60)}:${String(secs % 60).padStart(2, "0")}`;
      warning.hidden = false;
    } else {
      warning.hidden = true;
    }
  }

  noteSession(root.dataset.sessionSeconds);
  window.setInterval(() => {
    if (timer.hasAttribute("data-running") && heartbeatDue()) {
      seconds += 1;
      showTime();
    }
    watchSession();
  }, 1000);

  // --- keys ------------------------------------------------------------------------------------

  // The keys submit through the button: the form's submit handler refuses while saves fail
  // and holds the submit while an autosave is on its way.
  function submit() {
    document.querySelector("[data-key-submit]")?.click();
  }

  // The server does not answer: a submit would end on the browser's error page.
  function refuseSubmit() {
    announce("Not submitted: the server does not answer. Your changes stay here and are sent when it does.");
    saveNow();
  }

  // The help takes the focus, so the keys that scroll scroll it; closing gives the focus back.
  let helpReturn = null;
  function toggleHelp() {
    help.hidden = !help.hidden;
    helpToggle.setAttribute("aria-expanded", String(!help.hidden));
    if (!help.hidden) {
      helpReturn = document.activeElement;
      help.focus();
    } else if (help.contains(document.activeElement) || document.activeElement === document.body) {
      (helpReturn && document.contains(helpReturn) ? helpReturn : helpToggle).focus();
    }
  }

  // Space activates buttons, links and folds; everywhere else (a rubric, a radio, an event) it
  // scrolls the conversation.
  function spaceScrolls(target) {
    return !target.closest("button, a, summary, select, input[type=checkbox]");
  }

  const KEYS = {
    j: () => focusRubric(current + 1, true),
    ArrowDown: () => focusRubric(current + 1, true),
    k: () => focusRubric(current - 1, true),
    ArrowUp: () => focusRubric(current - 1, true),
    n: () => moveEvent(1),
    p: () => moveEvent(-1),
    l: () => {
      if (!currentEvent) moveEvent(0);
      toggleLink(currentEvent);
    },
    o: () => toggleDetails(currentEvent),
    0: clearScore,
    Backspace: clearScore,
    PageDown: () => scrollConversation(1),
    PageUp: () => scrollConversation(-1),
    r: toggleCase,
    f: () => rubrics[current]?.querySelector("textarea")?.focus(),
    s: submit,
    "?": toggleHelp,
  };

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
    if (help.contains(target)) {
      // Keys scroll the help and reach its button; Esc and ? close it.
      if (event.key === "Escape" || event.key === "?") {
        event.preventDefault();
        toggleHelp();
      }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (target.closest("[data-display-form]")) return;
    const key = event.key;
    if (/^[1-5]$/.test(key)) score(key);
    else if (key === " " && spaceScrolls(target)) scrollConversation(event.shiftKey ? -1 : 1);
    else if (key === "Escape" && !help.hidden) toggleHelp();
    else if (KEYS[key] && !event.shiftKey) KEYS[key]();
    else if (key === "?") toggleHelp();
    else return;
    event.preventDefault(); // also stops arrows moving a radio group's choice
  });

  // --- pointer and form events -------------------------------------------------------------------

  if (editable) {
    form.addEventListener("change", (event) => {
      const field = event.target;
      if (field.matches(".scores input[type=radio]")) {
        field.closest(".rubric").querySelector("[data-no-score]").disabled = true;
        setTabStops();
      }
      if (!field.matches("textarea") || saveTimer) saveNow(); // a text field saves as it is left
    });
    form.addEventListener("input", (event) => {
      if (!event.target.matches("textarea")) return;
      keepTyped(event.target);
      saveSoon();
    });
    form.addEventListener("submit", (event) => {
      if (failures > 0) {
        event.preventDefault();
        refuseSubmit();
        return;
      }
      // Every submit comes here (the button, Enter on it, the keys): an autosave still on its
      // way would bring a newer version than the form carries, and the server would refuse the
      // submit as a conflict. Submit again once its answer is in.
      const pending = saving || keepaliveSent;
      if (pending || submitQueued) {
        event.preventDefault();
        if (submitQueued) return; // a second Enter while the first waits: one submit
        submitQueued = true;
        const button = event.submitter;
        pending.finally(() => {
          submitQueued = false;
          window.setTimeout(() => form.requestSubmit(button), 0);
        });
        return;
      }
      window.clearTimeout(saveTimer);
      saveTimer = null;
      submitting = true; // the submit carries every field; no autosave after it
    });
  }

  document.addEventListener("focusin", (event) => {
    const index = rubrics.indexOf(event.target.closest(".rubric"));
    if (index >= 0 && index !== current) focusRubric(index, false);
    const traceEvent = event.target.closest("[data-event]");
    if (traceEvent && traceEvent !== currentEvent) setCurrentEvent(traceEvent);
  });

  document.addEventListener("click", (event) => {
    const link = event.target.closest("[data-link-event]");
    if (link) toggleLink(link.closest("[data-event]"));
    const unlink = event.target.closest("[data-unlink]");
    if (unlink) {
      const id = unlink.dataset.unlink;
      changeLinks(unlink.closest(".rubric"), (ids) => ids.filter((other) => other !== id));
    }
    if (event.target.closest("[data-clear-score]")) clearScore();
    if (event.target.closest("[data-help-toggle], [data-help-close]")) toggleHelp();
    if (event.target.closest("[data-retry-save]")) saveNow();
  });

  // On opening an item (also the next one after a submit) the keyboard goes on from the first
  // rubric still to score; on a read-only item, from its heading.
  layoutCase();
  const firstOpen = rubrics.findIndex((rubric) => !scored(rubric));
  focusRubric(firstOpen >= 0 ? firstOpen : 0, editable);
  if (!editable) document.getElementById("item-number").focus({ preventScroll: true });
})();
