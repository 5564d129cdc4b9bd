// msgline console: the only script. A thread with data-live listens to the server's events and
// puts the messages it sends (HTML rendered and escaped on the server) in place, keeping open
// what was open (a message's earlier texts, an unsend's confirm); without JavaScript the page
// still works, and shows changes on reload.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var thread = document.querySelector("[data-live]");
  if (!thread || !window.EventSource) return;
  var events = new EventSource(thread.getAttribute("data-live"));
  events.addEventListener("thread", function (event) {
    var atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
    var open = Array.prototype.map.call(thread.querySelectorAll("details[open][id]"), function (d) { return d.id; });
    thread.innerHTML = event.data;
    open.forEach(function (id) {
      var details = document.getElementById(id);
      if (details) details.open = true;
    });
    if (atBottom) window.scrollTo(0, document.body.scrollHeight);
  });
});

// A button with data-copy copies the text of the element it names, and says so.
document.addEventListener("click", function (event) {
  var button = event.target.closest("[data-copy]");
  if (!button || !navigator.clipboard) return;
  var id = button.getAttribute("data-copy");
  navigator.clipboard.writeText(document.getElementById(id).textContent).then(function () {
    var said = document.querySelector('[data-copied="' + id + '"]');
    if (said) said.hidden = false;
  });
});

// A compose box with data-typing shows the line typing to the other side while someone types:
// at most once every four seconds, and not again after the server said the conversation cannot
// show it (SMS, a platform line, a device without typing indicators).
document.addEventListener("DOMContentLoaded", function () {
  var form = document.querySelector("form[data-typing]");
  if (!form || !window.fetch) return;
  var body = form.querySelector("textarea");
  var csrf = form.querySelector("input[name=csrf]").value;
  var last = 0, refused = false;
  body.addEventListener("input", function () {
    var now = Date.now();
    if (refused || now - last < 4000 || body.value.trim() === "") return;
    last = now;
    fetch(form.getAttribute("data-typing"), {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: "csrf=" + encodeURIComponent(csrf),
      credentials: "same-origin",
    }).then(function (response) {
      if (!response.ok && response.status !== 429 && response.status < 500) refused = true;
    }, function () {});
  });
});
