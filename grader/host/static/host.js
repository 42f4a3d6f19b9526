// attn-practice host: what the hosted page adds to serve's page (serve's app.js runs unchanged).
// - "Earlier versions": every save is a version; list them and restore one.
// - While a check waits for a free checker, its place in the queue.
// Text from the server goes in with textContent only.
"use strict";

(function () {
  const token = document.querySelector('meta[name="attnp-token"]').content;
  const byId = (id) => document.getElementById(id);

  function make(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function currentStep() {
    try { if (typeof page !== "undefined" && page.step) return page.step; } catch (e) { /* not yet */ }
    const m = location.pathname.match(/^\/step\/(step\d+)$/);
    return m ? m[1] : null;
  }

  // ---------------------------------------------------------- versions
  const box = make("details", { id: "versions", class: "versions" });
  box.append(make("summary", {}, "Earlier versions of this file"));
  const list = make("ol", { id: "version-list", class: "version-list" });
  const status = make("p", { id: "version-status", class: "dim small", role: "status" });
  box.append(status, list);
  const anchor = byId("reset-confirm");
  if (anchor) anchor.after(box);

  async function loadVersions() {
    const step = currentStep();
    if (!step) return;
    status.textContent = "Loading…";
    let data;
    try {
      const res = await fetch(`/api/step/${step}/versions`, { credentials: "same-origin" });
      data = await res.json();
      if (!res.ok) { status.textContent = data.error || "Could not load the versions."; return; }
    } catch (e) { status.textContent = "The class server is not answering; try again in a moment."; return; }
    list.replaceChildren();
    status.textContent = data.versions.length
      ? "Every save is kept. Restoring one saves it again as the newest (nothing is lost)."
      : "No saved versions yet: the stub is what you started from.";
    data.versions.forEach((v, i) => {
      const li = make("li", { "data-version": v.id });
      const when = new Date(v.created * 1000).toLocaleString();
      li.append(make("span", {}, `${when} · ${v.lines} line${v.lines === 1 ? "" : "s"} · ${result(v.check)}` +
        `${i === 0 ? " · newest" : ""} `));
      if (i > 0) {
        const b = make("button", { type: "button", class: "restore", "data-version": v.id }, "Restore");
        b.addEventListener("click", () => restore(step, v.id));
        li.append(b);
      }
      const older = data.versions[i + 1];
      const more = make("details", { class: "change" });
      more.append(make("summary", {}, older ? "What changed since the version before" : "Show this first version"));
      more.addEventListener("toggle", () => { if (more.open && more.children.length === 1) showChange(more, v, older); });
      li.append(more);
      list.append(li);
    });
  }

  // The check's result for one version, as the server stored it (none: never checked as it was).
  function result(check) {
    if (!check) return "not checked";
    const mistakes = check.diagnoses && check.diagnoses.length ? ` (${check.diagnoses.join(", ")})` : "";
    return check.passed ? "✓ its check passed" : `✗ its check ${check.status}${mistakes}`;
  }

  const texts = new Map();
  async function text(id) {
    if (!texts.has(id)) {
      const res = await fetch(`/api/version/${encodeURIComponent(id)}`, { credentials: "same-origin" });
      if (!res.ok) throw new Error(`error ${res.status}`);
      texts.set(id, (await res.json()).content);
    }
    return texts.get(id);
  }

  async function showChange(box, v, older) {
    const wait = make("p", { class: "dim small" }, "Loading…");
    box.append(wait);
    try {
      const now = await text(v.id);
      if (older) box.append(window.attnpDiff.block(await text(older.id), now, "what changed in this version"));
      else box.append(make("pre", { class: "code", tabindex: "0" }, now));
      wait.remove();
    } catch (e) { wait.textContent = "The class server is not answering; close and open this again in a moment."; }
  }

  async function restore(step, id) {
    status.textContent = "Restoring…";
    const res = await fetch(`/api/step/${step}/restore`, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-Attn-Token": token },
      body: JSON.stringify({ version: id }),
    });
    const data = await res.json().catch(() => ({}));
    if (!res.ok) { status.textContent = data.error || "Could not restore it."; return; }
    location.reload();
  }

  box.addEventListener("toggle", () => { if (box.open) loadVersions(); });
  // a new save or a check's result changes the list: drawn again while it is open
  const saved = byId("save-status");
  if (saved) new MutationObserver(() => { if (box.open && saved.textContent.startsWith("Saved")) loadVersions(); })
    .observe(saved, { childList: true, characterData: true, subtree: true });
  new MutationObserver(() => { if (box.open) loadVersions(); })  // the page counts the reports it draws
    .observe(document.body, { attributes: true, attributeFilter: ["data-reports"] });

  // ---------------------------------------------------------- the check's place in the queue
  function showQueue(d) {
    if (d.step !== currentStep()) return;
    const line = byId("checking");
    if (!line) return;
    if (d.position === null || d.position === undefined) return;
    line.textContent = d.position > 0
      ? `Waiting for a free checker: ${d.position - 1} check${d.position === 2 ? "" : "s"} ahead of yours…`
      : "Checking your file…";
  }

  function listen() {
    const es = new EventSource("/api/events");
    es.addEventListener("queue", (ev) => showQueue(JSON.parse(ev.data)));
  }
  listen();
})();
