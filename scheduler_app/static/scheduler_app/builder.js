/* The schedule form's builder and live preview: plain JavaScript, no framework, no build step.
   Shows the builder fields that the chosen "repeat" needs, and POSTs the form (unsaved) to
   the admin's preview view whenever it changes, then draws the next slots it answers. The
   "Preview from" input starts the slots at a chosen local date instead of now. The "describe
   it in words" input is read by the server when it changes (Enter or leaving it); the
   builder's fields are then set from the structured rule it means and the input is emptied:
   what is saved is the rule, never the text. */
(function () {
  "use strict";
  var SHOWN = {
    minutes: ["every"],
    hours: ["every"],
    daily: ["at_times"],
    weekly: ["at_times", "weekdays"],
    monthly: ["at_times", "monthly_on", "month_day", "nth", "nth_weekday"],
    once: ["once_at"],
    advanced: ["kind", "rule"]
  };
  var BUILDER = ["every", "at_times", "weekdays", "monthly_on", "month_day", "nth",
                 "nth_weekday", "once_at", "kind", "rule"];

  function row(name) {
    return document.querySelector(".form-row.field-" + name) ||
      document.querySelector(".field-" + name);
  }

  function showBuilder(form) {
    var select = form.querySelector("[name=repeat]");
    if (!select) { return; }
    var wanted = SHOWN[select.value] || [];
    var monthly = form.querySelector("[name=monthly_on]");
    BUILDER.forEach(function (name) {
      var element = row(name);
      if (!element) { return; }
      var visible = wanted.indexOf(name) !== -1;
      if (visible && monthly && select.value === "monthly") {
        if (name === "month_day") { visible = monthly.value === "day"; }
        if (name === "nth" || name === "nth_weekday") { visible = monthly.value === "nth"; }
      }
      element.style.display = visible ? "" : "none";
    });
  }

  function text(tag, value, className) {
    var element = document.createElement(tag);
    element.textContent = value === null || value === undefined ? "" : value;
    if (className) { element.className = className; }
    return element;
  }

  function draw(box, answer) {
    var errors = box.querySelector("#sched-errors");
    var body = box.querySelector("#sched-slots tbody");
    errors.textContent = "";
    body.textContent = "";
    Object.keys(answer.errors || {}).forEach(function (field) {
      answer.errors[field].forEach(function (message) {
        errors.appendChild(text("li", field + ": " + message));
      });
    });
    box.querySelector("#sched-description").textContent = answer.ok ? answer.description : "";
    box.querySelector("#sched-from").textContent = answer.ok && answer.from ?
      "Slots from " + answer.from.local + " (" + answer.from.utc + ")" : "";
    box.querySelector("#sched-rule").textContent =
      answer.ok ? "Stored rule: " + answer.kind + " " + answer.rule : "";
    (answer.slots || []).forEach(function (slot) {
      var tr = document.createElement("tr");
      tr.appendChild(text("td", slot.local));
      tr.appendChild(text("td", slot.utc));
      tr.appendChild(text("td", slot.note || "", slot.note ? "sched-note" : ""));
      body.appendChild(tr);
    });
    (answer.skipped || []).forEach(function (note) {  // holidays left out, polar days
      var tr = document.createElement("tr");
      tr.appendChild(text("td", ""));
      tr.appendChild(text("td", ""));
      tr.appendChild(text("td", note, "sched-note"));
      body.appendChild(tr);
    });
    box.setAttribute("data-state", answer.ok ? "ok" : "error");
  }

  function fill(form, values) {
    Object.keys(values).forEach(function (name) {
      var value = values[name];
      form.querySelectorAll("[name='" + name + "']").forEach(function (input) {
        if (input.type === "checkbox") {
          input.checked = Array.isArray(value) && value.indexOf(input.value) !== -1;
        } else {
          input.value = value === null ? "" : String(value);
        }
      });
    });
    var words = form.querySelector("[name=words]");
    if (words) { words.value = ""; }
    showBuilder(form);
  }

  function refresh(form, box, readWords) {
    var data = new FormData(form);
    if (!readWords) { data.delete("words"); }  // while typing, the preview follows the builder
    data.append("_object_id", box.getAttribute("data-object-id") || "");
    var start = box.querySelector("#sched-preview-from");
    data.set("_preview_from", start ? start.value : "");  // the box may sit outside the form
    box.setAttribute("data-state", "loading");
    fetch(box.getAttribute("data-url"), {
      method: "POST", body: data, credentials: "same-origin",
      headers: {"X-Requested-With": "XMLHttpRequest"}
    }).then(function (response) {
      // A refusal (403, 404) says why in its JSON "error": show that, not only the status.
      return response.json().catch(function () { return {}; }).then(function (body) {
        if (!response.ok) { throw new Error(body.error || "HTTP " + response.status); }
        return body;
      });
    }).then(function (answer) {
      if (readWords && answer.ok && answer.fill) {
        fill(form, answer.fill);
        refresh(form, box, false);  // the builder now says it: preview what will be saved
        return;
      }
      draw(box, answer);
    })
      .catch(function (error) {
        draw(box, {ok: false, errors: {preview: [String(error)]}});
      });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var box = document.getElementById("sched-live-preview");
    var form = document.querySelector("#schedule_form");
    if (!form) { return; }
    showBuilder(form);
    if (!box) { return; }
    var repeat = form.querySelector("[name=repeat]");
    var when = repeat && repeat.closest("fieldset");
    if (when) { when.parentNode.insertBefore(box, when.nextSibling); }  // next to the builder
    var timer = null;
    function later(event) {
      var inWords = event && event.target && event.target.name === "words";
      if (inWords && event.type === "input") { return; }  // read when the text is complete
      showBuilder(form);
      clearTimeout(timer);
      timer = setTimeout(function () { refresh(form, box, inWords); }, 250);
    }
    var words = form.querySelector("[name=words]");
    if (words) {
      words.addEventListener("keydown", function (event) {
        if (event.key !== "Enter") { return; }
        event.preventDefault();  // Enter reads the text; it does not save the form
        later({type: "change", target: words});
      });
    }
    form.addEventListener("input", later);
    form.addEventListener("change", later);
    if (!form.contains(box)) { box.addEventListener("change", later); }
    refresh(form, box, false);
  });
}());
