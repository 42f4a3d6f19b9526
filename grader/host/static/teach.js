// attn-practice host: the instructor's live page. What needs attention first (misconceptions, the
// stuck list), then the grid (sorted and filtered here), a learner's drill-down in a dialog.
// Text goes in with textContent only; the mistakes' Markdown is rendered by `md` from text nodes.
"use strict";

const TOKEN = document.querySelector('meta[name="attnp-token"]').content;
const $ = (id) => document.getElementById(id);
const MARKS = { passed: "✓", failed: "✗", stale: "~", "not started": "·" };
const WORDS = { passed: "passed", failed: "failing", stale: "changed since its check", "not started": "not started" };
const WHO_SHOWN = 6;  // names in a misconception's row before "and N more"
const state = { data: null, learner: null, drillJson: "", timer: null, opener: null,
  sort: { by: "name", step: null } };

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function notice(text) { $("notice").textContent = text; $("notice").hidden = !text; }

// "1 check", "2 checks": counts agree in number.
function count(n, word, many) { return `${n} ${n === 1 ? word : (many || word + "s")}`; }

function minutes(s) {
  if (s >= 3600) return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
  return s >= 60 ? count(Math.round(s / 60), "min", "min") : count(Math.round(s), "s", "s");
}

function when(t) { return new Date(t * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" }); }

// The few inline marks the mistakes' texts use (`code`, **bold**, *emphasis*), built from text nodes:
// everything else stays text, so nothing in a text can become markup.
function md(text) {
  const frag = document.createDocumentFragment();
  const re = /`([^`]+)`|\*\*(.+?)\*\*|\*(?!\s)(.+?)\*/g;
  let pos = 0, m;
  while ((m = re.exec(text)) !== null) {
    frag.append(document.createTextNode(text.slice(pos, m.index)));
    if (m[1] !== undefined) frag.append(el("code", {}, m[1]));
    else { const e = el(m[2] !== undefined ? "strong" : "em"); e.append(md(m[2] !== undefined ? m[2] : m[3])); frag.append(e); }
    pos = re.lastIndex;
  }
  frag.append(document.createTextNode(text.slice(pos)));
  return frag;
}

async function get(path) {
  try {
    const res = await fetch(path, { credentials: "same-origin" });
    const data = await res.json();
    if (!res.ok) { notice(data.error || `error ${res.status}`); return null; }
    if ($("notice").dataset.down) { notice(""); delete $("notice").dataset.down; }
    return data;
  } catch (e) {
    notice("The class server is not answering; this page retries by itself.");
    $("notice").dataset.down = "1";
    return null;
  }
}

async function post(path, body) {
  try {
    const res = await fetch(path, { method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-Attn-Token": TOKEN }, body: JSON.stringify(body || {}) });
    const data = await res.json().catch(() => ({}));
    if (!res.ok) notice(data.error || `error ${res.status}`);
    return res.ok ? data : null;
  } catch (e) { notice("The class server is not answering; try again in a moment."); return null; }
}

function nameButton(id, name, extra) {
  const b = el("button", { type: "button", class: "link learner-name", "data-learner": id,
    "data-focus": `${extra || "name"}:${id}` }, name);
  b.addEventListener("click", () => openLearner(id, b));
  return b;
}

// ------------------------------------------------------------------ what needs attention
function drawMisconceptions(d) {
  const t = $("misconceptions");
  const opened = new Set([...t.querySelectorAll("details.more[open]")].map((x) => x.dataset.key));  // kept open
  t.replaceChildren();
  const head = el("tr");
  ["step", "mistake", "learners", "who", "what it means", "nudge"].forEach((h) => head.append(el("th", { scope: "col" }, h)));
  const thead = el("thead"); thead.append(head); t.append(thead);
  const body = el("tbody"); t.append(body);
  if (!d.misconceptions.length) {
    const tr = el("tr"); tr.append(el("td", { colspan: "6", class: "dim" }, "No known mistake in anyone's latest failing check."));
    body.append(tr); return;
  }
  d.misconceptions.forEach((m) => {
    const tr = el("tr", { "data-id": m.id, "data-step": m.step });
    const mistake = el("td");
    mistake.append(el("strong", {}, m.title), " ", el("code", {}, m.id), el("br"));
    const show = el("button", { type: "button", class: "link small", "data-focus": `mis:${m.step}:${m.id}` },
      "show them in the grid");
    show.addEventListener("click", () => {
      $("filter-step").value = m.step; $("filter-mistake").value = m.id; $("filter-standing").value = "";
      drawGrid(state.data); $("grid-h").focus(); $("grid-h").scrollIntoView();
    });
    mistake.append(show);
    const who = el("td", { class: "who" });
    const people = [...m.learners].sort((a, b) => a.name.localeCompare(b.name));
    people.slice(0, WHO_SHOWN).forEach((l, i) => { if (i) who.append(", "); who.append(nameButton(l.id, l.name, `mis-${m.step}-${m.id}`)); });
    if (people.length > WHO_SHOWN) {
      const more = el("details", { class: "more", "data-key": `${m.step}:${m.id}` });
      if (opened.has(`${m.step}:${m.id}`)) more.open = true;
      more.append(el("summary", { "data-focus": `more:${m.step}:${m.id}` }, `and ${people.length - WHO_SHOWN} more`));
      people.slice(WHO_SHOWN).forEach((l, i) => { if (i) more.append(", "); more.append(nameButton(l.id, l.name, `mis-${m.step}-${m.id}`)); });
      who.append(" ", more);
    }
    const means = el("td", { class: "prose" }); means.append(md(m.explanation || ""));
    const nudge = el("td", { class: "prose" }); nudge.append(md(m.nudge || ""));
    tr.append(el("td", {}, m.step), mistake, el("td", { class: "count" }, String(m.count)), who, means, nudge);
    body.append(tr);
  });
}

function drawStuck(d) {
  const ul = $("stuck");
  ul.replaceChildren();
  if (d.stuck_rule) {
    $("stuck-rule").textContent = `Failing a step for over ${minutes(d.stuck_rule.seconds)}, or after ` +
      `${count(d.stuck_rule.checks, "check")}; longest first.`;
  }
  if (!d.stuck.length) { ul.append(el("li", { class: "dim" }, "Nobody is stuck right now.")); return; }
  d.stuck.forEach((s) => {
    const li = el("li");
    li.append(nameButton(s.learner, s.name, `stuck-${s.step}`),
      `: ${s.step}, ${count(s.checks, "check")}, ${minutes(s.seconds)}${s.diagnoses.length ? " · " + s.diagnoses.join(", ") : ""}`);
    ul.append(li);
  });
}

// ------------------------------------------------------------------ the grid: sort, filter, draw
function fillSelect(select, values, label) {
  const keep = select.value;
  const now = [...select.options].slice(1).map((o) => o.value);
  if (now.join("\n") === values.join("\n")) return;  // unchanged: an open list is left alone
  const first = select.options[0];
  select.replaceChildren(first);
  values.forEach((v) => select.append(el("option", { value: v }, label ? label(v) : v)));
  select.value = values.includes(keep) ? keep : "";
  if (keep && !values.includes(keep)) {  // a filter by a mistake nobody has any more: say so, keep it
    select.append(el("option", { value: keep }, `${keep} (nobody now)`));
    select.value = keep;
  }
}

function isStuck(d, row, step) { return d.stuck.some((s) => s.learner === row.learner && (!step || s.step === step)); }

function matches(d, row) {
  const name = $("filter-name").value.trim().toLowerCase();
  const step = $("filter-step").value, standing = $("filter-standing").value, mistake = $("filter-mistake").value;
  if (name && !`${row.name} ${row.student_id || ""}`.toLowerCase().includes(name)) return false;
  const cells = row.steps.filter((c) => !step || c.step === step);
  if (standing === "stuck") { if (!isStuck(d, row, step)) return false; }
  else if (standing && !cells.some((c) => c.standing === standing)) return false;
  if (mistake && !cells.some((c) => c.diagnoses.includes(mistake))) return false;
  return true;
}

function sortKey(row, by, step) {
  const cells = row.steps.filter((c) => !step || c.step === step);
  const passed = row.steps.filter((c) => c.standing === "passed").length;
  const rank = { failed: 0, stale: 1, "not started": 2, passed: 3 };
  switch (by) {
    case "behind": return [passed, row.name.toLowerCase()];
    case "ahead": return [-passed, row.name.toLowerCase()];
    case "checks": return [-cells.reduce((a, c) => a + c.checks, 0), row.name.toLowerCase()];
    case "time": return [-Math.max(0, ...cells.filter((c) => c.standing === "failed").map((c) => c.seconds)), row.name.toLowerCase()];
    case "step": return [rank[cells[0] ? cells[0].standing : "passed"], -(cells[0] ? cells[0].seconds : 0), row.name.toLowerCase()];
    default: return [row.name.toLowerCase(), row.learner];
  }
}

function compare(a, b) {
  for (let i = 0; i < a.length; i++) { if (a[i] < b[i]) return -1; if (a[i] > b[i]) return 1; }
  return 0;
}

function cellText(c) {
  const parts = [];
  if (c.checks) parts.push(count(c.checks, "check"));
  if (c.hints) parts.push(count(c.hints, "hint"));
  if (c.standing !== "not started" && c.seconds) parts.push(minutes(c.seconds));  // never a time for "not started"
  return parts.join(" · ");
}

function drawGrid(d) {
  const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.focus : null;
  const t = $("grid");
  t.replaceChildren();
  const { by, step: sortStep } = state.sort;
  const head = el("tr");
  const nameTh = el("th", { scope: "col", "aria-sort": by === "name" ? "ascending" : "none" });
  const nameB = el("button", { type: "button", class: "sort", "data-focus": "sort:name" }, "learner");
  nameB.addEventListener("click", () => sortBy("name", null));
  nameTh.append(nameB); head.append(nameTh);
  d.steps.forEach((s) => {
    const th = el("th", { scope: "col", title: s.title, "aria-sort": by === "step" && sortStep === s.id ? "other" : "none" });
    const b = el("button", { type: "button", class: "sort", "data-focus": `sort:${s.id}`,
      "aria-label": `${s.id}: sort by standing on ${s.id}, failing first` }, s.id);
    b.addEventListener("click", () => sortBy("step", s.id));
    th.append(b); head.append(th);
  });
  const thead = el("thead"); thead.append(head); t.append(thead);
  const rows = d.grid.filter((r) => matches(d, r));
  rows.sort((a, b) => compare(sortKey(a, by, sortStep), sortKey(b, by, sortStep)));
  const body = el("tbody");
  rows.forEach((row) => {
    const tr = el("tr", { "data-learner": row.learner });
    const th = el("th", { scope: "row" });
    th.append(nameButton(row.learner, row.name + (row.student_id ? ` (${row.student_id})` : ""), "grid"));
    tr.append(th);
    row.steps.forEach((c) => {
      const td = el("td", { class: c.standing.replace(" ", "-"), "data-step": c.step, "data-standing": c.standing });
      td.append(el("span", { "aria-hidden": "true" }, `${MARKS[c.standing] || "?"} `), WORDS[c.standing] || c.standing);
      const more = cellText(c);
      if (more) td.append(el("br"), el("span", { class: "small" }, more));
      if (c.diagnoses.length) td.append(el("br"), el("span", { class: "small mistakes" }, c.diagnoses.join(", ")));
      tr.append(td);
    });
    body.append(tr);
  });
  t.append(body);
  // every body row is a learner's (tools and tests read the rows): the empty cases are said above it
  $("shown").textContent = !d.grid.length ? "Nobody has joined yet: share the join link above."
    : !rows.length ? `Nobody of the ${count(d.grid.length, "learner")} matches these filters.`
    : rows.length === d.grid.length ? `Showing all ${count(d.grid.length, "learner")}.`
    : `Showing ${rows.length} of ${count(d.grid.length, "learner")}.`;
  if (focused) { const again = document.querySelector(`#grid [data-focus="${CSS.escape(focused)}"]`); if (again) again.focus(); }
}

function sortBy(by, step) {
  state.sort = { by, step };
  $("sort").value = by === "step" ? "name" : by;
  drawGrid(state.data);
}

// ------------------------------------------------------------------ refresh
async function refresh() {
  const d = await get("/teach/api/class");
  if (!d) return;
  state.data = d;
  $("join-link").textContent = d.join.link;
  $("join-state").textContent = d.join.open ? "joining is open" : "joining is closed";
  $("joining-toggle").textContent = d.join.open ? "Close joining" : "Reopen joining";
  $("counts").textContent = `(${count(d.learners, "learner")}, ${count(d.queue.waiting, "check")} waiting)`;
  fillSelect($("filter-step"), d.steps.map((s) => s.id), (id) => `${id}: ${d.steps.find((s) => s.id === id).title}`);
  fillSelect($("filter-mistake"), [...new Set(d.misconceptions.map((m) => m.id))]);
  const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.focus : null;
  drawMisconceptions(d); drawStuck(d); drawGrid(d);
  drawIdConflicts(d);  // student ids and sign-ins (H35B's section at the end)
  if (focused && !document.activeElement.closest("#grid")) {
    const again = document.querySelector(`.attention [data-focus="${CSS.escape(focused)}"]`);
    if (again) again.focus();
  }
  if (state.learner && $("drill").open) openLearner(state.learner, null, true);
}

function later() {  // many events at once: one refresh a second at most
  if (state.timer) return;
  state.timer = setTimeout(() => { state.timer = null; refresh(); }, 1000);
}

// ------------------------------------------------------------------ actions
$("joining-toggle").addEventListener("click", async () => {
  if (await post("/teach/api/joining", { open: !state.data.join.open })) refresh();
});
$("rotate").addEventListener("click", async () => { if (await post("/teach/api/rotate-join")) refresh(); });
$("reissue").addEventListener("click", async () => {
  const d = await post("/teach/api/reissue", { learner: state.learner });
  if (d) $("new-link").textContent = d.resume_link + "  (the old link no longer works; give this one to the learner)";
});
for (const id of ["filter-name", "filter-step", "filter-standing", "filter-mistake"]) {
  // "change" too: a list picked by some browsers and drivers fires no "input", and the grid
  // then waited for the next 15 s refresh to show the filter
  for (const kind of ["input", "change"]) $(id).addEventListener(kind, () => { if (state.data) drawGrid(state.data); });
}
$("sort").addEventListener("change", () => { state.sort = { by: $("sort").value, step: null }; if (state.data) drawGrid(state.data); });
$("grid-controls").addEventListener("submit", (ev) => ev.preventDefault());
$("grid-controls").addEventListener("reset", () => setTimeout(() => { state.sort = { by: "name", step: null }; if (state.data) drawGrid(state.data); }, 0));

const es = new EventSource("/teach/api/events");
es.addEventListener("class", later);
es.addEventListener("open", () => refresh());
setInterval(refresh, 15000);
refresh();

// ---------------------------------------------------------- student ids and sign-ins (H35B)
// Its own section; `refresh` above calls drawIdConflicts(d).
const idPanel = (() => {
  const token = TOKEN, mk = el;  // the page's token and element maker (top of this file)
  const sec = mk("section", { id: "ids-sessions", "aria-labelledby": "ids-h" });
  const list = mk("ul", { id: "id-conflicts" });
  const say = mk("p", { id: "ids-status", role: "status", class: "small" });
  const out = mk("form", { method: "post", action: "/teach/logout", class: "inline" });
  out.style.display = "inline";  // beside "Sign out everywhere" (CSSOM: allowed by the CSP)
  out.append(mk("input", { type: "hidden", name: "csrf", value: token }),
    mk("button", { type: "submit", id: "sign-out" }, "Sign out"));
  const everywhere = mk("button", { type: "button", id: "sign-out-everywhere" }, "Sign out everywhere");
  const setId = mk("form", { id: "set-student-id", class: "inline" });
  const who = mk("select", { id: "set-id-learner", "aria-label": "Learner" });
  const newId = mk("input", { id: "set-id-value", maxlength: "64", "aria-label": "Student id (empty: none)" });
  setId.append("Set a learner's student id: ", who, " ", newId, " ", mk("button", { type: "submit" }, "Set id"));
  setId.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (await act("/teach/api/student-id", { learner: who.value, student_id: newId.value })) {
      say.textContent = "Student id set."; newId.value = "";
    }
  });
  const tools = mk("p");
  tools.append(out, " ", everywhere);
  sec.append(mk("h2", { id: "ids-h" }, "Student ids and sign-ins"),
    mk("p", { class: "small dim" }, "A student id belongs to one learner: a second claim is refused and shown here for you to settle. " +
      "“Sign out everywhere” ends every instructor sign-in (after a leaked link or a shared computer)."),
    list, setId, say, tools);
  (document.getElementById("main") || document.body).append(sec);

  async function act(path, body) {
    const res = await fetch(path, { method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-Attn-Token": token }, body: JSON.stringify(body || {}) });
    const data = await res.json().catch(() => ({}));
    say.textContent = res.ok ? "" : (data.error || `error ${res.status}`);
    if (res.ok && typeof refresh === "function") refresh();
    return res.ok ? data : null;
  }
  everywhere.addEventListener("click", async () => {
    if (await act("/teach/api/sign-out-everywhere")) location.assign("/teach");
  });

  function button(text, onClick) {
    const b = mk("button", { type: "button" }, text);
    b.addEventListener("click", onClick);
    return b;
  }

  return function draw(d) {
    const chosen = who.value;
    who.replaceChildren(...(d.grid || []).map((r) => mk("option", { value: r.learner },
      r.student_id ? `${r.name} (${r.student_id})` : r.name)));
    if (chosen) who.value = chosen;
    list.replaceChildren();
    const clashes = d.id_conflicts || [];
    if (!clashes.length) { list.append(mk("li", { class: "dim" }, "No student-id clashes.")); return; }
    clashes.forEach((c) => {
      const li = mk("li", { class: "id-conflict", "data-kind": c.kind });
      if (c.kind === "refused") {
        const holder = c.holder ? c.holder.name : "a learner no longer in the class";
        li.append(`${c.claimant} tried to join with student id ${c.student_id}, held by ${holder}. `,
          button(`Keep it with ${holder}`, () => act("/teach/api/settle-id", { conflict: c.conflict, give_to: "holder" })), " ",
          button(`Give it to ${c.claimant}`, () => act("/teach/api/settle-id", { conflict: c.conflict, give_to: "claimant" })
            .then((ok) => { if (ok) say.textContent = `${holder}'s id is cleared: ask ${c.claimant} to join again.`; })));
      } else {
        li.append(`Student id ${c.student_id} is held by ${c.learners.map((l) => l.name).join(" and ")} (from before ids were checked). `);
        c.learners.forEach((l) => li.append(button(`Clear ${l.name}'s id`,
          () => act("/teach/api/student-id", { learner: l.learner, student_id: "" })), " "));
      }
      list.append(li);
    });
  };
})();
function drawIdConflicts(d) { idPanel(d); }

// ------------------------------------------------------------------ the LMS gradebook (LTI 1.3)
// Self-contained: shown only when an LMS is registered (`host lti register`). Each score waiting
// for the LMS, sent, or failing with the LMS's own answer; the roster import from the course.
(function ltiPanel() {
  const main = document.getElementById("main");
  if (!main) return;
  const token = document.querySelector('meta[name="attnp-token"]').content;
  const mk = (tag, attrs, text) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const section = mk("section", { id: "lti", "aria-labelledby": "lti-h", class: "lti-panel", hidden: "" });
  const counts = mk("p", { id: "lti-counts", role: "status", "aria-live": "polite" });
  const list = mk("ul", { id: "lti-unsent" });
  const say = mk("p", { id: "lti-say", class: "small", role: "status", "aria-live": "polite" });
  const roster = mk("button", { type: "button", id: "lti-roster" }, "Import the course roster");
  section.append(mk("h2", { id: "lti-h" }, "LMS gradebook"), counts, list, roster, say);
  main.append(section);

  roster.addEventListener("click", async () => {
    say.textContent = "Importing…";
    try {
      const res = await fetch("/teach/api/lti/roster", { method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-Attn-Token": token }, body: "{}" });
      const d = await res.json().catch(() => ({}));
      if (!res.ok) { say.textContent = d.error || `error ${res.status}`; return; }
      const done = (d.imported || []).map((c) => `${c.course}: ${c.members} learners, ${c.added} new`);
      const failed = (d.failed || []).map((c) => `${c.course ? c.course + ": " : ""}${c.error}`);
      say.textContent = [...done, ...failed].join(" · ") || "Nothing to import.";
    } catch (e) { say.textContent = "The class server is not answering; try again in a moment."; }
  });

  async function refresh() {
    let d;
    try {
      const res = await fetch("/teach/api/lti", { credentials: "same-origin" });
      if (!res.ok) return;
      d = await res.json();
    } catch (e) { return; }
    section.hidden = !(d.platforms || []).length;
    const s = d.scores || {};
    counts.textContent = `Scores for the LMS: ${s.sent || 0} sent, ${s.pending || 0} waiting, ${s.failing || 0} failing.`;
    list.replaceChildren(...(d.unsent || []).map((u) => mk("li", { "data-state": u.state },
      `${u.learner}: ${u.score} / ${u.max} — ${u.state === "failing"
        ? `the LMS refused it (${u.answer}); tried ${u.attempts} times, next try in ${Math.round(u.next_try_in)} s`
        : "waiting to be sent"}`)));
    roster.hidden = !(d.courses || []).some((c) => c.roster);
  }
  refresh();
  setInterval(refresh, 10000);
})();
