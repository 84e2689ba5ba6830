// keyward dashboard: progressive enhancement only. Every form works without
// this file; with it, destructive forms confirm in a dialog, secrets copy,
// uploads show progress and range inputs show their value.
(function () {
  "use strict";

  // Forms with data-confirm ask in a modal <dialog> (keyboard: Tab moves
  // between the buttons, Escape cancels) and then submit with confirm=yes,
  // which the server otherwise asks for on a page of its own.
  var dialog = document.getElementById("kw-confirm");
  var pending = null;
  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    if (!form.hasAttribute || !form.hasAttribute("data-confirm") || form.dataset.confirmed === "yes" || !dialog || !dialog.showModal) {
      return;
    }
    ev.preventDefault();
    pending = form;
    document.getElementById("kw-confirm-text").textContent = form.getAttribute("data-confirm");
    dialog.showModal();
    dialog.querySelector("[data-dialog-cancel]").focus();
  }, true);
  if (dialog) {
    dialog.querySelector("[data-dialog-cancel]").addEventListener("click", function () { pending = null; dialog.close(); });
    dialog.querySelector("[data-dialog-ok]").addEventListener("click", function () {
      var form = pending;
      pending = null;
      dialog.close();
      if (!form) { return; }
      var input = document.createElement("input");
      input.type = "hidden"; input.name = "confirm"; input.value = "yes";
      form.appendChild(input);
      form.dataset.confirmed = "yes";
      if (form.requestSubmit) { form.requestSubmit(); } else { form.submit(); }
    });
  }

  // Copy buttons: data-copy names the element whose text is copied.
  document.addEventListener("click", function (ev) {
    var b = ev.target.closest && ev.target.closest("[data-copy]");
    if (!b) { return; }
    var el = document.getElementById(b.getAttribute("data-copy"));
    if (!el || !navigator.clipboard) { return; }
    navigator.clipboard.writeText(el.textContent.trim()).then(function () {
      var was = b.textContent; b.textContent = "Copied"; setTimeout(function () { b.textContent = was; }, 1500);
    });
  });

  // Range inputs with data-output show their value in that <output>.
  document.querySelectorAll("input[type=range][data-output]").forEach(function (r) {
    var out = document.getElementById(r.getAttribute("data-output"));
    var show = function () { if (out) { out.value = r.value + (r.getAttribute("data-unit") || ""); } };
    r.addEventListener("input", show); show();
  });

  // Selects with data-autosubmit submit their form when changed.
  document.querySelectorAll("select[data-autosubmit]").forEach(function (s) {
    s.addEventListener("change", function () { s.form.requestSubmit ? s.form.requestSubmit() : s.form.submit(); });
  });

  // Upload forms (data-upload): the chosen file is sent as the request body
  // with a progress bar; the server answers with JSON {redirect} or an error.
  document.querySelectorAll("form[data-upload]").forEach(function (form) {
    form.addEventListener("submit", function (ev) {
      var input = form.querySelector("input[type=file]");
      if (!input || !input.files.length || !window.XMLHttpRequest) { return; }
      ev.preventDefault();
      var bar = form.querySelector("progress"), status = form.querySelector("[data-upload-status]");
      var q = new URLSearchParams(new FormData(form));
      q.delete("file"); q.delete("csrf");
      // As with a plain form post, the chosen file's own name is the
      // download name unless one was typed.
      if (!q.get("file_name")) { q.set("file_name", input.files[0].name); }
      var xhr = new XMLHttpRequest();
      xhr.open("POST", form.getAttribute("data-upload") + "?" + q.toString());
      xhr.setRequestHeader("X-CSRF-Token", form.querySelector("input[name=csrf]").value);
      xhr.setRequestHeader("Content-Type", "application/octet-stream");
      xhr.setRequestHeader("Accept", "application/json");
      xhr.upload.addEventListener("progress", function (e) {
        if (bar && e.lengthComputable) { bar.max = e.total; bar.value = e.loaded; }
        if (status && e.lengthComputable) { status.textContent = Math.round(100 * e.loaded / e.total) + " % uploaded"; }
      });
      xhr.addEventListener("load", function () {
        var answer = {};
        try { answer = JSON.parse(xhr.responseText); } catch (e) { answer = {}; }
        if (xhr.status === 200 && answer.redirect) { window.location.assign(answer.redirect); return; }
        if (status) { status.textContent = answer.message || ("Upload failed (" + xhr.status + ")."); status.setAttribute("role", "alert"); }
      });
      xhr.addEventListener("error", function () { if (status) { status.textContent = "Upload failed: the connection broke."; } });
      if (bar) { bar.hidden = false; bar.value = 0; }
      xhr.send(input.files[0]);
    });
  });
})();
