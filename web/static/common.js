// Shared by Annie's pages: the access token, the status line and calls to the API.
// Loaded before the page's own script.
"use strict";

const TOKEN_KEY = "annie-token";
const $ = (id) => document.getElementById(id);

function token() { return localStorage.getItem(TOKEN_KEY) || ""; }

function setStatus(text, kind) {
  const status = $("status");
  status.textContent = text;
  status.className = "status " + (kind || "idle");
}

function askForToken(message) {
  $("token-panel").hidden = false;
  if (message) setStatus(message, "bad");
  $("token-input").focus();
}

// A call to Annie with the token; the response, or an Error that says what is wrong.
async function request(path, options = {}) {
  const headers = Object.assign({ "Content-Type": "application/json", "X-Internal-Token": token() }, options.headers || {});
  let response;
  try {
    response = await fetch(path, Object.assign({}, options, { headers }));
  } catch (err) {
    throw new Error("Annie's server cannot be reached. Is it running?");
  }
  if (response.status === 401) {
    askForToken("The access token is missing or wrong.");
    throw new Error("The access token is missing or wrong.");
  }
  if (!response.ok) {
    let detail = response.statusText;
    try { detail = (await response.json()).detail || detail; } catch (_) { /* not JSON */ }
    throw new Error(typeof detail === "string" ? detail : JSON.stringify(detail));
  }
  return response;
}

// The token panel: a token from the form or from "#token=" in the address is checked
// against ``checkPath``; once it works, ``onReady`` runs with its response.
function setUpToken(checkPath, onReady, prompt) {
  const ready = () => request(checkPath).then((response) => { $("token-panel").hidden = true; return onReady(response); });
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const value = $("token-input").value.trim();
    if (!value) return;
    localStorage.setItem(TOKEN_KEY, value);
    $("token-input").value = "";
    ready().catch((err) => setStatus(err.message, "bad"));
  });
  $("forget-token").addEventListener("click", () => { localStorage.removeItem(TOKEN_KEY); askForToken(); });
  const fromUrl = new URLSearchParams(location.hash.slice(1)).get("token");
  if (fromUrl) { localStorage.setItem(TOKEN_KEY, fromUrl); history.replaceState(null, "", location.pathname); }
  if (!token()) { askForToken(); setStatus(prompt, "idle"); return; }
  ready().catch((err) => setStatus(err.message, "bad"));
}
