// Requests no person caused say so (accounts/middleware.py, X-Sent-By-Page): htmx's polls
// ("every 2s" on live-job pages) and load triggers carry no triggering event, a click, a
// change or a submit does. Only the person's own requests keep the session from its idle end.
(function () {
  "use strict";
  document.addEventListener("htmx:configRequest", (event) => {
    if (!event.detail.triggeringEvent) event.detail.headers["X-Sent-By-Page"] = "1";
  });
})();
