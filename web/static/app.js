// Annie's page: talk over WebRTC, or type; the transcript of both sides; tables.
// No libraries and nothing from the network but this server.
"use strict";

const transcriptEl = $("transcript");
const talkButton = $("talk");
const chatForm = $("chat-form");
const chatInput = $("chat-input");

let pc = null;
let channel = null;
const CHAT_SESSION_KEY = "annie-chat-session"; // this tab's conversation, kept across a reload
let chatSessionId = sessionStorage.getItem(CHAT_SESSION_KEY);
let botLine = null; // the assistant line being written right now

function addLine(role, text) {
  const li = document.createElement("li");
  li.className = role;
  li.textContent = text;
  transcriptEl.appendChild(li);
  transcriptEl.scrollTop = transcriptEl.scrollHeight;
  return li;
}

function botText(delta, final) {
  if (!botLine) botLine = addLine("assistant", "");
  if (final) {
    if (delta) botLine.textContent = delta;
    botLine = null;
  } else {
    botLine.textContent += delta;
  }
  transcriptEl.scrollTop = transcriptEl.scrollHeight;
}

function renderTable(table) {
  const el = document.createElement("table");
  const caption = el.createCaption();
  caption.textContent = table.title || "Table";
  const head = el.createTHead().insertRow();
  for (const column of table.columns || []) {
    const th = document.createElement("th");
    th.textContent = column;
    head.appendChild(th);
  }
  const body = el.createTBody();
  for (const row of table.rows || []) {
    const tr = body.insertRow();
    for (const cell of row) tr.insertCell().textContent = cell;
  }
  $("tables").prepend(el);
}

const api = request;

// ---- voice ---------------------------------------------------------------

function onPageMessage(event) {
  let message;
  try { message = JSON.parse(event.data); } catch (_) { return; }
  switch (message.type) {
    case "transcript":
      if (message.role === "user") {
        const last = transcriptEl.lastElementChild;
        // the rest of a turn that paused mid-thought goes on its line
        if (message.continues && last && last.className === "user") last.textContent += " " + message.text;
        else addLine("user", message.text);
        botLine = null;
      }
      else botText(message.text, message.final);
      break;
    case "table": renderTable(message); break;
    case "tool_use": if (message.name !== "think") addLine("note", "Annie used " + message.name.replace("_", " ")); break;
    case "state": showTurnState(message.state); break;
    case "error": addLine("error", message.message); break;
  }
}

// What Annie is doing in a voice session, as the server reports it.
const TURN_STATES = {
  connected: ["Connected. Speak any time.", "ok"],
  listening: ["Listening…", "ok"],
  thinking: ["Thinking…", "busy"],
  "searching memory": ["Searching memory…", "busy"],
  speaking: ["Speaking… (talk to interrupt)", "ok"],
};

function showTurnState(state) {
  const shown = TURN_STATES[state];
  if (shown) setStatus(shown[0], shown[1]);
  document.body.dataset.turn = state;
  turnStates.push(state); // the states seen, for the browser test
}
const turnStates = (window.annieTurnStates = []);

const MEMORY_TOOLS = new Set(["search_memory", "recall_entity", "daily_summary", "remember"]);

// Ask the server to have the language model read the start of a conversation now, so
// the first answer does not wait for it. Best effort: a failure changes nothing.
function warmUp() { api("/v1/warm", { method: "POST", body: "{}" }).catch(() => {}); }

function waitForIce(peer) {
  if (peer.iceGatheringState === "complete") return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => { if (peer.iceGatheringState === "complete") { peer.removeEventListener("icegatheringstatechange", done); resolve(); } };
    peer.addEventListener("icegatheringstatechange", done);
    setTimeout(resolve, 3000); // use what was gathered so far
  });
}

async function startTalking() {
  if (!token()) { askForToken("Enter the access token first."); return; }
  talkButton.disabled = true;
  setStatus("Asking for the microphone…", "busy");
  let mic;
  try {
    mic = await navigator.mediaDevices.getUserMedia({ audio: { echoCancellation: true, noiseSuppression: true, autoGainControl: true } });
  } catch (err) {
    setStatus("The microphone is blocked. Allow it for this page, or type below.", "bad");
    talkButton.disabled = false;
    return;
  }
  try {
    setStatus("Connecting…", "busy");
    const session = await (await api("/start", { method: "POST", body: "{}" })).json();
    pc = new RTCPeerConnection();
    pc.addTransceiver(mic.getAudioTracks()[0], { direction: "sendrecv" });
    channel = pc.createDataChannel("annie");
    channel.onmessage = onPageMessage;
    pc.ontrack = (event) => { $("bot-audio").srcObject = event.streams[0] || new MediaStream([event.track]); };
    pc.onconnectionstatechange = () => {
      const state = pc && pc.connectionState;
      if (state === "failed") { setStatus("The connection failed. Try again.", "bad"); stopTalking(); }
      else if (state === "disconnected" || state === "closed") { setStatus("Disconnected.", "idle"); stopTalking(); }
    };
    await pc.setLocalDescription(await pc.createOffer());
    await waitForIce(pc);
    const answer = await (await api(session.offer_url, {
      method: "POST", body: JSON.stringify({ sdp: pc.localDescription.sdp, type: "offer" }),
    })).json();
    await pc.setRemoteDescription({ sdp: answer.sdp, type: answer.type });
    talkButton.textContent = "Hang up";
    talkButton.setAttribute("aria-pressed", "true");
    setStatus("Connecting… Annie will greet you.", "busy");
  } catch (err) {
    setStatus("Could not start talking: " + err.message, "bad");
    mic.getTracks().forEach((t) => t.stop());
    stopTalking();
  } finally {
    talkButton.disabled = false;
  }
}

function stopTalking() {
  if (pc) {
    pc.getSenders().forEach((s) => s.track && s.track.stop());
    pc.close();
  }
  pc = null;
  channel = null;
  talkButton.textContent = "Talk";
  talkButton.setAttribute("aria-pressed", "false");
}

talkButton.addEventListener("click", () => {
  if (pc) { stopTalking(); setStatus("Not connected", "idle"); } else { startTalking(); }
});

// ---- text chat -------------------------------------------------------------

function keepChatSession(id) {
  chatSessionId = id;
  if (id) sessionStorage.setItem(CHAT_SESSION_KEY, id); else sessionStorage.removeItem(CHAT_SESSION_KEY);
}

// After a reload: show the conversation this tab was having, if Annie still has it.
// An answer that was still being written goes on being shown until it is complete.
const FOLLOW_MS = 1000;

async function chatSession() {
  return (await api("/v1/chat/sessions/" + encodeURIComponent(chatSessionId))).json();
}

async function restoreChat() {
  if (!chatSessionId) return;
  let session;
  try {
    session = await chatSession();
  } catch (err) {
    keepChatSession(null); // it ended, or Annie restarted: the next message starts a new one
    return;
  }
  session.messages.forEach((m, index) => {
    const line = addLine(m.role, m.text || (m.streaming ? "Thinking…" : ""));
    if (m.streaming) { line.classList.add("pending"); followAnswer(line, index); }
  });
}

// Re-read the session until the answer at ``index`` is no longer being written.
async function followAnswer(line, index) {
  $("chat-send").disabled = true; // the session answers one message at a time
  try {
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, FOLLOW_MS));
      let session;
      try { session = await chatSession(); } catch (err) { line.className = "error"; line.textContent = err.message; return; }
      const m = session.messages[index];
      if (!m || m.role !== "assistant") { line.className = "error"; line.textContent = "This answer did not finish."; return; }
      if (m.text) line.textContent = m.text;
      if (!m.streaming) { line.classList.remove("pending"); return; }
      transcriptEl.scrollTop = transcriptEl.scrollHeight;
    }
  } finally {
    $("chat-send").disabled = false;
  }
}

async function sendChat(message) {
  addLine("user", message);
  const line = addLine("assistant", "Thinking…");
  line.classList.add("pending");
  let started = false;
  const body = { message };
  if (chatSessionId) body.session_id = chatSessionId;
  let response;
  try {
    response = await api("/v1/chat", { method: "POST", body: JSON.stringify(body) });
  } catch (err) {
    if (chatSessionId && /no chat session/.test(err.message)) { keepChatSession(null); line.remove(); transcriptEl.lastChild.remove(); return sendChat(message); }
    line.className = "error";
    line.textContent = err.message;
    return;
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) !== -1) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      for (const row of block.split("\n")) {
        if (!row.startsWith("data: ")) continue;
        const event = JSON.parse(row.slice(6));
        if (event.type === "session") keepChatSession(event.session_id);
        else if (event.type === "tool_start") {
          if (!started && MEMORY_TOOLS.has(event.name)) { line.textContent = "Searching memory…"; turnStates.push("chat: searching memory"); }
        }
        else if (event.type === "token") {
          if (!started) { line.textContent = ""; line.classList.remove("pending"); started = true; }
          line.textContent += event.text;
        }
        else if (event.type === "tool_use") { if (event.table) renderTable(event.table); }
        else if (event.type === "done") { line.classList.remove("pending"); line.textContent = event.text || line.textContent; }
        else if (event.type === "error") { line.className = "error"; line.textContent = event.message; }
      }
    }
    transcriptEl.scrollTop = transcriptEl.scrollHeight;
  }
}

chatForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const message = chatInput.value.trim();
  if (!message) return;
  if (!token()) { askForToken("Enter the access token first."); return; }
  chatInput.value = "";
  $("chat-send").disabled = true;
  try { await sendChat(message); } finally { $("chat-send").disabled = false; chatInput.focus(); }
});

// ---- token -------------------------------------------------------------------

// Right after Annie starts, the language model reads her instructions for the first time
// (tens of seconds on a small computer). Talk and Send wait for it: a first question now
// would be read beside it and answered later than if it waited.
async function whenWarm(response) {
  let status = await response.json();
  if (status.warming) {
    setStatus("Getting ready: Annie is reading her instructions (the first time after a start takes a while)…",
              "busy");
    talkButton.disabled = true;
    $("chat-send").disabled = true;
    try {
      while (status.warming) {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        status = await (await api("/api/status")).json();
      }
    } finally {
      talkButton.disabled = false;
      $("chat-send").disabled = false;
    }
  }
  setStatus("Ready. Press Talk or type a message.", "ok");
}

setUpToken("/api/status", async (response) => {
  const restored = restoreChat();
  await whenWarm(response);
  warmUp();
  return restored;
}, "Enter the access token to start.");
