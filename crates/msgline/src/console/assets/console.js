// msgline console: the only script. A thread with data-live listens to the server's events and
// puts the messages it sends (HTML rendered and escaped on the server) in place; without
// JavaScript the page still works, and shows changes on reload.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var thread = document.querySelector("[data-live]");
  if (!thread || !window.EventSource) return;
  var events = new EventSource(thread.getAttribute("data-live"));
  events.addEventListener("thread", function (event) {
    var atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
    thread.innerHTML = event.data;
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
