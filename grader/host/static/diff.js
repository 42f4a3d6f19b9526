// attn-practice host: a line diff of two versions of a file, for the instructor's drill-down and
// the learner's "Earlier versions". Longest common subsequence of lines; text via textContent only.
"use strict";

window.attnpDiff = (function () {
  const CELLS = 4000000;  // lines × lines: beyond this the page says so instead of freezing
  const CONTEXT = 2;

  // [[mark, line]]: " " kept, "-" only in the older, "+" only in the newer; null when too long.
  function lineDiff(a, b) {
    const x = a.split("\n"), y = b.split("\n");
    const n = x.length, m = y.length;
    if (n * m > CELLS) return null;
    const L = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
    }
    const out = [];
    let i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && x[i] === y[j]) { out.push([" ", x[i]]); i++; j++; }
      else if (i < n && (j >= m || L[i + 1][j] >= L[i][j + 1])) { out.push(["-", x[i]]); i++; }  // old line first
      else { out.push(["+", y[j]]); j++; }
    }
    return out;
  }

  // A <pre> with the changed lines and CONTEXT lines around each, "…" for the rest.
  function block(older, newer, label) {
    const pre = document.createElement("pre");
    pre.className = "code diff";
    pre.tabIndex = 0;
    pre.setAttribute("aria-label", label || "the change between the two versions");
    const ops = lineDiff(older, newer);
    if (ops === null) { pre.textContent = "These versions are too long to compare here."; return pre; }
    if (!ops.some((o) => o[0] !== " ")) { pre.textContent = "No change: the two versions are the same text."; return pre; }
    const near = ops.map((_, k) => ops.slice(Math.max(0, k - CONTEXT), k + CONTEXT + 1).some((o) => o[0] !== " "));
    let gap = false;
    ops.forEach((o, k) => {
      if (!near[k]) {
        if (!gap) { const s = document.createElement("span"); s.className = "dim"; s.textContent = "  …\n"; pre.append(s); }
        gap = true;
        return;
      }
      gap = false;
      const line = document.createElement(o[0] === "+" ? "ins" : o[0] === "-" ? "del" : "span");
      line.className = o[0] === "+" ? "ins" : o[0] === "-" ? "del" : "same";
      line.textContent = `${o[0]} ${o[1]}\n`;
      pre.append(line);
    });
    return pre;
  }

  return { lineDiff, block };
})();
