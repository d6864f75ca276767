// The report bundle's conversation explorer (templates/alignment/report_bundle.html): reads the
// data embedded in the page (a file:// page may not fetch its neighbours), filters and searches
// it, and draws the matching conversations a page at a time. Text is set through textContent,
// never as markup, so a message holding HTML shows as text.
(function () {
  "use strict";
  const PAGE = 50;
  const ATTRIBUTES = {
    personality: "Personality", complexity: "Complexity", severity: "Severity",
    age_group: "Age group", gender_identity: "Gender identity", task_category: "Task category",
  };
  const data = JSON.parse(document.getElementById("bundle-data").textContent);
  const conversations = data.conversations;
  const search = document.getElementById("conversation-search");
  const selects = document.getElementById("conversation-selects");
  const list = document.getElementById("conversation-list");
  const count = document.getElementById("conversation-count");
  const more = document.getElementById("conversation-more");
  let matches = [];
  let shown = 0;

  // Every text of a conversation, lower-cased once, for the search.
  for (const c of conversations) {
    const parts = [c.model, c.run, c.condition, c.termination, String(c.case)];
    for (const e of c.events) parts.push(e.content, e.tool_name, e.arguments ? JSON.stringify(e.arguments) : "");
    for (const j of c.judgements) parts.push(j.rationale, j.judge);
    for (const n of c.clinicians) parts.push(n.comment || "", ...Object.values(n.feedback || {}));
    c.haystack = parts.join("\n").toLowerCase();
  }

  function element(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    if (className) node.className = className;
    return node;
  }

  function addSelect(name, title, values) {
    const label = element("label", title + " ");
    const select = element("select");
    select.dataset.filter = name;
    select.append(new Option("any", ""));
    for (const value of values) select.append(new Option(value, value));
    label.append(select);
    selects.append(label, " ");
  }

  function distinct(read) {
    return [...new Set(conversations.map(read))].filter((v) => v !== "" && v !== null).sort();
  }

  function valueOf(c, name) {
    if (name === "model" || name === "run") return c[name];
    if (name === "outcome") return !c.complete ? "incomplete" : c.passed ? "passed" : "not passed";
    return c.attributes[name];
  }

  function filter() {
    const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    const chosen = [...selects.querySelectorAll("select")].filter((s) => s.value).map((s) => [s.dataset.filter, s.value]);
    matches = conversations.filter((c) =>
      words.every((w) => c.haystack.includes(w)) && chosen.every(([name, value]) => valueOf(c, name) === value));
    shown = 0;
    list.replaceChildren();
    draw();
  }

  function draw() {
    const end = Math.min(matches.length, shown + PAGE);
    for (const c of matches.slice(shown, end)) list.append(card(c));
    shown = end;
    count.textContent = `${matches.length} of ${conversations.length} conversations match; ${shown} shown.`;
    more.hidden = shown >= matches.length;
  }

  function card(c) {
    const details = element("details", null, "card conversation");
    details.dataset.conversation = c.id;
    const aggregate = c.aggregate === null ? "not scored" : c.aggregate.toFixed(2);
    details.append(element("summary", `${c.model} · case ${c.case}, repetition ${c.repetition + 1} · ${c.condition} · aggregate ${aggregate}` +
      (c.complete ? (c.passed ? " (passed)" : " (not passed)") : " (incomplete)")));
    details.addEventListener("toggle", () => {
      if (details.open && details.childElementCount === 1) fill(details, c);
    });
    return details;
  }

  function fill(details, c) {
    const facts = Object.entries(c.attributes).map(([k, v]) => `${ATTRIBUTES[k]}: ${v || "(blank)"}`);
    details.append(element("p", `${c.run} · ${facts.join(" · ")} · ended: ${c.termination || "n/a"}`, "small muted"));
    const rubrics = Object.entries(c.rubrics).map(([code, r]) => `${code} ${r.mean.toFixed(2)}${r.passed ? "" : " (fail)"}`);
    if (rubrics.length) details.append(element("p", "Jury: " + rubrics.join(" · "), "small"));
    details.append(element("h4", "Trace"));
    const trace = element("ol", null, "trace");
    for (const e of c.events) trace.append(traceItem(e));
    details.append(trace);
    details.append(element("h4", "Judges"));
    const judges = element("ul");
    for (const j of c.judgements) {
      judges.append(element("li", `${j.rubric} · ${j.judge}: ${j.score === null ? j.status : j.score} · ${j.rationale || "(no rationale)"}`));
    }
    details.append(judges);
    if (c.clinicians.length) {
      details.append(element("h4", "Clinicians"));
      const people = element("ul");
      for (const n of c.clinicians) people.append(clinicianItem(n));
      details.append(people);
    }
  }

  function traceItem(e) {
    const item = element("li", null, "small");
    let head = `turn ${e.turn} · ${e.kind}`;
    if (e.model_role) head += ` (${e.model_role})`;
    if (e.tool_name) head += ` · ${e.tool_name}`;
    if (e.ok === false) head += " · failed";
    if (e.refused) head += " · refused";
    item.append(element("strong", head));
    if (e.arguments) item.append(element("pre", JSON.stringify(e.arguments, null, 1)));
    if (e.content) item.append(element("div", e.content, "message"));
    return item;
  }

  function clinicianItem(n) {
    const scores = Object.entries(n.scores).map(([k, v]) => `${k} ${v}`).join(" · ");
    const marks = (n.synthetic ? " (simulated clinician)" : "") + (n.imported ? " (imported)" : "");
    const item = element("li", `${n.clinician}, ${n.track}${marks}: ${scores}`);
    const notes = Object.entries(n.feedback || {}).map(([k, v]) => `${k}: ${v}`);
    if (n.comment) notes.push(n.comment);
    if (notes.length) item.append(element("div", notes.join(" · "), "small muted"));
    return item;
  }

  addSelect("model", "Model", distinct((c) => c.model));
  if (distinct((c) => c.run).length > 1) addSelect("run", "Run", distinct((c) => c.run));
  addSelect("outcome", "Outcome", ["passed", "not passed", "incomplete"]);
  for (const [name, title] of Object.entries(ATTRIBUTES)) addSelect(name, title, distinct((c) => c.attributes[name]));
  search.addEventListener("input", filter);
  selects.addEventListener("change", filter);
  document.getElementById("conversation-filters").addEventListener("submit", (event) => event.preventDefault());
  more.addEventListener("click", draw);
  filter();
})();
