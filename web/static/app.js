// matchgate demo client: guest sign-in, queue list, one WebSocket with
// jittered reconnects, join/cancel/accept/decline, and the frames as they
// arrive. Plain browser JavaScript, no build step, nothing loaded from
// elsewhere. Server data is only ever inserted as text.
'use strict';

const $ = (id) => document.getElementById(id);

const RECONNECT_BASE_MS = 500;
const RECONNECT_CAP_MS = 15000;
const HEARTBEAT_MS = 10000;
const LOG_MAX = 80;

const state = {
  token: sessionStorage.getItem('mg.token'),
  userId: sessionStorage.getItem('mg.userId'),
  ws: null,
  wantOpen: false,
  attempt: 0,
  reconnectTimer: 0,
  seq: 0,
  queues: [],
  tickets: new Map(), // id → ticket, highest version kept
  matches: new Map(), // id → match, highest version kept
};

// ---- HTTP -------------------------------------------------------------

async function api(method, path, body) {
  const headers = { 'Content-Type': 'application/json' };
  if (state.token) headers.Authorization = 'Bearer ' + state.token;
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
  if (!res.ok) {
    const err = new Error((data && data.error && data.error.message) || res.statusText);
    err.code = data && data.error && data.error.code;
    err.status = res.status;
    throw err;
  }
  return data;
}

// ---- sign-in ----------------------------------------------------------

async function signIn(ev) {
  ev.preventDefault();
  showError('');
  try {
    const name = $('name').value.trim();
    const skill = Number($('skill').value);
    const res = await api('POST', '/v1/auth/guest', { name, skill });
    state.token = res.token;
    state.userId = res.userId;
    sessionStorage.setItem('mg.token', res.token);
    sessionStorage.setItem('mg.userId', res.userId);
    start();
  } catch (e) {
    showError(e.status === 404 ? 'Guest sign-in is disabled on this server.' : e.message);
  }
}

function signOut(message) {
  state.wantOpen = false;
  clearTimeout(state.reconnectTimer);
  if (state.ws) state.ws.close(1000, 'sign out');
  state.ws = null;
  state.token = state.userId = null;
  sessionStorage.removeItem('mg.token');
  sessionStorage.removeItem('mg.userId');
  state.tickets.clear();
  state.matches.clear();
  $('play').hidden = true;
  $('signin').hidden = false;
  setConn('off', 'offline');
  showError(typeof message === 'string' ? message : '');
  render();
}

// ---- queues -----------------------------------------------------------

async function loadQueues() {
  try {
    const res = await api('GET', '/v1/queues');
    state.queues = res.queues || [];
  } catch (e) {
    showError('Could not load queues: ' + e.message);
    return;
  }
  const sel = $('queue');
  const previous = sel.value;
  sel.replaceChildren(...state.queues.map((q) => {
    const waiting = Object.values(q.depth || {}).reduce((a, b) => a + b, 0);
    return new Option(`${q.name} (${q.kind}, ${q.players}p, ${waiting} waiting)`, q.name);
  }));
  if (state.queues.some((q) => q.name === previous)) sel.value = previous;
  fillRegions();
}

function fillRegions() {
  const q = state.queues.find((x) => x.name === $('queue').value);
  const regions = (q && q.regions) || [];
  $('region').replaceChildren(...regions.map((r) => new Option(`${r} (${(q.depth || {})[r] || 0})`, r)));
}

// ---- WebSocket --------------------------------------------------------

function connect() {
  clearTimeout(state.reconnectTimer);
  if (!state.token) return;
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const ws = new WebSocket(`${proto}//${location.host}/v1/ws?token=${encodeURIComponent(state.token)}`);
  state.ws = ws;
  setConn('wait', 'connecting…');

  ws.onopen = () => {
    state.attempt = 0;
    setConn('on', 'connected');
  };
  ws.onmessage = (ev) => {
    let f;
    try { f = JSON.parse(ev.data); } catch { return; }
    handleFrame(f);
  };
  ws.onclose = (ev) => {
    if (state.ws !== ws) return;
    state.ws = null;
    logLine('close', `${ev.code} ${ev.reason || ''}`, 'err');
    render();
    // 4401 (and a refused upgrade, which a browser reports as 1006): stop
    // when the token has expired instead of retrying forever.
    if (ev.code === 4401 || tokenExpired()) {
      signOut('Your session expired: sign in again.');
      return;
    }
    if (!state.wantOpen) return;
    // Full jitter: a whole fleet of clients reconnecting after a node
    // restart spreads out instead of arriving at once.
    const delay = Math.random() * Math.min(RECONNECT_CAP_MS, RECONNECT_BASE_MS * 2 ** state.attempt);
    state.attempt = Math.min(state.attempt + 1, 10);
    setConn('wait', `reconnecting in ${(delay / 1000).toFixed(1)}s`);
    state.reconnectTimer = setTimeout(connect, delay);
  };
}

// tokenExpired reads the token's exp claim (no verification needed: the
// server verifies; this only avoids reconnecting with a dead token).
function tokenExpired() {
  try {
    const b64 = state.token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    const claims = JSON.parse(atob(b64));
    return typeof claims.exp === 'number' && claims.exp * 1000 <= Date.now();
  } catch {
    return true;
  }
}

function send(type, fields) {
  if (!state.ws || state.ws.readyState !== WebSocket.OPEN) {
    showError('Not connected yet.');
    return;
  }
  const msg = { type, id: String(++state.seq), ...fields };
  state.ws.send(JSON.stringify(msg));
  logLine(type, summary(msg), 'out');
}

// ---- frames -----------------------------------------------------------

function keepNewest(map, obj) {
  if (!obj || !obj.id) return;
  const old = map.get(obj.id);
  if (!old || (obj.version || 0) >= (old.version || 0)) map.set(obj.id, obj);
}

function handleFrame(f) {
  logLine(f.type, summary(f), f.type === 'error' ? 'err' : '');
  switch (f.type) {
    case 'hello':
    case 'status':
      (f.tickets || []).forEach((t) => keepNewest(state.tickets, t));
      (f.matches || []).forEach((m) => keepNewest(state.matches, m));
      break;
    case 'joined':
    case 'cancelled':
    case 'ticket.update':
      keepNewest(state.tickets, f.ticket);
      showError('');
      break;
    case 'match.found':
    case 'match.ready':
    case 'match.dissolved':
    case 'match.update':
      keepNewest(state.matches, f.match);
      break;
    case 'error':
      showError(`${f.error.code}: ${f.error.message}`);
      if (f.error.ticketId) send('status', {});
      break;
  }
  render();
}

function summary(f) {
  const parts = [];
  if (f.re) parts.push('re=' + f.re);
  if (f.ticket) parts.push(`ticket ${short(f.ticket.id)} ${f.ticket.status}`);
  if (f.match) parts.push(`match ${short(f.match.id)} ${f.match.state} [${(f.match.players || []).map((p) => p.userId).join(', ')}]`);
  if (f.tickets) parts.push(`${f.tickets.length} ticket(s)`);
  if (f.matches) parts.push(`${f.matches.length} match(es)`);
  if (f.error) parts.push(`${f.error.code} ${f.error.message}`);
  if (f.queue) parts.push(`${f.queue}/${f.region || ''}`);
  if (f.ticketId) parts.push('ticket ' + short(f.ticketId));
  if (f.matchId) parts.push('match ' + short(f.matchId));
  if (f.node) parts.push('node ' + f.node);
  return parts.join(' · ');
}

function short(id) {
  return id ? String(id).slice(0, 8) : '';
}

// ---- rendering --------------------------------------------------------

function currentTicket() {
  let best = null;
  for (const t of state.tickets.values()) {
    if (t.status === 'WAITING') return t;
    if (!best || (t.updatedAt || t.enqueuedAt || '') > (best.updatedAt || best.enqueuedAt || '')) best = t;
  }
  return best;
}

function fillKV(dl, pairs) {
  const nodes = [];
  for (const [k, v] of pairs) {
    if (v === null || v === undefined || v === '') continue;
    const dt = document.createElement('dt');
    dt.textContent = k;
    const dd = document.createElement('dd');
    dd.textContent = String(v);
    nodes.push(dt, dd);
  }
  if (!nodes.length) {
    const dt = document.createElement('dt');
    dt.textContent = 'none';
    nodes.push(dt);
  }
  dl.replaceChildren(...nodes);
}

function render() {
  const t = currentTicket();
  fillKV($('ticket'), t ? [
    ['id', t.id], ['status', t.status], ['queue', `${t.queue} / ${t.region}`],
    ['skill', t.estimated ? `${t.skill} (estimated)` : t.skill],
    ['enqueued', t.enqueuedAt], ['deadline', t.deadline],
    ['reason', t.cancelReason], ['match', t.matchId], ['version', t.version],
  ] : []);
  $('cancel').disabled = !(t && t.status === 'WAITING' && state.ws);
  $('join').disabled = !state.ws || !!(t && t.status === 'WAITING');

  const m = t && t.matchId ? state.matches.get(t.matchId) : null;
  fillKV($('match'), m ? [
    ['id', m.id], ['state', m.state], ['formed by', m.formedBy], ['spread', m.spread],
    ['bots', m.bots || null], ['accept by', m.acceptBy],
    ['server', m.server ? `${m.server.address} (${m.server.session})` : null],
  ] : []);
  $('players').replaceChildren(...((m && m.players) || []).map((p) => {
    const li = document.createElement('li');
    li.textContent = `${p.userId} — skill ${p.skill}`;
    if (p.userId === state.userId) li.className = 'me';
    return li;
  }));
  $('accept-row').hidden = !(m && m.state === 'PENDING_ACCEPT');
}

function logLine(type, text, cls) {
  const li = document.createElement('li');
  if (cls) li.className = cls;
  const time = document.createElement('span');
  time.className = 't';
  time.textContent = new Date().toLocaleTimeString() + ' ';
  const ty = document.createElement('span');
  ty.className = 'ty';
  ty.textContent = (cls === 'out' ? '→ ' : '← ') + type;
  li.append(time, ty, ' ' + text);
  const log = $('log');
  log.prepend(li);
  while (log.children.length > LOG_MAX) log.lastChild.remove();
}

function setConn(cls, text) {
  const el = $('conn');
  el.className = 'pill ' + cls;
  el.textContent = text;
}

function showError(text) {
  $('error').textContent = text;
}

// ---- heartbeats ---------------------------------------------------------

// Waiting tickets are kept alive over REST; the socket itself carries no
// heartbeat command.
setInterval(() => {
  if (!state.token) return;
  for (const t of state.tickets.values()) {
    if (t.status === 'WAITING') api('PUT', `/v1/tickets/${encodeURIComponent(t.id)}/heartbeat`).catch(() => {});
  }
}, HEARTBEAT_MS);

// ---- wiring -------------------------------------------------------------

function start() {
  $('signin').hidden = true;
  $('play').hidden = false;
  $('who').textContent = state.userId;
  state.wantOpen = true;
  loadQueues();
  connect();
}

$('signin-form').addEventListener('submit', signIn);
$('signout').addEventListener('click', () => signOut());
$('queue').addEventListener('change', fillRegions);
$('refresh').addEventListener('click', loadQueues);
$('join-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  showError('');
  send('join', { queue: $('queue').value, region: $('region').value });
});
$('cancel').addEventListener('click', () => {
  const t = currentTicket();
  if (t) send('cancel', { ticketId: t.id });
});
$('accept').addEventListener('click', () => {
  const t = currentTicket();
  if (t && t.matchId) send('accept', { matchId: t.matchId });
});
$('decline').addEventListener('click', () => {
  const t = currentTicket();
  if (t && t.matchId) send('decline', { matchId: t.matchId });
});

if (state.token) start();
render();
