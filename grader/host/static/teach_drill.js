// attn-practice host: the instructor's drill-down into one learner, in a modal dialog (focus moves
// in; Escape or Close returns it to the name it was opened from). Loaded after teach.js, whose
// helpers (el, count, when, get, state, WORDS) it uses. Text goes in with textContent only.
"use strict";

function diffBlock(older, newer) { return window.attnpDiff.block(older.code, newer.code); }

// The code from the step's function on (a file's docstring and imports are above it), whole on demand.
function codeBlock(code, fn) {
  const wrap = el("div", { class: "code-wrap" });
  const lines = code.split("\n");
  const re = new RegExp(`^\\s*def\\s+${fn ? fn.replace(/[^\w]/g, "") : "\\w+"}\\s*\\(`);
  let start = lines.findIndex((l) => re.test(l));
  if (start < 0) start = lines.findIndex((l) => /^\s*def\s/.test(l));
  if (start < 0) start = 0;
  while (start > 0 && /^\s*@/.test(lines[start - 1])) start--;  // decorators belong to the function
  const pre = el("pre", { class: "code", tabindex: "0", "aria-label": `code from line ${start + 1}` });
  pre.textContent = lines.slice(start).join("\n");
  wrap.append(pre);
  if (start > 0) {
    const b = el("button", { type: "button", class: "link small" }, `Show the whole file (${count(start, "line")} above ${fn || "the function"})`);
    b.addEventListener("click", () => {
      const whole = pre.textContent.length < code.length;
      pre.textContent = whole ? code : lines.slice(start).join("\n");
      b.textContent = whole ? `Show only from ${fn || "the function"}` : `Show the whole file (${count(start, "line")} above ${fn || "the function"})`;
    });
    wrap.prepend(b);
  }
  return wrap;
}

function resultText(check) {
  if (!check) return "not checked";
  const word = check.passed ? "✓ passed" : `✗ ${check.status}`;
  return check.diagnoses.length ? `${word} · ${check.diagnoses.join(", ")}` : word;
}

function drawStep(s, keepOpen) {
  const sec = el("details", { "data-step": s.step });
  if (keepOpen.has(s.step)) sec.open = true;
  const n = s.history.length;
  sec.append(el("summary", {}, `${s.step} · ${WORDS[s.standing] || s.standing}` +
    `${s.diagnoses.length && s.standing !== "passed" ? " · " + s.diagnoses.join(", ") : ""} · ` +
    `${count(s.checks, "check")} · ${count(n, "version")}`));
  if (s.report && s.standing !== "passed") {
    const step = (s.report.steps || [])[0] || {};
    const lines = (step.tests || []).filter((t) => t.status !== "passed").slice(0, 3).map((t) => `✗ ${t.name}: ${t.message || ""}`);
    sec.append(el("p", { class: "label" }, "The latest check said:"),
      el("pre", { class: "report" }, [step.error || s.report.error || "", ...lines].filter(Boolean).join("\n")));
  }
  if (s.code !== null) {
    sec.append(el("p", { class: "label" }, `${s.file}, the latest version:`), codeBlock(s.code, s.function));
  }
  if (!n) return sec;
  // every stored version: time, size, the check's result; any one shown; any two compared
  const table = el("table", { class: "versions-table" });
  const head = el("tr");
  ["#", "saved", "lines", "check", "code"].forEach((h) => head.append(el("th", { scope: "col" }, h)));
  const thead = el("thead"); thead.append(head); table.append(thead);
  const body = el("tbody");
  const shown = el("div", { class: "version-shown" });
  s.history.forEach((v, i) => {
    const tr = el("tr", { "data-version": v.id });
    const b = el("button", { type: "button", class: "link", "data-focus": `v:${v.id}` }, "show");
    b.addEventListener("click", () => {
      shown.replaceChildren(el("p", { class: "label" }, `Version ${n - i} (${when(v.created)})${v.cut ? ", only its beginning (a long file)" : ""}:`),
        codeBlock(v.code, s.function));
    });
    const result = el("td", { class: v.check ? (v.check.passed ? "passed" : "failed") : "dim" }, resultText(v.check));
    tr.append(el("td", {}, String(n - i)), el("td", {}, when(v.created)), el("td", {}, String(v.lines)), result);
    const cell = el("td"); cell.append(b); tr.append(cell);
    body.append(tr);
  });
  table.append(body);
  const scroll = el("div", { class: "scroll" });
  scroll.append(table);
  sec.append(el("p", { class: "label" }, "Every stored version, newest first:"), scroll, shown);
  if (n > 1) {
    const form = el("div", { class: "compare" });
    const pick = (id, label, index) => {
      const lab = el("label", {}, label + " ");
      const sel = el("select", { id, "data-focus": id });
      s.history.forEach((v, i) => sel.append(el("option", { value: String(i) }, `version ${n - i} · ${when(v.created)} · ${resultText(v.check)}`)));
      sel.value = String(index);
      lab.append(sel);
      return [lab, sel];
    };
    const [la, a] = pick(`from-${s.step}`, "Compare", 1);
    const [lb, b] = pick(`to-${s.step}`, "with", 0);
    const out = el("div", { class: "diff-out", "aria-live": "polite" });
    const draw = () => out.replaceChildren(diffBlock(s.history[Number(a.value)], s.history[Number(b.value)]));
    a.addEventListener("change", draw); b.addEventListener("change", draw);
    form.append(la, " ", lb);
    sec.append(form, out);
    draw();
  }
  return sec;
}

async function openLearner(id, opener, quiet) {
  const d = await get("/teach/api/learner/" + encodeURIComponent(id));
  if (!d) return;
  const dialog = $("drill");
  const json = JSON.stringify(d);
  if (quiet && json === state.drillJson) return;  // nothing new: leave the dialog as the instructor left it
  const focused = document.activeElement && dialog.contains(document.activeElement) ? document.activeElement.dataset.focus : null;
  const keepOpen = new Set(quiet ? [...dialog.querySelectorAll("details[open]")].map((x) => x.dataset.step) : []);
  const picks = quiet ? [...dialog.querySelectorAll(".compare select")].map((x) => [x.id, x.value]) : [];
  state.learner = id;
  state.drillJson = json;
  if (!quiet) {
    state.opener = opener || document.activeElement;
    $("new-link").textContent = "";
    const latest = d.steps.filter((s) => s.code !== null || s.report);
    const open = latest.find((s) => s.standing === "failed") || latest[latest.length - 1];
    if (open) keepOpen.add(open.step);  // the step that needs a look, opened
  }
  $("drill-h").textContent = `${d.learner.name}${d.learner.student_id ? ` (${d.learner.student_id})` : ""}: their work`;
  const body = $("drill-body");
  body.replaceChildren();
  const steps = d.steps.filter((s) => s.code !== null || s.report);
  if (!steps.length) body.append(el("p", { class: "dim" }, "Nothing saved or checked yet."));
  steps.forEach((s) => body.append(drawStep(s, keepOpen)));
  picks.forEach(([pid, value]) => { const sel = $(pid); if (sel && sel.value !== value) { sel.value = value; sel.dispatchEvent(new Event("change")); } });
  if (!dialog.open) { dialog.showModal(); $("drill-h").focus(); }
  else if (focused) { const again = dialog.querySelector(`[data-focus="${CSS.escape(focused)}"]`); if (again) again.focus(); }
}

function closeLearner() { if ($("drill").open) $("drill").close(); }

$("drill").addEventListener("close", () => {
  state.learner = null;
  state.drillJson = "";
  // focus goes back where it was: the same learner's button, even if the grid was redrawn meanwhile
  const was = state.opener;
  const key = was && was.dataset ? was.dataset.focus : null;
  const target = was && document.contains(was) ? was : key ? document.querySelector(`[data-focus="${CSS.escape(key)}"]`) : null;
  if (target) target.focus();
});
$("drill-close").addEventListener("click", closeLearner);
$("drill").addEventListener("click", (ev) => { if (ev.target === $("drill")) closeLearner(); });  // a click on the backdrop

