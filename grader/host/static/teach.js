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
