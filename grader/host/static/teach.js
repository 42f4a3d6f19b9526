// attn-practice host: the instructor's live page. Text goes in with textContent only.
"use strict";

const TOKEN = document.querySelector('meta[name="attnp-token"]').content;
const $ = (id) => document.getElementById(id);
const MARKS = { passed: "✓", failed: "✗", stale: "~", "not started": "·" };
const state = { data: null, learner: null, timer: null };

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function notice(text) { $("notice").textContent = text; $("notice").hidden = !text; }

function minutes(s) { return s >= 60 ? `${Math.round(s / 60)} min` : `${Math.round(s)} s`; }

async function get(path) {
  try {
    const res = await fetch(path, { credentials: "same-origin" });
    const data = await res.json();
    if (!res.ok) { notice(data.error || `error ${res.status}`); return null; }
    notice("");
    return data;
  } catch (e) { notice("The server is not answering; retrying…"); return null; }
}

async function post(path, body) {
  const res = await fetch(path, { method: "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-Attn-Token": TOKEN }, body: JSON.stringify(body || {}) });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) notice(data.error || `error ${res.status}`);
  return res.ok ? data : null;
}

function drawGrid(d) {
  const t = $("grid");
  t.replaceChildren();
  const head = el("tr");
  head.append(el("th", { scope: "col" }, "learner"));
  d.steps.forEach((s) => head.append(el("th", { scope: "col", title: s.title }, s.id)));
  t.append(el("thead")); t.firstChild.append(head);
  const body = el("tbody");
  d.grid.forEach((row) => {
    const tr = el("tr", { "data-learner": row.learner });
    const th = el("th", { scope: "row" });
    const b = el("button", { type: "button", class: "link learner-name" }, row.name + (row.student_id ? ` (${row.student_id})` : ""));
    b.addEventListener("click", () => openLearner(row.learner));
    th.append(b); tr.append(th);
    row.steps.forEach((c) => {
      const td = el("td", { class: c.standing.replace(" ", "-"), "data-step": c.step, "data-standing": c.standing });
      td.textContent = `${MARKS[c.standing] || "?"} ${c.standing}`;
      if (c.checks || c.hints || c.seconds) {
        td.append(el("br"), el("span", { class: "small dim" },
          `${c.checks} checks · ${c.hints} hints · ${minutes(c.seconds)}`));
      }
      if (c.diagnoses.length) td.append(el("br"), el("span", { class: "small" }, c.diagnoses.join(", ")));
      tr.append(td);
    });
    body.append(tr);
  });
  t.append(body);
  $("counts").textContent = `(${d.learners} learners, ${d.queue.waiting} checks waiting)`;
}

function drawMisconceptions(d) {
  const t = $("misconceptions");
  t.replaceChildren();
  const head = el("tr");
  ["step", "mistake", "learners", "who", "what it means", "nudge"].forEach((h) => head.append(el("th", { scope: "col" }, h)));
  t.append(head);
  if (!d.misconceptions.length) {
    const tr = el("tr"); tr.append(el("td", { colspan: "6", class: "dim" }, "No known mistake in anyone's latest failing check."));
    t.append(tr); return;
  }
  d.misconceptions.forEach((m) => {
    const tr = el("tr", { "data-id": m.id, "data-step": m.step });
    tr.append(el("td", {}, m.step), el("td", {}, `${m.title} (${m.id})`), el("td", { class: "count" }, String(m.count)),
      el("td", {}, m.learners.map((l) => l.name).join(", ")), el("td", {}, m.explanation), el("td", {}, m.nudge));
    t.append(tr);
  });
}

function drawStuck(d) {
  const ul = $("stuck");
  ul.replaceChildren();
  if (!d.stuck.length) { ul.append(el("li", { class: "dim" }, "Nobody is stuck right now.")); return; }
  d.stuck.forEach((s) => ul.append(el("li", {},
    `${s.name}: ${s.step}, ${s.checks} checks, ${minutes(s.seconds)}${s.diagnoses.length ? " · " + s.diagnoses.join(", ") : ""}`)));
}

async function refresh() {
  const d = await get("/teach/api/class");
  if (!d) return;
  state.data = d;
  $("join-link").textContent = d.join.link;
  $("join-state").textContent = d.join.open ? "joining is open" : "joining is closed";
  $("joining-toggle").textContent = d.join.open ? "Close joining" : "Reopen joining";
  drawGrid(d); drawMisconceptions(d); drawStuck(d);
  drawIdConflicts(d);  // student ids and sign-ins (H35B's section at the end)
  if (state.learner) openLearner(state.learner, true);
}

function later() {  // many events at once: one refresh a second at most
  if (state.timer) return;
  state.timer = setTimeout(() => { state.timer = null; refresh(); }, 1000);
}

async function openLearner(id, quiet) {
  const d = await get("/teach/api/learner/" + encodeURIComponent(id));
  if (!d) return;
  state.learner = id;
  $("drill").hidden = false;
  $("drill-h").textContent = `Learner: ${d.learner.name}`;
  if (!quiet) $("new-link").textContent = "";
  const body = $("drill-body");
  body.replaceChildren();
  d.steps.forEach((s) => {
    if (s.code === null && !s.report) return;
    const sec = el("details", { "data-step": s.step });
    sec.append(el("summary", {}, `${s.step} · ${s.standing}${s.diagnoses.length ? " · " + s.diagnoses.join(", ") : ""} · ${s.history.length} versions`));
    if (s.code !== null) sec.append(el("pre", { class: "code" }, s.code));
    if (s.report) {
      const step = (s.report.steps || [])[0] || {};
      const lines = (step.tests || []).filter((t) => t.status !== "passed").slice(0, 3).map((t) => `✗ ${t.name}: ${t.message || ""}`);
      sec.append(el("pre", { class: "report" }, `${step.status || s.report.error}\n${step.error || ""}\n${lines.join("\n")}`));
    }
    body.append(sec);
  });
}

$("joining-toggle").addEventListener("click", async () => {
  if (await post("/teach/api/joining", { open: !state.data.join.open })) refresh();
});
$("rotate").addEventListener("click", async () => { if (await post("/teach/api/rotate-join")) refresh(); });
$("reissue").addEventListener("click", async () => {
  const d = await post("/teach/api/reissue", { learner: state.learner });
  if (d) $("new-link").textContent = d.resume_link + "  (the old link no longer works; give this one to the learner)";
});

const es = new EventSource("/teach/api/events");
es.addEventListener("class", later);
es.addEventListener("open", () => refresh());
setInterval(refresh, 15000);
refresh();

// ---------------------------------------------------------- student ids and sign-ins (H35B)
// Self-contained: its own section, helpers and token; `refresh` above calls drawIdConflicts(d).
const idPanel = (() => {
  const token = document.querySelector('meta[name="attnp-token"]').content;
  const mk = (tag, attrs, text) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const sec = mk("section", { id: "ids-sessions", "aria-labelledby": "ids-h" });
  const list = mk("ul", { id: "id-conflicts" });
  const say = mk("p", { id: "ids-status", role: "status", class: "small" });
  const out = mk("form", { method: "post", action: "/teach/logout", class: "inline" });
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
