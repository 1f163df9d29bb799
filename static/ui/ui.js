/* The web UI's small plain JavaScript: copy buttons, the readable id suggested from a name,
   live sync counters over the sync websocket (SSE when websockets fail). The search playground
   has its own file (search.js). Every page works without it; live parts then offer a reload. */
(function () {
  "use strict";

  function slugify(name) {
    return name.toLowerCase().normalize("NFKD").replace(/[\u0300-\u036f]/g, "")
      .replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 100);
  }

  function initCopy(root) {
    root.querySelectorAll("[data-copy]").forEach(function (button) {
      if (button.dataset.copyReady) return;
      button.dataset.copyReady = "1";
      button.addEventListener("click", function () {
        var source = document.querySelector(button.dataset.copy);
        if (!source) return;
        var text = source.value !== undefined && source.tagName === "TEXTAREA" ? source.value : source.textContent;
        var done = function () { var was = button.textContent; button.textContent = "Copied"; setTimeout(function () { button.textContent = was; }, 1500); };
        if (navigator.clipboard && window.isSecureContext) { navigator.clipboard.writeText(text.trim()).then(done); }
        else { var range = document.createRange(); range.selectNodeContents(source); var sel = getSelection(); sel.removeAllRanges(); sel.addRange(range); document.execCommand("copy"); done(); }
      });
    });
  }

  function initReadableId(root) {
    root.querySelectorAll("form[data-readable-id-from]").forEach(function (form) {
      var name = form.querySelector("#" + form.dataset.readableIdFrom);
      var rid = form.querySelector("[name=readable_id]");
      if (!name || !rid || form.dataset.ridReady) return;
      form.dataset.ridReady = "1";
      var edited = rid.value !== "";
      rid.addEventListener("input", function () { edited = rid.value !== ""; });
      function suggest() { if (!edited) rid.placeholder = slugify(name.value) || ""; }
      name.addEventListener("input", suggest);
      suggest();  // a name typed before this script ran (a slow page) still gets its suggestion
      form.addEventListener("submit", function () { if (!edited && rid.placeholder) rid.value = rid.placeholder; });
    });
  }

  /* A panel with data-sync-job follows that job until sync_complete, then reloads itself. */
  function followJob(panel) {
    var jobId = panel.dataset.syncJob;
    if (!jobId || panel.dataset.following === jobId) return;
    panel.dataset.following = jobId;
    var finished = false;
    function apply(event) {
      if (event.type === "progress") {
        ["inserted", "updated", "deleted", "kept", "skipped", "failed"].forEach(function (k) {
          var cell = panel.querySelector('[data-counter="' + k + '"]');
          if (cell && event[k] !== undefined) cell.textContent = event[k];
        });
        if (event.status) {
          var badge = panel.querySelector("[data-job-status]");
          if (badge) { badge.textContent = event.status; badge.className = "badge " + event.status; }
          var state = panel.querySelector("[data-status]");
          if (state && event.status === "running") { state.textContent = "Syncing"; state.className = "badge syncing"; }
        }
      } else if (event.type === "sync_complete" && !finished) {
        finished = true;
        if (event.final_counts) apply(Object.assign({ type: "progress" }, event.final_counts));
        refresh();
      }
    }
    function refresh() {
      if (window.htmx) { htmx.ajax("GET", panel.dataset.panelUrl, { target: panel, swap: "outerHTML" }); }
      else { location.reload(); }
    }
    function sse() {
      if (!window.EventSource) return;
      var source = new EventSource("/sync/job/" + jobId + "/subscribe");
      source.onmessage = function (m) { var e = JSON.parse(m.data); apply(e); if (e.type === "sync_complete") source.close(); };
      source.onerror = function () { source.close(); if (!finished) setTimeout(refresh, 3000); };
    }
    try {
      var socket = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws/sync/job/" + jobId + "/");
      var opened = false;
      socket.onopen = function () { opened = true; };
      socket.onmessage = function (m) { apply(JSON.parse(m.data)); };
      socket.onclose = function () { if (!opened) sse(); else if (!finished) setTimeout(refresh, 1000); };
    } catch (err) { sse(); }
  }

  function initPanels(root) {
    (root.matches && root.matches("[data-sync-job]") ? [root] : []).concat(Array.prototype.slice.call(root.querySelectorAll("[data-sync-job]")))
      .forEach(followJob);
  }

  function init(root) { initCopy(root); initReadableId(root); initPanels(root); }

  document.addEventListener("DOMContentLoaded", function () {
    init(document);
    if (window.htmx) htmx.onLoad(init);
  });
  window.airweaveUI = { slugify: slugify };
})();
