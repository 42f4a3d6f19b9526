// attn-practice host: "Sign out" on the learner's page (a shared lab computer must not keep
// someone's work open). A plain form POST carrying the page's token: no other site can send it.
"use strict";

(function () {
  const meta = document.querySelector('meta[name="attnp-token"]');
  const header = document.querySelector("header.top");
  if (!meta || !header) return;
  const form = document.createElement("form");
  form.method = "post";
  form.action = "/signout";
  form.className = "signout";
  const csrf = document.createElement("input");
  csrf.type = "hidden"; csrf.name = "csrf"; csrf.value = meta.content;
  const button = document.createElement("button");
  button.type = "submit"; button.id = "sign-out";
  button.textContent = "Sign out";
  button.title = "Close your work in this browser; your personal resume link opens it again.";
  form.append(csrf, button);
  header.append(form);
})();
