// The observability dashboard: the pipeline's stages light up as events arrive (live
// over server-sent events), each counting its events, errors and times; the last events
// in a table; a past time range replayed from GET /v1/events. No libraries.
"use strict";

// The diagram: columns in the order data flows, each stage with the processes it shows.
// A process belongs to the first stage one of whose names equals it or prefixes it
// ("job." takes every job kind not listed before it).
const ZONES = [
  { title: "Capture", stages: [
    { id: "omi", name: "Omi webhooks", match: ["omi."] },
    { id: "fast-path", name: "Fast path (STT)", match: ["fast_path"] },
    { id: "sweep", name: "Sweep", match: ["sweep"] }] },
  { title: "Ingestion", stages: [
    { id: "ingestion", name: "Capture files → database", match: ["ingestion"] }] },
  { title: "Background jobs", stages: [
    { id: "job-embed", name: "Embed", match: ["job.embed"] },
    { id: "job-extract", name: "Extract", match: ["job.extract"] },
    { id: "job-other", name: "Other jobs", match: ["job."] }] },
  { title: "Retrieval", stages: [
    { id: "retrieval-search", name: "Search", match: ["retrieval.search"] },
    { id: "retrieval-bm25", name: "BM25 leg", match: ["retrieval.bm25"] },
    { id: "retrieval-vector", name: "Vector leg", match: ["retrieval.vector"] },
    { id: "retrieval-graph", name: "Graph leg", match: ["retrieval.graph"] },
    { id: "briefing", name: "Briefing", match: ["briefing"] }] },
  { title: "Conversation", stages: [
    { id: "chat-turn", name: "Chat turn", match: ["chat.turn"] },
    { id: "stt", name: "Speech to text", match: ["stt"] },
    { id: "llm", name: "LLM", match: ["llm"] },
    { id: "tools", name: "Tools", match: ["tool."] },
    { id: "tts", name: "Speech", match: ["tts"] }] },
  { title: "Guard and changes", stages: [
    { id: "auth", name: "Refused requests", match: ["auth"] },
    { id: "memory-actions", name: "Memory changes", match: ["memory."] },
    { id: "other", name: "Other events", match: [] }] },
];
const MAX_ROWS = 200;
const RUNNING_MS = 15000;  // a start without its end stops glowing after this
const FLASH_MS = 900;

const stages = new Map();  // id -> {box, count, errors, durations, running}
let source = null;  // the live EventSource
let replaying = null;  // {timer, cancelled}

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function stageOf(process) {
  for (const zone of ZONES) {
    for (const stage of zone.stages) {
      for (const name of stage.match) {
        if (process === name || process.startsWith(name.endsWith(".") ? name : name + ".")) return stage.id;
      }
    }
  }
  return "other";
}

function drawDiagram() {
  const diagram = $("diagram");
  diagram.replaceChildren();
  for (const zone of ZONES) {
    const column = el("div", { class: "zone" }, el("h3", {}, zone.title));
    for (const stage of zone.stages) {
      const box = el("div", { class: "stage", id: "stage-" + stage.id, "data-count": "0", "data-errors": "0" },
        el("span", { class: "name" }, stage.name),
        el("span", { class: "numbers" }, el("span", { class: "count" }, "0 events"), " · ",
          el("span", { class: "errors" }, "0 errors")),
        el("span", { class: "latency" }, "no timing yet"));
      column.append(box);
      stages.set(stage.id, { box, count: 0, errors: 0, durations: [], running: null });
    }
    diagram.append(column);
  }
}

function resetAll() {
  drawDiagram();
  $("event-rows").replaceChildren();
}

function fmtMs(ms) { return ms >= 1000 ? (ms / 1000).toFixed(1) + " s" : Math.round(ms) + " ms"; }

function flash(box, cls) {
  box.classList.remove("flash", "failed");
  void box.offsetWidth;  // restart the transition
  box.classList.add(cls);
  setTimeout(() => box.classList.remove(cls), FLASH_MS);
}

function light(event) {
  const state = stages.get(stageOf(event.process));
  const box = state.box;
  state.count += 1;
  box.dataset.count = String(state.count);
  box.querySelector(".count").textContent = state.count === 1 ? "1 event" : state.count + " events";
  box.classList.add("seen");
  if (event.event_type === "start") {
    box.classList.add("running");
    clearTimeout(state.running);
    state.running = setTimeout(() => box.classList.remove("running"), RUNNING_MS);
    return;
  }
  if (event.event_type === "complete" || event.event_type === "error") {
    clearTimeout(state.running);
    box.classList.remove("running");
  }
  if (event.event_type === "error") {
    state.errors += 1;
    box.dataset.errors = String(state.errors);
    const errors = box.querySelector(".errors");
    errors.textContent = state.errors === 1 ? "1 error" : state.errors + " errors";
    errors.classList.add("some");
    flash(box, "failed");
  } else {
    flash(box, "flash");
  }
  const ms = event.data && typeof event.data.duration_ms === "number" ? event.data.duration_ms : null;
  if (ms !== null) {
    state.durations.push(ms);
    if (state.durations.length > 200) state.durations.shift();
    const avg = state.durations.reduce((a, b) => a + b, 0) / state.durations.length;
    box.querySelector(".latency").textContent = `last ${fmtMs(ms)} · avg ${fmtMs(avg)}`;
  }
}

function details(event) {
  const parts = [];
  for (const [key, value] of Object.entries(event.data || {})) {
    const shown = key.endsWith("_ms") && typeof value === "number" ? fmtMs(value) : JSON.stringify(value);
    parts.push(`${key}=${shown}`);
  }
  if (event.reasoning) parts.push("— " + event.reasoning);
  return parts.join("  ");
}

function matchesFilter(event) {
  const wanted = $("event-filter").value.trim().toLowerCase();
  if (!wanted) return true;
  return event.process.includes(wanted) || (event.session_id || "").toLowerCase().includes(wanted);
}

function addRow(event) {
  const when = new Date(event.timestamp);
  const row = el("tr", { class: event.event_type, "data-process": event.process, "data-session": event.session_id || "" },
    el("td", { title: event.timestamp }, when.toLocaleTimeString([], { hour12: false }) + "." +
      String(when.getMilliseconds()).padStart(3, "0")),
    el("td", {}, event.process),
    el("td", {}, event.event_type),
    el("td", {}, event.session_id || ""),
    el("td", { class: "details" }, details(event)));
  row.hidden = !matchesFilter(event);
  const rows = $("event-rows");
  rows.prepend(row);
  while (rows.children.length > MAX_ROWS) rows.lastElementChild.remove();
}

function show(event) {
  light(event);
  addRow(event);
}

function setMode(text, kind) {
  const mode = $("mode");
  mode.textContent = text;
  mode.className = "mode " + kind;
}

// live ------------------------------------------------------------------------------

function startLive() {
  stopReplay();
  if (source) source.close();
  resetAll();
  $("live-button").hidden = true;
  // EventSource cannot send headers: the token goes in the query, for this stream only.
  source = new EventSource("/v1/events/stream?token=" + encodeURIComponent(token()));
  source.onopen = () => { setMode("Live", "live"); setStatus("Live: events appear as they happen.", "ok"); };
  source.onmessage = (message) => {
    try { show(JSON.parse(message.data)); } catch (err) { console.warn("unreadable event", err); }
  };
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) {
      setMode("Disconnected", "down");
      // Closed for good: the token may be wrong (a 401); check it the usual way.
      request("/v1/events?limit=1").then(
        () => setStatus("The live stream closed. Reload the page to reconnect.", "bad"),
        (err) => setStatus(err.message, "bad"));
    } else {
      setMode("Reconnecting…", "down");
      setStatus("The live stream was interrupted; reconnecting…", "busy");
    }
  };
}

// replay ----------------------------------------------------------------------------

function stopReplay() {
  if (replaying) { replaying.cancelled = true; clearTimeout(replaying.timer); replaying = null; }
}

async function replay(event) {
  event.preventDefault();
  const start = new Date($("replay-start").value);
  const end = $("replay-end").value ? new Date($("replay-end").value) : new Date();
  if (isNaN(start) || isNaN(end) || end <= start) { setStatus("Choose a start before the end.", "bad"); return; }
  const speed = Number($("replay-speed").value);
  const params = new URLSearchParams({ start: start.toISOString(), end: end.toISOString(), order: "asc", limit: "5000" });
  let page;
  try {
    page = await (await request("/v1/events?" + params)).json();
  } catch (err) { setStatus(err.message, "bad"); return; }
  if (source) { source.close(); source = null; }
  stopReplay();
  resetAll();
  $("live-button").hidden = false;
  const events = page.events;
  const what = `${events.length} event${events.length === 1 ? "" : "s"}${page.truncated ? " (the first 5,000)" : ""}`;
  setMode("Replay", "replay");
  if (!events.length) { setStatus("Nothing happened in that time range.", "idle"); return; }
  const run = { cancelled: false, timer: null };
  replaying = run;
  if (speed === 0) {
    events.forEach(show);
    setStatus(`Replayed ${what} from ${start.toLocaleString()}.`, "ok");
    return;
  }
  let index = 0;
  const step = () => {
    if (run.cancelled) return;
    show(events[index]);
    index += 1;
    setStatus(`Replaying ${index} of ${what}…`, "busy");
    if (index >= events.length) { setStatus(`Replayed ${what} from ${start.toLocaleString()}.`, "ok"); return; }
    const gap = (new Date(events[index].timestamp) - new Date(events[index - 1].timestamp)) / speed;
    run.timer = setTimeout(step, Math.min(Math.max(gap, 0), 2000));  // long quiet spells shortened
  };
  step();
}

function localInput(date) {
  const shifted = new Date(date.getTime() - date.getTimezoneOffset() * 60000);
  return shifted.toISOString().slice(0, 19);
}

// page ------------------------------------------------------------------------------

drawDiagram();
$("replay-start").value = localInput(new Date(Date.now() - 15 * 60000));
$("replay-form").addEventListener("submit", replay);
$("live-button").addEventListener("click", startLive);
$("event-filter").addEventListener("input", () => {
  const wanted = $("event-filter").value.trim().toLowerCase();
  for (const row of $("event-rows").children) {
    row.hidden = Boolean(wanted) && !row.dataset.process.includes(wanted) && !row.dataset.session.toLowerCase().includes(wanted);
  }
});
setUpToken("/v1/events?limit=1", startLive, "Paste the access token to see what Annie is doing.");
