// The edgetts console: plain JavaScript, served by the daemon (no framework, nothing fetched elsewhere).
// Every change is sent with the session's CSRF token; the live parts follow /api/events (SSE).
"use strict";

const $ = (id) => document.getElementById(id);
let csrf = null;
let events = null;
const said = new Map(); // id -> what it says, from the queue and the form, for "now playing"

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}

async function api(method, path, body) {
  const headers = {};
  if (method !== "GET") headers["X-CSRF-Token"] = csrf || "";
  let data;
  if (body !== undefined) { headers["Content-Type"] = "application/json"; data = JSON.stringify(body); }
  const res = await fetch(path, { method, headers, body: data, credentials: "same-origin" });
  if (res.status === 401) { showLogin(); throw new Error("log in first"); }
  return res;
}

async function json(method, path, body) {
  const res = await api(method, path, body);
  let out = {};
  try { out = await res.json(); } catch (e) { out = {}; }
  if (!res.ok) throw new Error(out.error || res.statusText);
  return out;
}

function say(node, text, good) {
  node.textContent = text;
  node.className = "result " + (good ? "good" : "bad");
}

// ------------------------------------------------------------------ session
async function start() {
  const res = await fetch("/api/session", { credentials: "same-origin" });
  const s = await res.json();
  if (!s.authenticated || !s.csrf) { showLogin(); return; }
  csrf = s.csrf;
  $("logout-button").hidden = !s.auth_required;
  $("login").hidden = true;
  $("console").hidden = false;
  await Promise.all([loadStatus(), loadQueue(), loadClips(), loadVoices(), loadCache(), loadConfig(), loadRecent()]);
  follow();
}

function showLogin() {
  if (events) { events.close(); events = null; }
  $("console").hidden = true;
  $("login").hidden = false;
  $("password").focus();
}

$("login-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const res = await fetch("/api/login", {
    method: "POST", headers: { "Content-Type": "application/json" }, credentials: "same-origin",
    body: JSON.stringify({ password: $("password").value }),
  });
  const out = await res.json().catch(() => ({}));
  if (!res.ok) { say($("login-result"), out.error || res.statusText, false); return; }
  $("password").value = "";
  say($("login-result"), "", true);
  start();
});

$("logout-button").addEventListener("click", async () => {
  await api("POST", "/api/logout").catch(() => {});
  csrf = null;
  showLogin();
});

// ------------------------------------------------------------------ status
function showStatus(s) {
  $("status-state").textContent = s.state;
  $("status-version").textContent = s.version;
  $("status-voice").textContent = s.voice;
  $("status-depth").textContent = s.queue_depth;
  $("status-underruns").textContent = `${s.underruns} (${s.gap_ms} ms dry)`;
  $("status-rtf").textContent = s.rtf_1min === null || s.rtf_1min === undefined ? "-" : s.rtf_1min.toFixed(3);
  const next = s.schedule; // the timetable's next occurrence here (docs/schedule.md)
  $("status-schedule").textContent = next
    ? `${next.local}: ${next.id} (${next.to}) ${next.text !== undefined ? next.text : "clip " + next.clip}`
    : "-";
  const degraded = s.degraded || [];
  const badge = $("state");
  badge.textContent = degraded.length ? `${s.state}, degraded` : s.state;
  badge.className = "badge " + (s.state !== "online" ? "offline" : degraded.length ? "degraded" : "online");
  const list = $("degraded");
  list.replaceChildren();
  if (!degraded.length) list.append(el("li", "nothing: everything works as configured", "ok"));
  for (const d of degraded) {
    const li = el("li");
    li.dataset.what = d.what;
    li.append(el("strong", d.what + ":"), el("span", d.reason, "grow"));
    list.append(li);
  }
  showPlaying(s.current);
}

function showPlaying(current) {
  const text = said.get(current) || "";
  const what = text ? `${current}: ${text.length > 120 ? text.slice(0, 120) + "…" : text}` : current;
  $("now-playing").textContent = what || "nothing";
  $("now-playing").dataset.id = current || "";
  $("stop-button").disabled = !current;
}

async function loadStatus() {
  try { showStatus(await json("GET", "/api/status")); } catch (e) { $("status-state").textContent = e.message; }
}

async function loadQueue() {
  const q = await json("GET", "/api/queue");
  const list = $("queue");
  list.replaceChildren();
  if (!q.queue.length) list.append(el("li", q.queue_depth ? `${q.queue_depth} waiting` : "empty", "empty"));
  for (const e of q.queue) {
    const li = el("li");
    li.dataset.id = e.id;
    const what = e.text !== undefined && e.text !== null ? e.text : `clip ${e.clip}`;
    said.set(e.id, what);
    li.append(el("span", e.priority, "ev"), el("span", `${e.id}: ${what}`, "grow"));
    const cancel = el("button", "Cancel", "cancel");
    cancel.type = "button";
    cancel.dataset.id = e.id;
    cancel.addEventListener("click", () => cancelOne(e.id));
    li.append(cancel);
    list.append(li);
  }
  showPlaying(q.current);
  while (said.size > 500) said.delete(said.keys().next().value);
}

async function cancelOne(id) {
  try { await json("DELETE", "/api/announcements/" + encodeURIComponent(id)); }
  catch (e) { say($("announce-result"), `cancel ${id}: ${e.message}`, false); }
  loadQueue();
}

$("stop-button").addEventListener("click", async () => {
  try { await json("POST", "/api/stop", {}); } catch (e) { say($("announce-result"), e.message, false); }
});

// ------------------------------------------------------------------ events
function logEvent(e) {
  const li = el("li");
  li.dataset.event = e.event;
  li.dataset.id = e.id;
  const when = new Date(e.ts * 1000);
  li.append(el("time", when.toLocaleTimeString()), el("span", e.event, "ev ev-" + e.event),
            el("span", e.id + (e.reason ? ` (${e.reason})` : ""), "grow"));
  const log = $("log");
  log.prepend(li);
  while (log.children.length > 200) log.lastChild.remove();
}

async function loadRecent() {
  const r = await json("GET", "/api/events/recent");
  $("log").replaceChildren();
  for (const e of r.events) logEvent(e);
}

function follow() {
  if (events) events.close();
  events = new EventSource("/api/events");
  events.addEventListener("open", () => { $("log-state").textContent = "(live)"; });
  events.addEventListener("error", () => { $("log-state").textContent = "(reconnecting)"; });
  events.addEventListener("status", (m) => showStatus(JSON.parse(m.data)));
  events.addEventListener("event", (m) => {
    logEvent(JSON.parse(m.data));
    loadQueue().catch(() => {});
  });
}

// ------------------------------------------------------------------ announce
function kind() { return $("kind-clip").checked ? "clip" : "text"; }

for (const id of ["kind-text", "kind-clip"]) {
  $(id).addEventListener("change", () => {
    $("text-row").hidden = kind() !== "text";
    $("clip-row").hidden = kind() !== "clip";
    $("preview-button").disabled = false;
  });
}
$("volume").addEventListener("input", () => { $("volume-out").textContent = Number($("volume").value).toFixed(2); });

function announcement() {
  const a = { priority: $("priority").value, volume: Number($("volume").value), repeat: Number($("repeat").value) };
  if (kind() === "text") a.text = $("text").value; else a.clip = $("clip").value;
  if ($("chime").value) a.chime = $("chime").value;
  if ($("zone").value !== "device") a.zone = $("zone").value;
  return a;
}

$("announce-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  try {
    const sent = announcement();
    const out = await json("POST", "/api/announce", sent);
    said.set(out.id, sent.text !== undefined ? sent.text : `clip ${sent.clip}`);
    say($("announce-result"), `queued as ${out.id}` + (out.topic ? ` (sent to ${out.topic})` : ""), true);
    $("announce-result").dataset.id = out.id;
  } catch (e) {
    say($("announce-result"), `rejected: ${e.message}`, false);
  }
});

// A streamed WAV says "unknown length" in its header; once it is all here, the real sizes go in.
function fixWav(buffer) {
  const view = new DataView(buffer);
  if (buffer.byteLength >= 44 && view.getUint32(40, true) === 0xFFFFFFFF) {
    view.setUint32(4, buffer.byteLength - 8, true);
    view.setUint32(40, buffer.byteLength - 44, true);
  }
  return buffer;
}

$("preview-button").addEventListener("click", async () => {
  const player = $("preview-audio");
  if (kind() === "clip") { play(player, "/api/clips/" + encodeURIComponent($("clip").value)); return; }
  try {
    const res = await api("POST", "/api/tts", { text: $("text").value });
    if (!res.ok) { const out = await res.json().catch(() => ({})); throw new Error(out.error || res.statusText); }
    const blob = new Blob([fixWav(await res.arrayBuffer())], { type: "audio/wav" });
    if (player.dataset.url) URL.revokeObjectURL(player.dataset.url);
    player.dataset.url = URL.createObjectURL(blob);
    play(player, player.dataset.url);
  } catch (e) {
    say($("announce-result"), `preview: ${e.message}`, false);
  }
});

function play(player, src) {
  player.hidden = false;
  player.src = src;
  player.play().catch(() => {}); // a browser may refuse to start sound by itself: the controls remain
}

// ------------------------------------------------------------------ library
async function loadClips() {
  const c = await json("GET", "/api/clips");
  const list = $("clips");
  list.replaceChildren();
  for (const sel of [$("clip"), $("chime")]) {
    while (sel.options.length > (sel === $("chime") ? 1 : 0)) sel.remove(sel.options.length - 1);
  }
  if (!c.clips.length) list.append(el("li", "no clips (clips.dir)", "empty"));
  $("kind-clip").disabled = !c.clips.length;
  for (const clip of c.clips) {
    const li = el("li");
    li.dataset.name = clip.name;
    li.append(el("span", `${clip.name} (${clip.duration_s.toFixed(1)} s)`, "grow"));
    const button = el("button", "Preview", "preview");
    button.type = "button";
    button.dataset.name = clip.name;
    button.addEventListener("click", () => play($("clip-audio"), "/api/clips/" + encodeURIComponent(clip.name)));
    li.append(button);
    list.append(li);
    $("clip").append(new Option(clip.name, clip.name));
    $("chime").append(new Option(clip.name, clip.name));
  }
}

async function loadVoices() {
  const v = await json("GET", "/api/voices");
  const list = $("voices");
  list.replaceChildren();
  for (const voice of v.voices) {
    const state = voice.loaded ? `${voice.sample_rate} Hz${voice.streaming ? ", streaming" : ""}` : `not loaded: ${voice.error}`;
    const li = el("li");
    li.append(el("span", voice.name + (voice.default ? " (default)" : ""), "ev"), el("span", state, "grow"));
    list.append(li);
  }
}

async function loadCache() {
  const c = await json("GET", "/api/cache");
  $("cache").textContent = !c.enabled ? "off (cache.dir / cache.max_mb)" :
    `${c.entries} phrases, ${(c.bytes / 1e6).toFixed(1)} of ${(c.max_bytes / 1e6).toFixed(0)} MB; ` +
    `${c.hits} hits, ${c.misses} misses since start`;
}

async function loadConfig() {
  const c = await json("GET", "/api/config");
  $("device").textContent = c.device.id;
  const zone = $("zone");
  while (zone.options.length > 2) zone.remove(2);
  for (const g of c.device.groups) zone.append(new Option(`group ${g}`, `group:${g}`));
  $("repeat").max = c.queue.max_repeat;
  $("text").maxLength = c.queue.max_text_chars;
}

start().catch((e) => { $("state").textContent = e.message; });
