// attn-practice serve: the page's own small script (no third-party code).
// Text from the server is put in with textContent; only the server's own
// HTML fragments (lessons, reports: escaped there) go through innerHTML.
"use strict";

// The token: from the link serve printed (?token=...), kept in this origin's own storage (no
// other port or site can read it), sent in a header. A server that embeds it in the page may
// put it in the meta tag instead. The cookie the server sets opens only this page's shell.
const TOKEN_KEY = "attnp-token";
const TOKEN = (() => {
  const meta = document.querySelector('meta[name="attnp-token"]');
  const fromMeta = meta && meta.content && !meta.content.startsWith("{{") ? meta.content : "";
  const fromUrl = new URLSearchParams(location.search).get("token") || "";
  let kept = "";
  try { kept = localStorage.getItem(TOKEN_KEY) || ""; } catch (e) { kept = ""; }
  if (fromUrl && !fromMeta) { try { localStorage.setItem(TOKEN_KEY, fromUrl); } catch (e) { /* private mode */ } }
  return fromMeta || fromUrl || kept;
})();
const $ = (id) => document.getElementById(id);
const page = { step: null, version: "", saved: "", dirty: false, busy: false, data: null, pending: null };
// A hosted class's page (the host adds this meta tag) has no terminal, no folder and no `serve`:
// its words name the class server and the page's own version history instead.
const HOSTED = !!document.querySelector('meta[name="attnp-mode"][content="hosted"]');
const WORDS = HOSTED ? {
  restarted: "The class server no longer accepts this page (you were signed out, or your resume " +
    "link was replaced). Open your resume link again, or ask your instructor for a new one. " +
    "Your text in the editor is kept.",
  down: "The class server is not answering right now; this page keeps trying by itself.",
  lost: "Lost the connection to the class server; retrying… (your text in the editor is kept)",
  unsent: "Not saved yet: the class server is not answering. Your text is kept in this page " +
    "(even through a reload) and is saved as soon as the server answers.",
  forced: "Saved yours; the other version stays in Earlier versions, below the editor.",
  conflict: " It was saved from another tab or computer. Load that version, or keep yours " +
    "(the other then stays in Earlier versions, never lost).",
  reset: (file) => `Replace ${file} with a fresh stub? Your version stays in Earlier versions, below the editor.`,
  readonly: "Not saved: this file cannot be edited on this page.",
  changed: (file) => `${file} was saved from another tab or computer; loaded it here.`,
  checkLost: "The class server stopped answering during this check; your saved file is kept. A check " +
    "the server had taken runs again when it is back, and its result shows here by itself; if none " +
    "shows then, check again.",
} : {
  restarted: "The server no longer accepts this page: it was restarted with a new token " +
    "(--rotate-token), or another workspace is served at this address. Open the link that " +
    "`attn-practice serve` printed in its terminal (it ends in ?token=...). Your text in the editor is kept.",
  down: "The server is not answering: is `attn-practice serve` still running?",
  lost: "Lost the connection to attn-practice serve; retrying… (your text in the editor is kept)",
  unsent: "Not saved yet: the server is not answering (is `attn-practice serve` still running?). " +
    "Your text is kept in this page and saved as soon as it answers.",
  forced: "Saved yours; the version on disk was backed up in backups/.",
  conflict: " It was changed outside this page (another editor?). Load that version, or keep yours " +
    "(the version on disk is then backed up in backups/, never lost).",
  reset: (file) => `Replace ${file} with a fresh stub? Your version is backed up in backups/ first.`,
  readonly: "Not saved: this file can only be edited in your own editor.",
  changed: (file) => `${file} was changed outside this page; reloaded it and checking it again.`,
  checkLost: "The server is not answering: is `attn-practice serve` still running?",
};
const RESTARTED = WORDS.restarted;

// The token leaves the address bar (the page's storage and a header carry it from now on).
if (location.search.includes("token=")) {
  history.replaceState(null, "", location.pathname + location.hash);
}

async function api(path, body) {
  const opts = { headers: { "X-Attn-Token": TOKEN }, credentials: "same-origin" };
  if (body !== undefined) {
    opts.method = "POST";
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, opts);
  } catch (e) {
    notice(WORDS.down);
    $("notice").dataset.down = "1";  // cleared by the next answer: no stale "not answering" after recovery
    return { ok: false, status: 0, data: { error: WORDS.down }, retryAfter: 0 };
  }
  if ($("notice").dataset.down && res.status < 500) {
    delete $("notice").dataset.down;
    if ($("notice").textContent === WORDS.down) notice("");
  }
  let data = {};
  try { data = await res.json(); } catch (e) { data = { error: "the server sent no JSON" }; }
  if (res.status === 403) { notice(RESTARTED); document.body.dataset.refused = "true"; }
  const retryAfter = Number(res.headers.get("Retry-After")) || Number(data.retry_after) || 0;
  return { ok: res.ok, status: res.status, data, retryAfter };
}

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  if (text !== undefined) e.textContent = text;
  return e;
}

function notice(text) {
  const n = $("notice");
  n.textContent = text;
  n.hidden = !text;
}

const MARK = { passed: "✓", failed: "✗", "not started": "·", stale: "↻" };

// ------------------------------------------------------------------ sidebar
async function refreshSummary() {
  const { ok, data } = await api("/api/summary");
  if (!ok) return null;
  const list = $("step-list");
  list.replaceChildren();
  for (const s of data.steps) {
    // A file changed since its last check is never shown as passed: its result is stale.
    const shown = s.stale ? "stale" : s.status;
    const a = el("a", { href: "/step/" + s.id, class: "status-" + shown.replace(" ", "-"),
      "data-step": s.id, "data-status": shown });
    if (s.id === page.step) a.setAttribute("aria-current", "page");
    a.append(el("span", { class: "mark", "aria-hidden": "true" }, MARK[shown] || "·"), " ");
    a.append(el("span", { class: "step-name" }, `${s.number}. ${s.title.split(":")[0]}`));
    const said = s.stale ? `changed since its last check (${s.status} then)` : s.status;
    a.append(el("span", { class: "state" }, ` ${said}${s.bonus ? " · bonus" : ""}`));
    const li = el("li");
    li.append(a);
    list.append(li);
  }
  $("workspace-path").textContent = "Workspace: " + data.workspace;
  if (data.warnings && data.warnings.length) notice(data.warnings.join(" "));
  return data;
}

// ------------------------------------------------------------------ one step
async function loadStep(id) {
  const { ok, status, data } = await api("/api/step/" + encodeURIComponent(id));
  if (!ok) {
    $("title").textContent = status === 404 ? "No such step" : "Could not load the step";
    notice(data.error || "");
    return;
  }
  page.step = data.id;
  page.data = data;
  document.title = `${data.id}: ${data.title} · attn-practice`;
  $("title").textContent = `Step ${data.number}: ${data.title}`;
  $("kind").textContent = kindText(data);
  $("lesson-body").innerHTML = data.lesson_html;
  $("task-body").innerHTML = data.task_html;
  $("editor-h").textContent = "Your file: " + data.file;
  $("file-path").textContent = data.path;
  $("code").setAttribute("aria-label", "Your code: " + data.file);
  showFile(data.content, data.version, data.file_problem);
  showHints(data.hints, data.hints_total);
  showSolution(data.solution);
  showLastReport(data.last_report);
  restoreUnsent(data);
}

function kindText(data) {
  const kind = data.bonus ? "bonus step" : "core step";
  return data.stale ? `${kind} · changed since its last check (${data.status} then): check it again`
    : `${kind} · ${data.status}`;
}

// The last check's report survives a reload; it says so when the file changed since.
function showLastReport(r) {
  const body = $("report-body");
  if (!r) {
    body.replaceChildren(el("p", { class: "dim" }, "Not checked yet: write your code above, then Save or Check."));
    delete body.dataset.status;
    delete body.dataset.stale;
    return;
  }
  body.innerHTML = r.html;
  body.dataset.status = r.status;
  body.dataset.stale = String(!!r.stale);
  if (r.stale) {
    body.prepend(el("p", { class: "notice stale", id: "report-stale" },
      `This is the last check's report, for an earlier version of ${page.data.file}: the file changed since. Check again.`));
  }
}

function showFile(text, version, problem) {
  const code = $("code");
  $("file-problem").hidden = !problem;
  $("file-problem").textContent = problem || "";
  code.disabled = text === null;
  code.value = text === null ? "" : text;
  page.version = version;
  page.saved = code.value;
  page.dirty = false;
  $("conflict").hidden = true;
  gutter();
}

function showHints(hints, total) {
  $("hints").hidden = hints.length === 0;
  const list = $("hint-list");
  list.replaceChildren();
  hints.forEach((h) => { const li = el("li"); li.innerHTML = h; list.append(li); });
  $("hint").textContent = hints.length < total
    ? `Reveal a hint (${hints.length} of ${total} shown)` : `All ${total} hints shown`;
  $("hint").disabled = hints.length >= total;
}

function showSolution(sol) {
  $("solution").hidden = !sol;
  if (!sol) return;
  $("solution-code").textContent = sol.code;
  $("solution-note").innerHTML = sol.note_html;
}

// ------------------------------------------------------------------ the editor
function gutter() {
  const n = $("code").value.split("\n").length;
  // The editor grows with the file (10 to 40 lines visible), so the report stays in sight.
  $("editor").style.height = `calc(${Math.min(Math.max(n + 2, 10), 40) * 1.4}em + 1.2rem)`;
  let s = "";
  for (let i = 1; i <= n; i++) s += i + "\n";
  $("gutter").textContent = s;
  $("gutter").scrollTop = $("code").scrollTop;
}

let leaveOnTab = false;
function editorKeys(ev) {
  const ta = ev.target;
  if ((ev.ctrlKey || ev.metaKey) && ev.key.toLowerCase() === "s") {
    ev.preventDefault();
    saveAndCheck();
    return;
  }
  if (ev.key === "Escape") { leaveOnTab = true; return; }
  if (ev.key === "Tab" && !leaveOnTab && !ev.ctrlKey && !ev.altKey && !ev.metaKey) {
    ev.preventDefault();
    const { selectionStart: a, selectionEnd: b, value } = ta;
    const lineStart = value.lastIndexOf("\n", a - 1) + 1;
    if (ev.shiftKey || a !== b) {
      const end = value.indexOf("\n", b - 1 < a ? b : b - 1);
      const stop = end === -1 ? value.length : end;
      const lines = value.slice(lineStart, stop).split("\n");
      const changed = lines.map((l) => ev.shiftKey ? l.replace(/^ {1,4}/, "") : "    " + l);
      ta.setRangeText(changed.join("\n"), lineStart, stop, "select");
    } else {
      ta.setRangeText("    ", a, b, "end");
    }
    edited();
    return;
  }
  leaveOnTab = false;
  if (ev.key === "Enter" && !ev.shiftKey) {
    const { selectionStart: a, value } = ta;
    const lineStart = value.lastIndexOf("\n", a - 1) + 1;
    const indent = value.slice(lineStart, a).match(/^[ \t]*/)[0];
    const extra = /:\s*$/.test(value.slice(lineStart, a)) ? "    " : "";
    ev.preventDefault();
    ta.setRangeText("\n" + indent + extra, a, ta.selectionEnd, "end");
    edited();
  }
}

function edited() {
  page.dirty = $("code").value !== page.saved;
  const p = page.pending;  // text waiting for the server: the newest keystrokes wait with it
  if (p && p.step === page.step) keep(p.step, $("code").value, p.base, p.force);
  $("save-status").textContent = page.dirty ? "Unsaved changes" : "";
  gutter();
}

// ------------------------------------------------------------------ save, check
function save(force) {
  page.saving = doSave(force).finally(() => { page.saving = null; });
  return page.saving;
}

async function doSave(force) {
  if ($("code").disabled) {  // a file the page cannot edit (not UTF-8, too big, a link out): never overwritten
    $("save-status").textContent = WORDS.readonly;
    return false;
  }
  const content = $("code").value;
  const step = page.step;
  const { ok, status, data, retryAfter } = await api(`/api/step/${step}/save`,
    { content, base: page.version, force: !!force });
  if (status === 409) {
    forget(step);
    conflict(data.disk_content, data.disk_version, data.error);
    return false;
  }
  if (UNANSWERED.has(status)) {  // the server is away (or busy): the text waits in the page
    keep(step, content, page.version, force);
    $("save-status").textContent = status === 429 ? `Not saved yet: ${data.error || "saving too often"} ` +
      "It is saved by itself after the wait." : WORDS.unsent;
    retryUnsent(retryAfter);
    return false;
  }
  if (!ok) { $("save-status").textContent = "Not saved: " + (data.error || status); return false; }
  forget(step);
  page.version = data.version;
  page.saved = content;
  page.dirty = $("code").value !== page.saved;
  $("conflict").hidden = true;
  loadWidgets();  // the saved file is what the widgets run now
  refreshSummary();
  api("/api/step/" + page.step).then(({ ok, data }) => { if (ok) $("kind").textContent = kindText(data); });
  $("save-status").textContent = force ? WORDS.forced : "Saved.";
  return true;
}

// ------------------------------------------------------------------ saves the server did not take yet
// A save made while the server does not answer stays here (in memory and in this browser's storage,
// so a reload keeps it too) and is sent when the server answers again; "Saved." only once it is stored.
const UNANSWERED = new Set([0, 429, 502, 503, 504]);
const UNSENT_PREFIX = "attnp-unsent:";
let unsentTimer = null;

function unsentKey(step) {
  let h = 0;  // the page's token names whose text it is (two learners on one computer never mix)
  for (const c of TOKEN) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return `${UNSENT_PREFIX}${h.toString(36)}:${step}`;
}

function keep(step, content, base, force) {
  page.pending = { step, content, base, force: !!force, at: Date.now() };
  try { localStorage.setItem(unsentKey(step), JSON.stringify(page.pending)); } catch (e) { /* private mode: memory only */ }
  document.body.dataset.unsent = step;
}

function forget(step) {
  if (page.pending && page.pending.step === step) page.pending = null;
  try { localStorage.removeItem(unsentKey(step)); } catch (e) { /* nothing kept */ }
  if (!page.pending) delete document.body.dataset.unsent;
}

function kept(step) {
  try { return JSON.parse(localStorage.getItem(unsentKey(step)) || "null"); } catch (e) { return null; }
}

function retryUnsent(seconds) {
  clearTimeout(unsentTimer);
  unsentTimer = setTimeout(sendUnsent, Math.max(2, seconds || 0) * 1000);
}

async function sendUnsent() {
  clearTimeout(unsentTimer);
  const p = page.pending;
  if (!p || p.step !== page.step || page.saving) { if (p) retryUnsent(2); return; }
  await save(p.force);
}

// A text kept from an earlier visit (the server was away, then the page was reloaded): put it back.
function restoreUnsent(data) {
  const p = kept(data.id);
  if (!p || typeof p.content !== "string") return;
  if (p.content === data.content) { forget(data.id); return; }  // it was stored after all
  $("code").value = p.content;
  keep(p.step, p.content, p.base, p.force);
  edited();
  if (p.base === data.version) {
    $("save-status").textContent = "Your unsaved text from before is back in the editor; saving it…";
    sendUnsent();
  } else {  // the stored file moved on meanwhile: the learner chooses, nothing is overwritten
    conflict(data.content, data.version, `Your unsaved text from before is back in the editor, but ` +
      `${data.file} was saved again meanwhile.`);
  }
}

function conflict(diskText, diskVersion, why) {
  page.disk = { text: diskText, version: diskVersion };
  $("conflict-text").textContent = (why || `${page.data.file} changed on disk.`) + WORDS.conflict;
  $("conflict").hidden = false;
  $("conflict-reload").focus();
}

let checkAgainTimer = null;
async function check() {
  if (page.busy) return;
  page.busy = true;
  clearTimeout(checkAgainTimer);
  $("check").disabled = true;
  const shown = $("report-body");  // what the learner saw: kept if the check is refused
  const before = { nodes: [...shown.childNodes], status: shown.dataset.status, stale: shown.dataset.stale };
  checking();
  try {
    const { ok, status, data, retryAfter } = await api(`/api/step/${page.step}/check`, {});
    if (ok) showReport(data);
    else if (status === 429) refused(before, data.error, retryAfter);
    else if (UNANSWERED.has(status)) refused(before, status ? data.error : WORDS.checkLost, 0);
    else $("report-body").textContent = data.error || "The check failed to run.";
  } finally {
    page.busy = false;
    $("check").disabled = false;
    $("report").setAttribute("aria-busy", "false");
  }
}

// A check refused (too often, or the server away): the last report stays, a line above it says
// why, and the page checks again by itself after the wait the server named.
function refused(before, why, wait) {
  const body = $("report-body");  // the same element (others hold it): its children and marks put back
  body.replaceChildren(...before.nodes);
  for (const k of ["status", "stale"]) { if (before[k] === undefined) delete body.dataset[k]; else body.dataset[k] = before[k]; }
  const line = el("p", { class: "notice", id: "check-refused", role: "status" },
    wait ? `${why || "You are checking very often."} This page checks again by itself in ${Math.ceil(wait)} s; ` +
      "below is your last report." : (why || WORDS.down));
  const old = $("check-refused");
  if (old) old.remove();
  $("report-body").prepend(line);
  if (wait) {
    const step = page.step;
    checkAgainTimer = setTimeout(() => { if (page.step === step) check(); }, (Math.ceil(wait) + 0.2) * 1000);
  }
}

function checking() {
  $("report").setAttribute("aria-busy", "true");
  $("report-body").replaceChildren(el("p", { class: "dim", id: "checking" }, `Checking ${page.data.file}…`));
}

async function saveAndCheck() {
  if (!$("code").disabled && (page.dirty || !page.version)) { if (!(await save(false))) return; }
  await check();
}

function showReport(r) {
  document.body.dataset.reports = String(Number(document.body.dataset.reports || 0) + 1);  // for tests and tools
  loadWidgets();  // every check may change whose code the widgets can use, and their labels
  if (r.step !== page.step) { refreshSummary(); return; }
  $("report").setAttribute("aria-busy", "false");
  $("report-body").innerHTML = r.html;
  $("report-body").dataset.status = r.status;
  delete $("report-body").dataset.stale;
  refreshSummary();
  api("/api/step/" + page.step).then(({ ok, data }) => {
    if (!ok) return;
    showSolution(data.solution);
    $("kind").textContent = kindText(data);
  });
}

// ------------------------------------------------------------------ events from the server
// After a restart of serve (same port, same token: both are kept in the workspace) the stream
// comes back by itself and the page catches up; a server that refuses our token is said in words.
let events = null;
function listen() {
  const es = new EventSource("/api/events?token=" + encodeURIComponent(TOKEN));
  events = es;
  es.addEventListener("open", () => {
    delete document.body.dataset.refused;
    if ($("notice").dataset.lost) {
      notice("");
      delete $("notice").dataset.lost;
      catchUp();
    }
    if (page.pending) sendUnsent();
    document.body.dataset.connected = "true";
  });
  es.addEventListener("error", async () => {
    document.body.dataset.connected = "false";
    $("notice").dataset.lost = "1";
    if (es.readyState !== EventSource.CLOSED) {
      notice(WORDS.lost);
      return;
    }
    es.close();  // the server answered, but not with the stream: ask it why
    const { status } = await api("/api/summary");
    if (status !== 403) {
      notice(WORDS.lost);
    }
    setTimeout(listen, status === 403 ? 3000 : 1000);
  });
  es.addEventListener("file-changed", async (ev) => {
    const d = JSON.parse(ev.data);
    refreshSummary();  // the step may now be stale
    loadWidgets();  // the widgets run the file as it is now
    if (page.saving) await page.saving;  // our own save's echo may arrive before its answer
    if (d.step !== page.step || d.version === page.version) return;
    const { ok, data } = await api("/api/step/" + page.step);
    if (!ok || data.version === page.version) return;
    if (page.dirty) {
      conflict(data.content, data.version);
    } else {
      showFile(data.content, data.version, data.file_problem);
      notice(WORDS.changed(data.file));
    }
  });
  es.addEventListener("checking", (ev) => {
    const d = JSON.parse(ev.data);
    if (d.step === page.step && d.origin !== "page") checking();
  });
  es.addEventListener("check", (ev) => {
    const d = JSON.parse(ev.data);
    if (d.origin !== "page" || !page.busy) showReport(d);
    else refreshSummary();
  });
  // A hosted class runs a check that was queued when its server stopped again on start, and
  // sends the result here: shown by itself (the page's own check in flight answers for itself).
  es.addEventListener("checked", (ev) => {
    const d = JSON.parse(ev.data);
    if (d.html && (!page.busy || d.step !== page.step)) showReport(d);
  });
}

async function catchUp() {
  // The server restarted (or came back): its files and results may have moved on.
  await refreshSummary();
  const { ok, data } = await api("/api/step/" + page.step);
  if (ok) {
    page.data = data;
    $("kind").textContent = kindText(data);
    if (!page.dirty && !page.pending && data.version !== page.version) showFile(data.content, data.version, data.file_problem);
    // a check lost with the server is said until its result (or a stored report) comes
    if (!page.busy && (data.last_report || !$("check-refused"))) showLastReport(data.last_report);
  }
  loadWidgets();
}

// ------------------------------------------------------------------ widgets
function bars(container, labels, values, opts) {
  container.replaceChildren();
  const max = (opts && opts.max) || 1;
  const ul = el("ul", { class: "bar-list", "aria-label": (opts && opts.label) || "weights" });
  labels.forEach((label, i) => {
    const v = values[i];
    const li = el("li");
    li.append(el("span", { class: "bar-label" }, label));
    const track = el("span", { class: "bar-track", "aria-hidden": "true" });
    const bar = el("span", { class: "bar" });
    bar.style.width = Math.max(0, Math.min(100, (100 * v) / max)).toFixed(1) + "%";
    track.append(bar);
    li.append(track, el("span", { class: "bar-value" }, v.toFixed(3)));
    ul.append(li);
  });
  container.append(ul);
}

// Whose code computed each stage, and where it departs from the reference: drawn under the label.
function showSource(prefix, data) {
  const src = $(prefix + "-source");
  src.textContent = data.label;
  src.dataset.source = data.source;
  src.dataset.yours = (data.yours || []).join(",");
  src.dataset.reference = (data.reference || []).join(",");
  src.dataset.stale = (data.stale || []).join(",");
  let box = $(prefix + "-stages-who");
  if (!box) {
    box = el("ol", { id: prefix + "-stages-who", class: "who small" });
    src.after(box);
  }
  box.replaceChildren();
  for (const st of data.stages || []) {
    const whose = st.source === "yours" ? `your ${st.function} (step ${st.number})`
      : `the reference ${st.function} (step ${st.number})${st.why ? ": " + st.why : ""}`;
    const verdict = !st.differs ? "matches the reference"
      : st.inherited ? "differs, only because an earlier stage fed it different numbers"
      : "differs from the reference";
    const li = el("li", { "data-stage": st.stage, "data-source": st.source, "data-differs": String(st.differs),
      class: (st.first ? "first-departure " : "") + (st.differs ? "differs" : "same") },
      `${st.stage} = ${st.call}: ${whose}; ${verdict}${st.first ? " ← first departure" : ""}`);
    box.append(li);
  }
}

let heat = null;
async function loadHeatmap() {
  const { ok, data } = await widgetApi("/api/widget/heatmap");
  if (!ok) return;
  // Rebuilding the table must not drop the keyboard focus to <body>: remember the focused row.
  const focused = document.activeElement && document.activeElement.closest
    && document.activeElement.closest("#heatmap") ? document.activeElement.dataset.token : null;
  heat = data;
  showSource("heatmap", data);
  $("heatmap-sentence").textContent = "“" + data.sentence + "”";
  const t = $("heatmap");
  t.replaceChildren();
  t.append(el("caption", { class: "sr" }, "Attention weights: rows are queries, columns are keys"));
  const head = el("tr");
  head.append(el("th", { scope: "col" }, "query ↓ key →"));
  data.tokens.forEach((tok) => head.append(el("th", { scope: "col" }, tok)));
  const thead = el("thead"); thead.append(head); t.append(thead);
  const tbody = el("tbody");
  data.weights.forEach((row, i) => {
    const tr = el("tr", { "data-row": String(i) });
    const th = el("th", { scope: "row" });
    const b = el("button", { type: "button", class: "row-button", "data-token": data.tokens[i],
      "aria-label": `show where "${data.tokens[i]}" looks` }, data.tokens[i]);
    b.addEventListener("click", () => selectRow(i));
    b.addEventListener("keydown", (ev) => {
      const d = ev.key === "ArrowDown" ? 1 : ev.key === "ArrowUp" ? -1 : 0;
      if (!d) return;
      ev.preventDefault();
      const j = (i + d + data.tokens.length) % data.tokens.length;
      selectRow(j);
      tbody.querySelectorAll(".row-button")[j].focus();
    });
    th.append(b); tr.append(th);
    row.forEach((w, j) => {
      const td = el("td", { title: `${data.tokens[i]} → ${data.tokens[j]}: ${w.toFixed(3)}` },
        w >= 0.005 ? w.toFixed(2).replace(/^0/, "") : "");
      td.style.setProperty("--w", String(w));
      if (w >= 0.3) td.classList.add("hot");
      tr.append(td);
    });
    tbody.append(tr);
  });
  t.append(tbody);
  const keep = $("heatmap-bars").dataset.row;
  selectRow(Math.max(0, data.tokens.indexOf(keep && data.tokens.includes(keep) ? keep : "it")));
  if (focused) {
    const b = t.querySelector(`.row-button[data-token="${CSS.escape(focused)}"]`);
    if (b) b.focus();
  }
}

function selectRow(i) {
  if (!heat) return;
  document.querySelectorAll("#heatmap tr.selected").forEach((r) => r.classList.remove("selected"));
  document.querySelectorAll("#heatmap .row-button").forEach((b, j) => b.setAttribute("aria-pressed", String(j === i)));
  const tr = document.querySelector(`#heatmap tr[data-row="${i}"]`);
  if (tr) tr.classList.add("selected");
  const box = $("heatmap-bars");
  const w = heat.weights[i];
  const top = w.indexOf(Math.max(...w));
  box.replaceChildren(el("p", { id: "heatmap-summary" },
    `“${heat.tokens[i]}” puts the most weight on “${heat.tokens[top]}” (${w[top].toFixed(2)}).`));
  const holder = el("div");
  box.append(holder);
  bars(holder, heat.tokens, w, { label: `weights of "${heat.tokens[i]}"` });
  if (heat.attention_weights) {  // the grid is steps 1-4; the learner's step 5 answers differently
    box.append(el("p", { class: "small", id: "heatmap-attention-note" },
      "Your attention (step 5), called in one go, gives different weights for this row:"));
    const own = el("div", { class: "attention-bars" });
    box.append(own);
    bars(own, heat.tokens, heat.attention_weights[i], { label: `your attention's weights of "${heat.tokens[i]}"` });
  }
  if (heat.reference_weights) {
    box.append(el("p", { class: "small" }, "The reference's weights for the same row:"));
    const ref = el("div", { class: "reference-bars" });
    box.append(ref);
    bars(ref, heat.tokens, heat.reference_weights[i], { label: `reference weights of "${heat.tokens[i]}"` });
  }
  box.dataset.row = heat.tokens[i];
}

const Q0 = [1, 0, 1, 0];
let exampleSeq = 0, exampleInFlight = false, exampleAgain = false;
function buildSliders() {
  const box = $("q-sliders");
  box.replaceChildren();
  Q0.forEach((v, i) => {
    const id = "q" + i;
    const wrap = el("div", { class: "slider" });
    const label = el("label", { for: id }, `q[${i}] = `);
    const out = el("output", { id: id + "-value", for: id }, v.toFixed(1));
    label.append(out);
    const input = el("input", { id, type: "range", min: "-3", max: "3", step: "0.1", value: String(v),
      "aria-valuetext": `q[${i}] = ${v.toFixed(1)}` });
    input.addEventListener("input", () => {
      out.textContent = Number(input.value).toFixed(1);
      input.setAttribute("aria-valuetext", `q[${i}] = ${Number(input.value).toFixed(1)}`);
      updateExample();
    });
    wrap.append(label, input);
    box.append(wrap);
  });
}

async function updateExample() {
  if (exampleInFlight) { exampleAgain = true; return; }  // one request at a time, the latest wins
  exampleInFlight = true;
  const q = Q0.map((_, i) => $("q" + i).value).join(",");
  const params = new URLSearchParams({ q, keys: $("keys-input").value, values: $("values-input").value });
  const seq = ++exampleSeq;
  const t0 = performance.now();
  try {
    const { ok, data } = await widgetApi("/api/widget/example?" + params);
    if (seq !== exampleSeq) return;
    $("example-error").hidden = ok;
    if (!ok) { $("example-error").textContent = data.error; return; }
    renderExample(data, performance.now() - t0);
  } finally {
    exampleInFlight = false;
    if (exampleAgain) { exampleAgain = false; updateExample(); }
  }
}

function fmt(xs) { return "[" + xs.map((x) => Number(x.toFixed(3)).toString()).join(", ") + "]"; }

function renderExample(d, ms) {
  showSource("example", d);
  const box = $("example-stages");
  box.replaceChildren();
  const table = el("table", { class: "stages" });
  const head = el("tr");
  head.append(el("th", { scope: "col" }, "stage"), el("th", { scope: "col" }, "shown (whose: see above)"),
    el("th", { scope: "col" }, "the reference, where it differs"));
  table.append(head);
  const names = {
    scores: "1 scores = q · kᵢ", scaled: `2 scaled = scores / √${d.d_k}`,
    weights: "3 weights = softmax(scaled)", output: "4 output = Σ weightᵢ · vᵢ",
    attention: "5 attention(q, K, V) in one call",
  };
  const q = el("tr");
  q.append(el("th", { scope: "row" }, "q"), el("td", { class: "num", "data-stage": "q" }, fmt(d.q)), el("td"));
  table.append(q);
  for (const st of d.stages || []) {  // a widget answered by the reference alone may carry no stages
    const tr = el("tr", { class: (st.first ? "first-departure " : "") + (st.differs ? "differs" : "") });
    const who = st.source === "yours" ? "yours" : "reference";
    tr.append(el("th", { scope: "row" }, names[st.stage] || st.stage),
      el("td", { class: "num", "data-stage": st.stage, "data-source": st.source },
        `${fmt(st.value[0])} (${who})`),
      el("td", { class: "num reference", "data-stage": st.stage },
        st.differs ? `${fmt(st.reference[0])}${st.first ? " ← first departure" : ""}` : ""));
    table.append(tr);
  }
  box.append(table);
  const holder = el("div");
  box.append(holder);
  bars(holder, d.weights.map((_, i) => "key " + (i + 1)), d.weights, { label: "weights per key" });
  $("example-timing").textContent = `server ${d.server_ms.toFixed(1)} ms · round trip ${ms.toFixed(0)} ms`;
}

async function updateScale() {
  const e = Number($("dk").value);
  const dk = 2 ** e;
  $("dk-value").textContent = String(dk);
  $("dk").setAttribute("aria-valuetext", `d_k = ${dk}`);
  const { ok, data } = await widgetApi("/api/widget/scale?d_k=" + dk);
  if (!ok || Number($("dk").value) !== e) return;
  showSource("scale", data);
  const box = $("scale-out");
  box.replaceChildren();
  const t = el("table", { class: "stages" });
  const head = el("tr");
  head.append(el("th", { scope: "col" }, `d_k = ${data.d_k}`), el("th", { scope: "col" }, "not scaled"),
    el("th", { scope: "col" }, "divided by √d_k"));
  t.append(head);
  for (const [label, a, b] of [["spread of q·k (std)", data.spread_raw, data.spread_scaled],
    [`largest softmax weight (mean of ${data.trials}, ${data.keys} keys)`, data.max_weight_raw, data.max_weight_scaled]]) {
    const tr = el("tr");
    tr.append(el("th", { scope: "row" }, label), el("td", { class: "num" }, a.toFixed(3)),
      el("td", { class: "num" }, b.toFixed(3)));
    t.append(tr);
  }
  if (data.reference_numbers) {  // the learner's numbers differ: the reference's beside them
    const r = data.reference_numbers;
    for (const [label, a, b] of [["the reference: spread", r.spread_raw, r.spread_scaled],
      ["the reference: largest weight", r.max_weight_raw, r.max_weight_scaled]]) {
      const tr = el("tr", { class: "reference" });
      tr.append(el("th", { scope: "row" }, label), el("td", { class: "ref" }, a.toFixed(3)),
        el("td", { class: "ref" }, b.toFixed(3)));
      t.append(tr);
    }
  }
  box.append(t);
  const two = el("div", { class: "two" });
  const left = el("div"), right = el("div");
  left.append(el("p", { class: "small" }, "one query, not scaled"));
  right.append(el("p", { class: "small" }, "the same query, divided by √d_k"));
  const lb = el("div"), rb = el("div");
  left.append(lb); right.append(rb);
  two.append(left, right);
  box.append(two);
  const names = data.example_raw.map((_, i) => "key " + (i + 1));
  bars(lb, names, data.example_raw, { label: "weights, not scaled" });
  bars(rb, names, data.example_scaled, { label: "weights, scaled" });
  box.dataset.dk = String(data.d_k);
}

// One widget request at a time (a hosted class answers one per learner at once, 429 to the rest).
let widgetsLoading = null, widgetsAgain = false;
function loadWidgets() {
  if (widgetsLoading) { widgetsAgain = true; return widgetsLoading; }
  widgetsLoading = (async () => {
    try { await loadHeatmap(); await updateExample(); await updateScale(); } finally {
      widgetsLoading = null;
      if (widgetsAgain) { widgetsAgain = false; loadWidgets(); }
    }
  })();
  return widgetsLoading;
}

// A widget's answer; "busy" (429) is waited out a few times, as the server's Retry-After says.
async function widgetApi(path) {
  for (let i = 0; ; i++) {
    const r = await api(path);
    if (r.status !== 429 || i >= 5) return r;
    await new Promise((ok) => setTimeout(ok, Math.max(0.3, Math.min(r.retryAfter || 1, 5)) * 1000));
  }
}

// ------------------------------------------------------------------ start
async function main() {
  const code = $("code");
  code.addEventListener("keydown", editorKeys);
  code.addEventListener("input", edited);
  code.addEventListener("scroll", () => { $("gutter").scrollTop = code.scrollTop; });
  $("save").addEventListener("click", async () => { if (await save(false)) check(); });
  $("check").addEventListener("click", saveAndCheck);
  $("hint").addEventListener("click", async () => {
    const { ok, data } = await api(`/api/step/${page.step}/hint`, {});
    if (ok) { showHints(data.hints, data.hints_total); refreshSummary(); }
  });
  $("reset").addEventListener("click", () => {
    $("reset-q").textContent = WORDS.reset(page.data.file);
    $("reset-confirm").hidden = false;
    $("reset-no").focus();
  });
  $("reset-no").addEventListener("click", () => { $("reset-confirm").hidden = true; $("reset").focus(); });
  $("reset-yes").addEventListener("click", async () => {
    const { ok, data } = await api(`/api/step/${page.step}/reset`, {});
    $("reset-confirm").hidden = true;
    if (!ok) { notice(data.error); return; }
    showFile(data.content, data.version, "");
    notice(data.link ? `Replaced the link (to ${data.link}) with a fresh stub; the file it pointed to is untouched.`
      : data.backup ? `Restored the stub; your previous version is in ${data.backup}.` : "Restored the stub.");
    refreshSummary();
  });
  $("conflict-reload").addEventListener("click", () => {
    showFile(page.disk.text, page.disk.version, page.disk.text === null ? "The file is gone or unreadable." : "");
    notice("Loaded the version on disk.");
  });
  $("conflict-keep").addEventListener("click", async () => {
    // base stays the version this page loaded: the server backs the disk's version up, then writes
    if (await save(true)) check();
  });
  $("menu").addEventListener("click", () => {
    const open = $("menu").getAttribute("aria-expanded") !== "true";
    $("menu").setAttribute("aria-expanded", String(open));
    document.body.classList.toggle("menu-open", open);
  });
  $("dk").addEventListener("input", updateScale);
  $("example-apply").addEventListener("click", updateExample);
  window.addEventListener("online", () => { if (page.pending) sendUnsent(); });
  window.addEventListener("beforeunload", (ev) => { if (page.dirty) { ev.preventDefault(); ev.returnValue = ""; } });
  buildSliders();
  const m = location.pathname.match(/^\/step\/([^/]+)$/);
  const summary = await refreshSummary();
  const id = m ? decodeURIComponent(m[1]) : (summary && (summary.current || summary.steps[0].id));
  await loadStep(id);
  await refreshSummary();
  listen();
  loadWidgets();
  document.body.dataset.ready = "true";
}

main();
