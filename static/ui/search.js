/* The search playground: the filter builder beside its JSON, the streamed search (operations
   timeline, answer token by token with [[N]] citations linking to result N, results), and the
   "Show code" snippets. Without JavaScript the form submits as GET and the server renders results. */
(function () {
  "use strict";
  var form = document.getElementById("playground");
  if (!form) return;
  var $ = function (sel, root) { return (root || document).querySelector(sel); };
  var timeline = $("#timeline"), answer = $("#answer"), results = $("#results");
  var jsonBox = $("#filter-json"), builder = $("#filter-builder");
  var fields = builder.dataset.fields.split(","), operators = builder.dataset.operators.split(",");
  var groups = [];
  var answerText = "";

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { if (k === "class") node.className = attrs[k]; else node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function escapeHtml(s) { return String(s).replace(/[&<>"']/g, function (c) { return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]; }); }

  /* --- Filter builder <-> JSON --- */
  function parseValue(operator, raw) {
    if (operator === "in" || operator === "not_in") return raw.split(",").map(function (v) { return coerce(v.trim()); }).filter(function (v) { return v !== ""; });
    return coerce(raw);
  }
  function coerce(raw) { if (/^-?\d+(\.\d+)?$/.test(raw)) return Number(raw); if (raw === "true") return true; if (raw === "false") return false; return raw; }
  function toJson() {
    var out = groups.map(function (g) { return { conditions: g.map(function (c) { return { field: c.field, operator: c.operator, value: parseValue(c.operator, c.value) }; }) }; })
      .filter(function (g) { return g.conditions.length; });
    jsonBox.value = out.length ? JSON.stringify(out, null, 2) : "";
  }
  function fromJson() {
    var text = jsonBox.value.trim();
    if (!text) { groups = []; renderBuilder(); return; }
    try {
      var parsed = JSON.parse(text);
      if (!Array.isArray(parsed)) return; /* a Qdrant-style object: edited as JSON only */
      groups = parsed.map(function (g) { return ((g && g.conditions) || []).map(function (c) {
        return { field: c.field || fields[0], operator: c.operator || "equals", value: Array.isArray(c.value) ? c.value.join(", ") : (c.value === undefined ? "" : String(c.value)) }; }); });
      renderBuilder();
    } catch (e) { /* keep the builder while the JSON is being typed */ }
  }
  function select(options, value, label) {
    var s = el("select", { "aria-label": label });
    options.forEach(function (o) { var opt = el("option", { value: o }, o); if (o === value) opt.selected = true; s.appendChild(opt); });
    return s;
  }
  function renderBuilder() {
    builder.innerHTML = "";
    groups.forEach(function (group, g) {
      var box = el("fieldset", { "class": "filter-group", "data-g": g });
      box.appendChild(el("legend", {}, g === 0 ? "Group 1" : "or group " + (g + 1)));
      group.forEach(function (cond, c) {
        var row = el("div", { "class": "actions filter-condition", "data-g": g, "data-c": c });
        var f = select(fields, cond.field, "Field of condition " + (c + 1) + " in group " + (g + 1));
        var o = select(operators, cond.operator, "Operator of condition " + (c + 1) + " in group " + (g + 1));
        var v = el("input", { "aria-label": "Value of condition " + (c + 1) + " in group " + (g + 1), value: cond.value });
        var rm = el("button", { type: "button", "class": "secondary outline", "aria-label": "Remove condition " + (c + 1) + " of group " + (g + 1) }, "×");
        f.onchange = function () { cond.field = f.value; toJson(); };
        o.onchange = function () { cond.operator = o.value; toJson(); };
        v.oninput = function () { cond.value = v.value; toJson(); };
        rm.onclick = function () { group.splice(c, 1); if (!group.length) groups.splice(g, 1); renderBuilder(); toJson(); };
        [f, o, v, rm].forEach(function (n) { row.appendChild(n); });
        box.appendChild(row);
        box.appendChild(el("p", { "class": "field-error", "data-cond-error": g + ":" + c, role: "alert" }));
      });
      var add = el("button", { type: "button", "class": "outline" }, "Add a condition (AND)");
      add.onclick = function () { group.push({ field: fields[0], operator: "equals", value: "" }); renderBuilder(); toJson(); };
      box.appendChild(add);
      builder.appendChild(box);
    });
  }
  $("#add-group").onclick = function () { groups.push([{ field: fields[0], operator: "equals", value: "" }]); renderBuilder(); toJson(); $("#filter-box").open = true; };
  jsonBox.addEventListener("input", fromJson);
  fromJson();

  /* --- Tier: the flags apply to the pipeline tier only --- */
  function tierChanged() { $("#flags").hidden = $("#tier").value !== "pipeline"; }
  $("#tier").addEventListener("change", tierChanged); tierChanged();

  /* --- Errors at their field or condition --- */
  function clearErrors() { form.querySelectorAll("[data-error-for], [data-cond-error]").forEach(function (n) { n.textContent = ""; }); form.querySelectorAll("[aria-invalid]").forEach(function (n) { n.removeAttribute("aria-invalid"); }); }
  function showError(detail) {
    var item = (detail && detail[0]) || { loc: [], msg: String(detail) };
    var loc = (item.loc || []).filter(function (p) { return p !== "body"; });
    var target = null;
    if (loc[0] === "filter" && typeof loc[1] === "number" && loc[2] === "conditions" && typeof loc[3] === "number") {
      target = builder.querySelector('[data-cond-error="' + loc[1] + ":" + loc[3] + '"]');
      var row = builder.querySelector('.filter-condition[data-g="' + loc[1] + '"][data-c="' + loc[3] + '"]');
      if (row) row.querySelectorAll(loc[4] === "operator" ? "select:nth-of-type(2)" : loc[4] === "value" ? "input" : "select:first-of-type").forEach(function (n) { n.setAttribute("aria-invalid", "true"); });
      $("#filter-box").open = true;
    }
    if (!target && loc[0]) target = form.querySelector('[data-error-for="' + loc[0] + '"]');
    if (!target) target = form.querySelector('[data-error-for="query"]');
    if (loc[0] === "filter") { $("#filter-box").open = true; if (target === form.querySelector('[data-error-for="filter"]')) jsonBox.setAttribute("aria-invalid", "true"); }
    target.textContent = item.msg;
  }

  /* --- The stream --- */
  function addStep(text, cls) { var li = el("li", cls ? { "class": cls } : {}, text); timeline.appendChild(li); return li; }
  var steps = {};
  function renderAnswer() {
    answer.innerHTML = escapeHtml(answerText).replace(/\[\[(\d+)\]\]/g, '<a class="cite" href="#result-$1" data-cite="$1">[$1]</a>');
  }
  function highlight(text, query) {
    var terms = (query.match(/\w{3,}/g) || []).sort(function (a, b) { return b.length - a.length; });
    var html = escapeHtml(text.length > 600 ? text.slice(0, 600) + " …" : text);
    if (!terms.length) return html;
    var re = new RegExp("\\b(" + terms.map(function (t) { return t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); }).join("|") + ")", "gi");
    return html.replace(re, "<mark>$1</mark>");
  }
  function renderResults(list, query) {
    results.innerHTML = "";
    if (!list.length) { results.appendChild(el("p", {}, "No result.")); return; }
    list.forEach(function (r, i) {
      var meta = r.system_metadata || r.airweave_system_metadata || {};
      var art = el("article", { "class": "result", id: "result-" + (i + 1), tabindex: "-1" });
      var head = el("header");
      head.appendChild(el("strong", {}, (i + 1) + ". "));
      if (r.entity_pk) { var a = el("a", { href: results.dataset.entityUrl + r.entity_pk + "/" }, r.name); head.appendChild(a); }
      else head.appendChild(document.createTextNode(r.name));
      head.appendChild(document.createTextNode(" "));
      head.appendChild(el("span", { "class": "badge" }, meta.source_name || ""));
      var score = r.score !== undefined ? r.score : r.relevance_score;
      var info = " score " + Number(score).toFixed(4);
      if (r.leg_ranks) info += " · keyword rank " + (r.leg_ranks.keyword || "–") + " · vector rank " + (r.leg_ranks.vector || "–");
      head.appendChild(el("small", { "class": "muted" }, info));
      art.appendChild(head);
      if (r.breadcrumbs && r.breadcrumbs.length) art.appendChild(el("p", { "class": "muted" }, r.breadcrumbs.map(function (b) { return b.name; }).join(" › ")));
      var p = el("p"); p.innerHTML = highlight(r.textual_representation || "", query); art.appendChild(p);
      if (r.web_url) art.appendChild(el("a", { href: r.web_url, rel: "noopener" }, "Open at the source"));
      results.appendChild(art);
    });
  }
  function handle(event, query) {
    switch (event.type) {
      case "connected":
        if (event.snippets) { $("#code-curl").textContent = event.snippets.curl; $("#code-python").textContent = event.snippets.python; $("#code-mcp").textContent = event.snippets.mcp; }
        break;
      case "operator_start": steps[event.name] = addStep(event.name + " …", "running"); break;
      case "operator_end":
        var li = steps[event.name] || addStep(event.name);
        li.className = event.skipped ? "skipped" : "done";
        li.textContent = event.name + " · " + event.duration_ms + " ms" + (event.provider ? " · " + event.provider : "") + (event.skipped ? " · skipped: " + event.skipped : "");
        break;
      case "thinking": addStep("thinking: " + (event.text || "").slice(0, 200)); break;
      case "tool_call": addStep("tool " + event.tool + " " + JSON.stringify(event.arguments || {}).slice(0, 160)); break;
      case "completion_delta": answerText += event.text || ""; renderAnswer(); break;
      case "completion_done": if (event.text !== undefined && !answerText) { answerText = event.text; renderAnswer(); } break;
      case "results": renderResults(event.results || [], query); break;
      case "done": if (event.results) renderResults(event.results, query); addStep("done"); break;
      case "error": addStep("error: " + (event.message || ""), "error"); break;
    }
  }
  function body() {
    var data = new FormData(form), out = {};
    ["query", "tier", "retrieval_strategy", "limit", "as_member"].forEach(function (k) { if (data.get(k) !== null) out[k] = data.get(k); });
    ["expand_query", "interpret_filters", "rerank", "generate_answer"].forEach(function (k) { out[k] = data.get(k) === "true"; });
    var f = jsonBox.value.trim();
    if (f) { try { out.filter = JSON.parse(f); } catch (e) { out.filter = f; } }
    return out;
  }
  form.addEventListener("submit", function (e) {
    e.preventDefault();
    clearErrors();
    timeline.innerHTML = ""; answer.innerHTML = ""; answerText = ""; results.innerHTML = ""; steps = {};
    var request = body();
    var token = document.querySelector("meta[name=csrf-token]").content;
    fetch(form.dataset.streamUrl, { method: "POST", headers: { "Content-Type": "application/json", "Accept": "text/event-stream", "X-CSRFToken": token }, body: JSON.stringify(request), credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) return response.json().then(function (j) { showError(j.detail); });
        var reader = response.body.getReader(), decoder = new TextDecoder(), buffer = "";
        function pump() {
          return reader.read().then(function (chunk) {
            if (chunk.done) return;
            buffer += decoder.decode(chunk.value, { stream: true });
            var frames = buffer.split("\n\n"); buffer = frames.pop();
            frames.forEach(function (frame) { frame.split("\n").forEach(function (line) { if (line.indexOf("data: ") === 0) handle(JSON.parse(line.slice(6)), request.query); }); });
            return pump();
          });
        }
        return pump();
      })
      .catch(function (err) { addStep("error: " + err, "error"); });
  });

  /* --- Citations: scroll to and highlight result N --- */
  answer.addEventListener("click", function (e) {
    var link = e.target.closest("a.cite");
    if (!link) return;
    e.preventDefault();
    var target = document.getElementById("result-" + link.dataset.cite);
    if (!target) return;
    results.querySelectorAll(".result.highlight").forEach(function (n) { n.classList.remove("highlight"); });
    target.classList.add("highlight");
    target.scrollIntoView({ behavior: "smooth", block: "center" });
    target.focus({ preventScroll: true });
  });
})();
