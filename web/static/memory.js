// The memory browser: what Annie remembers, by day, by entity, by search; correct it,
// forget it. No libraries and nothing from the network but this server.
"use strict";

const RECIPES = ["hybrid", "hybrid_no_graph", "bm25", "vector", "graph"];

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

async function api(path, options = {}) {
  const response = await request(path, options);
  try { return await response.json(); } catch (_) { return null; } // not JSON
}

const post = (path, body) => api(path, { method: "POST", body: JSON.stringify(body || {}) });

function fmtTime(iso) { return iso ? new Date(iso).toISOString().slice(11, 16) : ""; }
function fmtDate(iso) { return iso ? iso.slice(0, 10) : ""; }

// ---- a small dialog: confirm, or ask for one line -----------------------------------

function ask(text, { input = false, value = "", yes = "OK", danger = false } = {}) {
  return new Promise((resolve) => {
    const dialog = $("dialog"), field = $("dialog-input"), yesButton = $("dialog-yes");
    $("dialog-text").textContent = text;
    field.hidden = !input;
    field.value = value;
    yesButton.textContent = yes;
    yesButton.className = danger ? "danger" : "primary";
    dialog.hidden = false;
    (input ? field : yesButton).focus();
    const finish = (result) => {
      dialog.hidden = true;
      $("dialog-form").onsubmit = null;
      $("dialog-no").onclick = null;
      resolve(result);
    };
    $("dialog-form").onsubmit = (event) => { event.preventDefault(); finish(input ? field.value.trim() || null : true); };
    $("dialog-no").onclick = () => finish(input ? null : false);
  });
}

async function act(work, done) {
  try {
    const result = await work();
    if (result === undefined) return; // cancelled
    await refresh();
    setStatus(done, "ok");
  } catch (err) { setStatus(err.message, "bad"); }
}

// Destructive: show exactly what goes (the server's preview), then ask for a yes.
async function forgetWithConfirmation(request) {
  await act(async () => {
    const plan = await post("/v1/forget/preview", request);
    if (!(await ask(plan.description, { yes: "Forget", danger: true }))) return undefined;
    return post("/v1/forget", Object.assign({}, request, { confirm: true }));
  }, "Forgotten.");
}

// ---- views ------------------------------------------------------------------------

let current = { view: "timeline", day: null, entity: null, segment: null };

function showView(view) {
  current.view = view;
  for (const button of document.querySelectorAll(".tabs button")) {
    button.setAttribute("aria-pressed", String(button.dataset.view === view));
  }
  for (const section of document.querySelectorAll(".view")) section.hidden = section.id !== "view-" + view;
}

function go(hash) { if (location.hash === hash) route(); else location.hash = hash; }

async function route() {
  const params = new URLSearchParams(location.hash.slice(1));
  try {
    if (params.has("entity")) {
      showView("entities");
      current.entity = Number(params.get("entity"));
      await renderEntity(current.entity);
    } else if (params.has("view")) {
      showView(params.get("view"));
      if (params.get("view") === "log") await renderLog();
      if (params.get("view") === "entities") await findEntities($("entity-search").value);
    } else {
      showView("timeline");
      current.segment = params.get("seg");
      let day = params.get("day");
      if (current.segment && !day) day = await dayOfSegment(current.segment);
      await renderDays(day);
    }
  } catch (err) { setStatus(err.message, "bad"); }
}

async function refresh() { await route(); }

// The day a segment was spoken on, from its session.
async function dayOfSegment(key) {
  const [sid, segId] = key.split("/");
  const session = await api("/v1/sessions/" + encodeURIComponent(sid));
  const seg = session.segments.find((s) => s.segment_id === segId);
  return fmtDate(seg ? seg.timestamp : session.started_at);
}

// timeline ----------------------------------------------------------------------------

async function renderDays(day) {
  const { days } = await api("/v1/browse/days");
  const list = $("days");
  list.replaceChildren();
  if (!days.length) {
    $("day-view").replaceChildren(el("p", { class: "panel hint" }, "Nothing is remembered yet."));
    setStatus("Nothing is remembered yet.", "idle");
    return;
  }
  current.day = day && days.some((d) => d.date === day) ? day : days[0].date;
  for (const d of days) {
    list.append(el("li", {}, el("a", {
      href: "#day=" + d.date, class: d.date === current.day ? "current" : null,
    }, d.date, el("span", { class: "muted" }, ` ${d.sessions} session${d.sessions === 1 ? "" : "s"}`))));
  }
  await renderDay(current.day);
}

function segmentItem(session, seg) {
  const emotion = seg.emotion && seg.emotion.label ? seg.emotion.label : null;
  const li = el("li", {
    class: "segment" + (seg.overlap ? " overlap" : "") + (seg.pinned ? " pinned" : ""),
    id: `seg-${session.session_id}-${seg.segment_id}`,
    dataset: { session: session.session_id, segment: seg.segment_id },
  },
  el("span", { class: "time" }, fmtTime(seg.timestamp)),
  el("span", { class: "speaker" }, seg.speaker || "Someone"),
  el("span", { class: "text" }, seg.text),
  el("span", { class: "marks" },
    emotion ? el("span", { class: "mark emotion", title: "emotion" }, emotion) : null,
    seg.overlap ? el("span", { class: "mark", title: "spoken over another speaker" }, "overlap") : null,
    seg.pinned ? el("span", { class: "mark pinned", title: "corrected by a person: never replaced" }, "pinned") : null),
  el("span", { class: "actions" },
    el("button", { type: "button", class: "small fix-speaker", onclick: () => fixSpeaker(session, seg) }, "Speaker…"),
    el("button", { type: "button", class: "small forget-segment",
      onclick: () => forgetWithConfirmation({ kind: "segment", session_id: session.session_id, segment_id: seg.segment_id }) },
    "Forget")));
  return li;
}

async function fixSpeaker(session, seg) {
  await act(async () => {
    const speaker = await ask(`Who said "${seg.text.slice(0, 60)}"?`, { input: true, value: seg.speaker });
    if (!speaker) return undefined;
    await post("/v1/feedback", { session_id: session.session_id, segment_id: seg.segment_id, speaker });
    await new Promise((resolve) => setTimeout(resolve, 1500)); // the capture file is read again
    return true;
  }, "Speaker corrected; the segment is pinned.");
}

function factItem(fact, { closable = false } = {}) {
  const closed = fact.valid_to !== null;
  let when = `since ${fmtDate(fact.valid_from)}`;
  if (closed) when = fact.closed_reason === "wrong" ? "closed as wrong" : `${fmtDate(fact.valid_from)} to ${fmtDate(fact.valid_to)}`;
  return el("li", { class: "fact" + (closed ? " closed" : ""), dataset: { fact: fact.id } },
    el("span", { class: "fact-text" }, fact.fact),
    el("span", { class: "muted" }, ` (${when}${fact.replaced_by ? `; replaced by "${fact.replaced_by}"` : ""})`),
    fact.source_session && fact.source_segment
      ? el("a", { class: "source", href: `#seg=${fact.source_session}/${fact.source_segment}` }, "heard here")
      : null,
    closable ? el("button", { type: "button", class: "small close-fact", onclick: () => closeFact(fact) }, "Close as wrong") : null);
}

async function closeFact(fact) {
  await act(async () => {
    if (!(await ask(`Close "${fact.fact}" as wrong? It stays in the history.`, { yes: "Close it" }))) return undefined;
    return post(`/v1/corrections/facts/${fact.id}/close`, { reason: "wrong" });
  }, "The fact is closed as wrong.");
}

async function renderDay(day) {
  const data = await api("/v1/browse/day?date=" + encodeURIComponent(day));
  const view = $("day-view");
  view.replaceChildren(el("h2", { class: "day-title" }, day));
  for (const session of data.sessions) {
    view.append(el("article", { class: "panel session", dataset: { session: session.session_id } },
      el("div", { class: "row between" },
        // From its first line: a day's remembered facts share one session that starts at midnight.
        el("h3", {}, `${fmtTime(session.segments.length ? session.segments[0].timestamp : session.started_at)} · ${session.source}`,
          el("span", { class: "muted" }, ` ${session.session_id}`)),
        el("button", { type: "button", class: "small forget-session",
          onclick: () => forgetWithConfirmation({ kind: "session", session_id: session.session_id }) }, "Forget session")),
      el("ol", { class: "segments" }, session.segments.map((seg) => segmentItem(session, seg))),
      session.entities.length ? el("p", { class: "chips" }, session.entities.map((e) =>
        el("a", { class: "chip", href: "#entity=" + e.id, title: e.type }, e.name))) : null,
      session.facts.length ? el("ul", { class: "facts" }, session.facts.map((f) => factItem(f))) : null));
  }
  setStatus(`${data.sessions.length} session${data.sessions.length === 1 ? "" : "s"} on ${day}.`, "ok");
  if (current.segment) {
    const [sid, segId] = current.segment.split("/");
    const target = document.getElementById(`seg-${sid}-${segId}`);
    if (target) { target.classList.add("highlight"); target.scrollIntoView({ block: "center" }); }
  }
}

// entities ----------------------------------------------------------------------------

async function findEntities(query) {
  const { entities } = await api("/v1/browse/entities?q=" + encodeURIComponent(query || ""));
  $("entity-results").replaceChildren(...entities.map((e) => el("li", { class: "entity-result" },
    el("a", { href: "#entity=" + e.id }, e.name), el("span", { class: "muted" }, ` ${e.type} · ${e.mention_count} mentions`))));
  if (!entities.length) $("entity-results").append(el("li", { class: "muted" }, "Nothing by that name."));
}

async function renderEntity(id) {
  const e = await api("/v1/browse/entities/" + id);
  const view = $("entity-view");
  view.replaceChildren(el("article", { class: "panel entity", dataset: { entity: e.id } },
    el("div", { class: "row between" },
      el("h2", { class: "entity-name" }, e.name, el("span", { class: "muted" }, ` ${e.type}`)),
      el("span", { class: "actions" },
        el("button", { type: "button", class: "small rename", onclick: () => renameEntity(e) }, "Rename"),
        el("button", { type: "button", class: "small retype", onclick: () => retypeEntity(e) }, "Change type"),
        el("button", { type: "button", class: "small merge", onclick: () => mergeEntity(e) }, "Merge…"),
        el("button", { type: "button", class: "small forget-entity", onclick: () => forgetWithConfirmation({ kind: "entity", entity_id: e.id }) }, "Forget"))),
    el("p", { class: "meta" },
      `Tier ${e.tier} · salience ${e.salience} · ${e.mention_count} mention${e.mention_count === 1 ? "" : "s"} · `
      + `first seen ${fmtDate(e.first_seen)}, last seen ${fmtDate(e.last_seen)}`
      + (e.sensitivity !== "open" ? ` · ${e.sensitivity}` : "")),
    el("h3", {}, "What holds now"),
    el("ul", { id: "current-facts", class: "facts" },
      e.current_facts.length ? e.current_facts.map((f) => factItem(f, { closable: true })) : el("li", { class: "muted" }, "No current facts.")),
    el("h3", {}, "History"),
    el("ul", { id: "closed-facts", class: "facts" },
      e.closed_facts.length ? e.closed_facts.map((f) => factItem(f)) : el("li", { class: "muted" }, "No closed facts.")),
    e.merged_from.length ? el("p", { class: "muted" }, "Also known as: " + e.merged_from.map((m) => m.name).join(", ")) : null,
    el("h3", {}, "Mentions"),
    el("ul", { id: "mentions", class: "plain" }, e.mentions.map((m) => el("li", { class: "mention" },
      el("a", { href: `#seg=${m.session_id}/${m.segment_id}` },
        `${fmtDate(m.timestamp)} ${fmtTime(m.timestamp)}`),
      ` ${m.speaker || "Someone"}: `, el("q", {}, m.text))))));
  setStatus(`${e.name}: ${e.current_facts.length} current fact${e.current_facts.length === 1 ? "" : "s"}.`, "ok");
}

async function renameEntity(e) {
  await act(async () => {
    const name = await ask(`New name for ${e.name}:`, { input: true, value: e.name });
    return name ? post(`/v1/corrections/entities/${e.id}/rename`, { name }) : undefined;
  }, "Renamed.");
}

async function retypeEntity(e) {
  await act(async () => {
    const type = await ask(`Type of ${e.name} (person, place, organization, topic, …):`, { input: true, value: e.type });
    return type ? post(`/v1/corrections/entities/${e.id}/retype`, { type: type.toLowerCase() }) : undefined;
  }, "Type changed.");
}

async function mergeEntity(e) {
  await act(async () => {
    const other = await ask(`Merge which entity into ${e.name}? Its name:`, { input: true });
    if (!other) return undefined;
    const { entities } = await api("/v1/browse/entities?q=" + encodeURIComponent(other));
    const match = entities.find((x) => x.id !== e.id);
    if (!match) throw new Error(`No other entity called "${other}".`);
    if (!(await ask(`Merge ${match.type} "${match.name}" into "${e.name}"? Its facts and mentions move; this cannot be undone.`, { yes: "Merge", danger: true }))) return undefined;
    return post("/v1/corrections/entities/merge", { keep_id: e.id, merge_id: match.id, confirm: true });
  }, "Merged.");
}

// search ------------------------------------------------------------------------------

async function search(query, recipe) {
  const data = await api(`/v1/context?explain=true&limit=20&recipe=${encodeURIComponent(recipe)}&query=${encodeURIComponent(query)}`);
  $("search-recipe-used").textContent = `Recipe: ${data.recipe}. Per leg: rank (score).`;
  $("search-results").replaceChildren(...data.results.map((hit) => el("li", { class: "hit" },
    el("div", {}, hit.kind === "segment"
      ? el("a", { href: `#day=${fmtDate(hit.timestamp)}&seg=${hit.id}` }, `${fmtDate(hit.timestamp)} ${fmtTime(hit.timestamp)}`)
      : el("span", { class: "mark" }, hit.kind),
      ` ${hit.speaker || ""} `, el("span", { class: "muted" }, `score ${hit.score}`)),
    el("div", { class: "text" }, hit.text),
    el("div", { class: "legs" }, Object.entries(hit.legs || {}).map(([leg, v]) =>
      el("span", { class: "mark" }, `${leg} #${v.rank} (${v.score})`))))));
  if (!data.results.length) $("search-results").append(el("li", { class: "muted" }, "Nothing found."));
  setStatus(`${data.results.length} result${data.results.length === 1 ? "" : "s"}.`, "ok");
}

// daily reflection --------------------------------------------------------------------

async function renderDaily(day) {
  const r = await api("/v1/daily?date=" + encodeURIComponent(day));
  const names = (list) => (list || []).map((x) => x.name).join(", ") || "none";
  $("daily-view").replaceChildren(
    el("p", { class: "summary" }, r.summary || (r.summary_error ? `No summary: ${r.summary_error}` : "No summary.")),
    el("dl", {},
      el("dt", {}, "Sessions"), el("dd", {}, String(r.sessions)),
      el("dt", {}, "People"), el("dd", {}, names(r.people)),
      el("dt", {}, "Topics"), el("dd", {}, names(r.topics)),
      el("dt", {}, "Promises"), el("dd", {}, names(r.promises)),
      el("dt", {}, "Decisions"), el("dd", {}, names(r.decisions)),
      el("dt", {}, "Mood"), el("dd", {}, (r.emotional_arc || []).map((p) => `${fmtTime(p.time)} ${p.label}`).join(" → ") || "not recorded")));
  setStatus(`Reflection of ${day}.`, "ok");
}

// log ---------------------------------------------------------------------------------

async function renderLog() {
  const { actions } = await api("/v1/browse/actions");
  $("action-log").replaceChildren(...actions.map((a) => el("li", { class: "action " + a.level },
    el("span", { class: "muted" }, `${fmtDate(a.created_at)} ${fmtTime(a.created_at)} `),
    el("strong", {}, a.action.replace("_", " ")), ` ${a.summary} `, el("span", { class: "mark" }, a.level),
    el("span", { class: "muted" }, ` by ${a.requested_by}`))));
  if (!actions.length) $("action-log").append(el("li", { class: "muted" }, "No corrections or deletions yet."));
}

// ---- wiring ------------------------------------------------------------------------

for (const button of document.querySelectorAll(".tabs button")) {
  button.addEventListener("click", () => go(button.dataset.view === "timeline" ? "#" : "#view=" + button.dataset.view));
}
window.addEventListener("hashchange", route);

$("entity-form").addEventListener("submit", (event) => {
  event.preventDefault();
  findEntities($("entity-search").value).catch((err) => setStatus(err.message, "bad"));
});

$("search-recipe").append(...RECIPES.map((r) => el("option", { value: r }, r)));
$("search-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const query = $("search-input").value.trim();
  if (query) search(query, $("search-recipe").value).catch((err) => setStatus(err.message, "bad"));
});

$("daily-form").addEventListener("submit", (event) => {
  event.preventDefault();
  renderDaily($("daily-date").value).catch((err) => setStatus(err.message, "bad"));
});

$("daily-date").value = new Date().toISOString().slice(0, 10);
setUpToken("/v1/stats", route, "Enter the access token to see the memory.");
