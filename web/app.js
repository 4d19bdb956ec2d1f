// The matchgate demo page. It talks to the server only through
// matchgate.js (the same client a game would use), inserts server data only
// as text, and loads nothing from elsewhere.

import { MatchgateClient, MatchgateError } from './matchgate.js';

const $ = (id) => document.getElementById(id);
const ORIGIN = location.origin;
const LOBBY_EVERY_MS = 3000;
const EXPLAIN_EVERY_MS = 5000;
// A requester in a provider queue is told why no provider takes it yet:
// that changes as providers come and go, so it is asked for more often.
const PROVIDER_EXPLAIN_EVERY_MS = 2000;
const PROVIDER_ENDED_SHOWN = 4;
const LOG_MAX = 100;
const SIM_MAX = 40;
const SIM_LINGER_MS = 8000;
// The lobby's "trending now": the top of the trending board's hour, pushed
// over the visitor's socket. A server without the board shows nothing.
const TRENDING = { board: 'trending', window: 'hour', limit: 5 };
const SIM_NAMES = ['Ada', 'Alan', 'Grace', 'Linus', 'Barbara', 'Edsger', 'Margaret', 'Ken', 'Dennis', 'Radia',
  'Donald', 'Frances', 'John', 'Katherine', 'Niklaus', 'Tony', 'Leslie', 'Shafi', 'Whitfield', 'Hedy'];

const session = {
  get(k) { return sessionStorage.getItem('mg.' + k); },
  set(k, v) { if (v === null || v === undefined) sessionStorage.removeItem('mg.' + k); else sessionStorage.setItem('mg.' + k, String(v)); },
};

const view = {
  /** @type {MatchgateClient|null} the visitor's client */
  me: null,
  userId: session.get('userId'),
  name: session.get('name') || '',
  skill: Number(session.get('skill')) || 1500,
  queues: /** @type {any[]} */ ([]),
  queue: session.get('queue') || '',
  region: session.get('region') || '',
  lobbyAt: 0,
  lobbyError: '',
  explain: new Map(),       // ticketId → explain object from GET /v1/tickets/{id}
  names: new Map(),         // userId → display name, for players this browser knows
  accepted: new Set(),      // match ids this page accepted
  asked: new Set(),         // ticket ids whose match was fetched over REST
  reconnectAt: 0,           // when the next reconnect attempt starts
  conn: 'off',
  busy: false,
  sims: /** @type {Sim[]} */ ([]),
  logCount: 0,
  adm: {
    followed: loadFollowed(), // queue → {rank0}: the places this tab follows, kept across a reload
    heard: new Map(),         // queue → when its place was last heard (ms): ETAs count from then
    ended: new Map(),         // queue → why the followed place ended, shown until dismissed
    leaving: new Set(),       // queues whose place this tab is giving up
    busy: new Set(),          // queues being entered or left
    asked: new Map(),         // queue → the token it was asked about once its life ran out here
    nodes: new Map(),         // queue → its rendered place
    error: '',
  },
  trending: { missing: false, asking: false },
  tab: session.get('tab') === 'provider' ? 'provider' : 'play',
  // The provider side: a guest with the provider role and its own client,
  // apart from the player's (a page may be both).
  prov: {
    /** @type {MatchgateClient|null} */
    client: null,
    userId: session.get('puserId'),
    queue: session.get('pqueue') || '',
    want: session.get('pwant') === '1', // online was asked for: resumed after a reconnect
    busy: false,
    error: '',
    nodes: new Map(),         // assignment id → its rendered item
    answering: new Set(),     // assignment ids being accepted, declined or ended
    reconnectAt: 0,
  },
};

const lobbyClient = new MatchgateClient({ baseUrl: ORIGIN });

// ---- sign-in ---------------------------------------------------------------

async function signIn(ev) {
  ev.preventDefault();
  showError('');
  const name = $('name').value.trim();
  const skill = Number($('skill').value);
  $('signin-btn').disabled = true;
  try {
    const res = await MatchgateClient.guest(ORIGIN, { name, skill });
    // The server cleans the name (what others will see): show that one.
    const shown = typeof res.name === 'string' ? res.name : '';
    session.set('token', res.token);
    session.set('userId', res.userId);
    session.set('name', shown);
    session.set('skill', skill);
    Object.assign(view, { userId: res.userId, name: shown, skill });
    start(res.token);
  } catch (err) {
    showError(err.status === 404 ? 'Guest sign-in is disabled on this server.' : describe(err), true);
  } finally {
    $('signin-btn').disabled = false;
  }
}

function signOut(message) {
  if (view.me) view.me.close(1000, 'sign out');
  view.me = null;
  for (const k of ['token', 'userId', 'name', 'skill']) session.set(k, null);
  view.userId = null;
  view.explain.clear();
  session.set('adm', null);
  Object.assign(view.adm, { followed: {}, error: '' });
  for (const k of ['heard', 'ended', 'leaving', 'busy', 'asked']) view.adm[k].clear();
  setConn('off');
  view.trending.asking = false;
  renderTrending();
  $('play').hidden = true;
  $('match-card').hidden = true;
  $('signin').hidden = false;
  $('me').hidden = true;
  showError(typeof message === 'string' ? message : '', true);
  render();
  renderAdmission();
  updateEnterButtons();
}

function start(token) {
  $('signin').hidden = true;
  $('play').hidden = false;
  $('me').hidden = view.tab === 'provider';
  const display = view.name || view.userId;
  $('me-name').textContent = display;
  setAvatar($('me-avatar'), view.userId, display);
  view.names.set(view.userId, view.name || 'You');

  const me = new MatchgateClient({ baseUrl: ORIGIN });
  view.me = me;
  me.on('state', (s) => {
    if (me !== view.me) return;
    view.reconnectAt = s.state === 'reconnecting' && s.delayMs !== undefined ? Date.now() + s.delayMs : view.reconnectAt;
    setConn(s.state, s);
    if (s.state === 'closed' && (s.code === 4401 || s.code === 4403)) {
      signOut(s.code === 4401 ? 'Your session expired: sign in again.' : 'This account may not play right now.');
    }
    if (s.state === 'open') {
      resumeAdmissions(me);
      watchTrending(me);
    }
    render();
  });
  me.on('admission', ({ queue, position, at }) => {
    if (me !== view.me) return;
    onAdmission(queue, position, at);
  });
  me.on('message', (f) => {
    logFrame('in', f);
    if (f.type === 'hello' || f.type === 'status') refreshExplain();
    render();
  });
  me.on('ticket', () => {
    refreshLobbySoon(); // my ticket moved: so did a depth
    render();
  });
  me.on('match', () => render());
  me.on('ranking', (v) => {
    if (me === view.me && v.ranking === TRENDING.board && v.window === TRENDING.window) renderTrending();
  });
  me.connect('/v1/ws', token).catch(() => { /* reported through the state event */ });
  render();
  updateEnterButtons();
}

// ---- queue picker and lobby ------------------------------------------------

async function refreshLobby() {
  try {
    view.queues = await lobbyClient.queues();
    view.lobbyAt = Date.now();
    view.lobbyError = '';
  } catch (err) {
    view.lobbyError = describe(err);
  }
  const matched = matchQueues();
  if (!matched.some((q) => q.name === view.queue) && matched.length) selectQueue(matched[0].name);
  renderQueues();
  renderLobby();
  renderAdmission();
  renderProviderQueues();
}

// watchTrending subscribes the visitor's socket to the trending board's
// hour, unless it is subscribed (the client makes it again after a
// reconnect) or the server has no such board.
function watchTrending(me) {
  const t = view.trending;
  if (t.missing || t.asking || me.ranking(TRENDING.board, TRENDING.window)) return;
  t.asking = true;
  me.subscribeRanking(TRENDING.board, TRENDING.window, { limit: TRENDING.limit }).catch((err) => {
    // NOT_FOUND: no trending board here, and none to come until a reload.
    // Anything else is asked again when the socket next opens.
    if (err instanceof MatchgateError && err.code === 'NOT_FOUND') t.missing = true;
  }).finally(() => {
    if (me !== view.me) return;
    t.asking = false;
    renderTrending();
  });
}

// renderTrending shows the trending board's top items and scores, or
// hides the panel while there is none to show.
function renderTrending() {
  const me = view.me;
  const v = me && !view.trending.missing ? me.ranking(TRENDING.board, TRENDING.window) : null;
  $('trending').hidden = !v;
  if (!v) return;
  // An hour's period is spelled 2026-12-02T14: its hour, in UTC.
  $('trending-period').textContent = /T\d\d$/.test(v.period) ? `since ${v.period.slice(-2)}:00 UTC` : v.period;
  const items = v.items.slice(0, TRENDING.limit).map((it) => {
    const li = el('li');
    li.dataset.item = it.item;
    li.append(el('span', 't-item', it.item), el('span', 't-score', it.score === null ? '—' : fmtNumber(it.score)));
    return li;
  });
  if (!items.length) items.push(el('li', 'none', 'Nothing yet this hour.'));
  $('trending-list').replaceChildren(...items);
}

// matchQueues are the queues a player joins to be matched; admission
// queues (waiting rooms) are entered from the lobby instead.
function matchQueues() {
  return view.queues.filter((q) => !isAdmission(q));
}

function isAdmission(q) {
  return !!q && q.kind === 'admission';
}

function selectQueue(name, region) {
  const q = view.queues.find((x) => x.name === name);
  if (!q || isAdmission(q)) return;
  view.queue = name;
  const regions = q.regions || [];
  view.region = region && regions.includes(region) ? region
    : regions.includes(view.region) ? view.region : (regions[0] || '');
  session.set('queue', view.queue);
  session.set('region', view.region);
  renderQueues();
  renderLobby();
  render();
}

function isProviderQueue(q) {
  return !!q && q.kind === 'provider';
}

function queueNamed(name) {
  return view.queues.find((x) => x.name === name) || null;
}

function queueBlurb(q) {
  if (isAdmission(q)) return admissionRateText(q);
  if (isProviderQueue(q)) return '1:1 with a provider';
  if (q.kind === 'room') return `Rooms of ${q.players}`;
  return q.players === 2 ? '1 vs 1 · by skill' : `${q.players} players · by skill`;
}

// admissionRateText is an admission queue's configured rate.
function admissionRateText(q) {
  return Number(q.rate) > 0 ? `Admits ${fmtNumber(q.rate)} a second` : 'Admits at a set rate';
}

// measuredRateText is the rate measured from the queue's admissions
// (measuredRate {mean, measured}), which its ETAs are computed from; ''
// until there are admissions to measure.
function measuredRateText(q) {
  const m = q.measuredRate;
  return m && m.measured && Number.isFinite(Number(m.mean)) ? `${fmtNumber(m.mean)}/s measured` : '';
}

function totalDepth(q) {
  if (isAdmission(q) && Number.isFinite(Number(q.waiting))) return Number(q.waiting);
  return Object.values(q.depth || {}).reduce((a, b) => a + (Number(b) || 0), 0);
}

function renderQueues() {
  const box = $('queues');
  const locked = !!waitingTicket();
  const nodes = matchQueues().map((q) => {
    const label = document.createElement('label');
    label.className = 'queue-option' + (q.name === view.queue ? ' selected' : '');
    label.dataset.queue = q.name;
    const input = document.createElement('input');
    input.type = 'radio';
    input.name = 'queue';
    input.value = q.name;
    input.checked = q.name === view.queue;
    input.disabled = locked;
    input.addEventListener('change', () => selectQueue(q.name));
    const title = el('span', 'queue-name', q.name);
    const blurb = el('span', 'queue-blurb', queueBlurb(q));
    const n = totalDepth(q);
    const depth = el('span', 'queue-depth' + (n ? ' busy' : ''), n === 1 ? '1 waiting' : `${n} waiting`);
    label.append(input, title, blurb, depth);
    if (isProviderQueue(q)) label.append(providersLine(q, 'queue-depth'));
    if (locked) label.classList.add('locked');
    return label;
  });
  if (!nodes.length) nodes.push(el('p', 'muted', view.lobbyError || 'Loading queues…'));
  box.replaceChildren(...nodes);

  const q = view.queues.find((x) => x.name === view.queue);
  const regions = (q && q.regions) || [];
  const field = $('region-field');
  field.hidden = regions.length < 2 && !(regions.length === 1 && regions[0] !== 'global');
  const sel = $('region');
  sel.disabled = locked;
  sel.replaceChildren(...regions.map((r) => new Option(`${r} (${(q.depth || {})[r] || 0} waiting)`, r)));
  if (view.region) sel.value = view.region;
  const target = q ? (regions.length > 1 || (regions[0] && regions[0] !== 'global') ? `${q.name} · ${view.region}` : q.name) : '';
  $('sim-add').textContent = target ? `Add to ${target}` : 'Add players';
  $('sim-add').disabled = !q;
  $('prefs').hidden = !isProviderQueue(q);
  for (const s of document.querySelectorAll('#prefs select')) s.disabled = locked;
}

// providersLine is a provider queue's providers as GET /v1/queues counts
// them: online with a free slot, and busy (every slot held).
function providersLine(q, cls) {
  const p = q.providers || {};
  const online = Number(p.online) || 0;
  const busy = Number(p.busy) || 0;
  const span = el('span', `${cls} lobby-providers` + (online + busy ? '' : ' none'), `${online} online · ${busy} busy`);
  span.title = 'Providers online with a free slot, and busy ones (every slot held)';
  return span;
}

// queueStats finds the optional lobby statistics a server may report
// (matches per minute, wait percentiles, timeout fraction) without
// depending on their exact field names.
function queueStats(q) {
  const flat = [];
  const walk = (obj, path) => {
    for (const [k, v] of Object.entries(obj || {})) {
      if (['name', 'kind', 'players', 'regions', 'depth'].includes(k) && !path.length) continue;
      const p = [...path, k];
      if (v && typeof v === 'object' && !Array.isArray(v) && p.length < 3) walk(v, p);
      else if (typeof v === 'number' && Number.isFinite(v)) flat.push([p, v]);
    }
  };
  walk(q, []);
  let perMin = null;
  let timeouts = null;
  const pct = new Map();
  for (const [p, v] of flat) {
    const key = p.join('.');
    const last = p[p.length - 1];
    const m = /p(\d{2,3})/i.exec(last);
    if (m && /wait/i.test(key)) {
      const ms = /ms|millis/i.test(key);
      if (!pct.has(m[1])) pct.set(m[1], ms ? v / 1000 : v);
    } else if (/match\w*(per)?\w*min/i.test(key)) {
      if (perMin === null) perMin = v;
    } else if (/timeout/i.test(key) && v >= 0 && v <= 1) {
      if (timeouts === null) timeouts = v;
    }
  }
  const percentiles = [...pct.entries()].sort((a, b) => Number(a[0]) - Number(b[0])).map(([p, s]) => ({ label: 'p' + p, seconds: s }));
  return { perMin, percentiles, timeouts };
}

function renderLobby() {
  const none = { perMin: null, percentiles: [], timeouts: null };
  const stats = view.queues.map((q) => (isAdmission(q) ? none : queueStats(q)));
  const hasRate = stats.some((s) => s.perMin !== null);
  const hasWait = stats.some((s) => s.percentiles.length);
  const head = [el('th', '', 'Queue'), el('th', 'num', 'Waiting')];
  if (hasRate) head.push(el('th', 'num', 'Matches/min'));
  if (hasWait) head.push(el('th', 'num', 'Wait'));
  $('lobby-head').replaceChildren(...head);

  const rows = view.queues.map((q, i) => {
    if (isAdmission(q)) return admissionRow(q, head.length);
    const tr = document.createElement('tr');
    tr.dataset.queue = q.name;
    tr.dataset.kind = q.kind || '';
    if (q.name === view.queue) tr.className = 'selected';
    tr.tabIndex = 0;
    tr.title = 'Select ' + q.name;
    tr.addEventListener('click', () => { if (!waitingTicket()) selectQueue(q.name); });
    tr.addEventListener('keydown', (e) => { if ((e.key === 'Enter' || e.key === ' ') && !waitingTicket()) { e.preventDefault(); selectQueue(q.name); } });

    const name = el('td');
    name.append(el('span', 'lobby-name', q.name), el('span', 'lobby-blurb', queueBlurb(q)));
    if (isProviderQueue(q)) name.append(providersLine(q, 'lobby-blurb'));
    const n = totalDepth(q);
    const waiting = el('td', 'num');
    waiting.append(el('span', 'depth-pill' + (n ? ' busy' : ''), String(n)));
    const regions = Object.entries(q.depth || {});
    if (regions.length > 1 || (regions.length === 1 && regions[0][0] !== 'global')) {
      waiting.append(el('span', 'lobby-regions', regions.map(([r, d]) => `${r} ${d}`).join(' · ')));
    }
    const cells = [name, waiting];
    const s = stats[i];
    if (hasRate) cells.push(el('td', 'num', s.perMin === null ? '—' : fmtNumber(s.perMin)));
    if (hasWait) {
      const td = el('td', 'num small');
      td.textContent = s.percentiles.length ? s.percentiles.slice(0, 3).map((p) => `${p.label} ${fmtSeconds(p.seconds)}`).join(' · ') : '—';
      if (s.timeouts !== null) td.append(el('span', 'lobby-regions', `${Math.round(s.timeouts * 100)}% timed out`));
      cells.push(td);
    }
    tr.append(...cells);
    return tr;
  });
  if (!rows.length) {
    const tr = document.createElement('tr');
    const td = el('td', 'muted', view.lobbyError || 'Loading…');
    td.colSpan = head.length;
    tr.append(td);
    rows.push(tr);
  }
  $('lobby-body').replaceChildren(...rows);
  updateEnterButtons();
  updateLobbyAge();
}

// admissionRow is an admission queue's row of the lobby: its kind, rate,
// waiters and ETA error, and the Enter action. It is not a matchmaking
// choice, so selecting the row does nothing. Its measured rate and ETA
// error stand where the matched queues show their throughput and waits.
function admissionRow(q, columns) {
  const tr = document.createElement('tr');
  tr.dataset.queue = q.name;
  tr.dataset.kind = 'admission';
  tr.className = 'adm-row';
  const name = el('td');
  const title = el('span', 'lobby-name', q.name);
  title.append(' ', el('span', 'kind-tag', 'waiting room'));
  name.append(title, el('span', 'lobby-blurb', queueBlurb(q)));
  const enter = el('button', 'secondary small adm-enter', 'Enter');
  enter.type = 'button';
  enter.dataset.queue = q.name;
  enter.addEventListener('click', () => enterAdmission(q.name));
  const n = totalDepth(q);
  const waiting = el('td', 'num');
  waiting.append(el('span', 'depth-pill' + (n ? ' busy' : ''), String(n)));
  const figures = [];
  const rate = measuredRateText(q);
  if (rate) figures.push(el('span', 'lobby-blurb', rate));
  const err = etaErrorText(q);
  if (err) figures.push(el('span', 'lobby-blurb lobby-eta-error', err));
  const cells = [name, waiting];
  if (columns > 2) {
    const td = el('td', 'num small');
    td.colSpan = columns - 2;
    td.append(...figures);
    cells.push(td);
  } else {
    name.append(...figures);
  }
  name.append(enter);
  tr.append(...cells);
  return tr;
}

function updateLobbyAge() {
  const age = view.lobbyAt ? Math.round((Date.now() - view.lobbyAt) / 1000) : null;
  const live = !view.lobbyError && age !== null && age * 1000 < LOBBY_EVERY_MS + 2000;
  $('lobby-updated').textContent = view.lobbyError ? 'offline' : age === null ? '' : live ? 'live' : `updated ${age}s ago`;
  $('lobby-updated').classList.toggle('live', live);
}

// ---- commands --------------------------------------------------------------

async function join() {
  const me = view.me;
  if (!me || !view.queue || view.busy) return;
  showError('');
  view.busy = true;
  render();
  const attributes = isProviderQueue(queueNamed(view.queue)) ? requesterPrefs() : undefined;
  const fields = { queue: view.queue, region: view.region, attributes };
  logFrame('out', { type: 'join', ...fields });
  try {
    await me.join(view.queue, { region: view.region, attributes });
    refreshLobbySoon();
    if (attributes) refreshExplain();
  } catch (err) {
    if (err instanceof MatchgateError && err.code === 'ALREADY_QUEUED' && err.ticketId) {
      showError('You are already waiting in a queue.');
      me.getTicket(err.ticketId).catch(() => {});
    } else {
      showError(describe(err));
    }
  } finally {
    view.busy = false;
    render();
  }
}

async function cancel() {
  const me = view.me;
  const t = waitingTicket();
  if (!me || !t || view.busy) return;
  showError('');
  view.busy = true;
  render();
  logFrame('out', { type: 'cancel', ticketId: t.id });
  try {
    await me.cancel(t.id);
    refreshLobbySoon();
  } catch (err) {
    if (err instanceof MatchgateError && err.code === 'ALREADY_MATCHED') {
      showError('Too late to leave: your match formed first.');
      me.getTicket(t.id).catch(() => {});
    } else {
      showError(describe(err));
    }
  } finally {
    view.busy = false;
    render();
  }
}

async function answer(kind) {
  const me = view.me;
  const m = currentMatch();
  if (!me || !m) return;
  showError('');
  logFrame('out', { type: kind, matchId: m.id });
  try {
    if (kind === 'accept') {
      await me.accept(m.id);
      view.accepted.add(m.id);
    } else {
      await me.decline(m.id);
    }
  } catch (err) {
    showError(describe(err));
  }
  render();
}

// requesterPrefs are what a requester asks of a provider (join's
// attributes): only what was chosen; "Any" asks nothing.
function requesterPrefs() {
  const out = {};
  for (const [key, id] of [['language', 'pref-language'], ['specialty', 'pref-specialty'], ['sessionType', 'pref-session'], ['minRating', 'pref-rating']]) {
    const v = $(id).value;
    if (v) out[key] = v;
  }
  return Object.keys(out).length ? out : undefined;
}

let lobbySoon = 0;
function refreshLobbySoon() {
  clearTimeout(lobbySoon);
  lobbySoon = setTimeout(refreshLobby, 150);
}

async function refreshExplain() {
  const me = view.me;
  const t = waitingTicket();
  if (!me || !t) return;
  try {
    const v = await me.getTicket(t.id);
    if (v && v.explain && typeof v.explain === 'object') view.explain.set(t.id, v.explain);
  } catch { /* the socket keeps the state current; this is only the extra detail */ }
  render();
}

// ---- admission queues (waiting rooms) -------------------------------------

// The page follows the places this tab entered (view.adm.followed, in
// sessionStorage), so that a reload shows them again even when hello does
// not list them; the place itself is always the server's, as the client
// last heard it (me.admission).

function loadFollowed() {
  try {
    const v = JSON.parse(session.get('adm') || '{}');
    return v && typeof v === 'object' && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

function saveFollowed() {
  const f = view.adm.followed;
  session.set('adm', Object.keys(f).length ? JSON.stringify(f) : null);
}

function livePlace(queue) {
  const p = view.me ? view.me.admission(queue) : null;
  return p && (p.status === 'WAITING' || p.status === 'READY') ? p : null;
}

// resumeAdmissions asks, once the socket is up, for each followed place
// that hello did not tell of.
function resumeAdmissions(me) {
  for (const queue of Object.keys(view.adm.followed)) {
    if (!me.admission(queue)) me.admissionPosition(queue).catch(() => {});
  }
}

function onAdmission(queue, p, at) {
  const a = view.adm;
  a.heard.set(queue, at || Date.now());
  const rec = a.followed[queue];
  if (p.status === 'WAITING' || p.status === 'READY') {
    const rank = p.status === 'WAITING' ? Number(p.rank) || 0 : 0;
    a.followed[queue] = { rank0: Math.max(rank, rec ? Number(rec.rank0) || 0 : rank) };
    a.ended.delete(queue);
  } else {
    if (rec || a.leaving.has(queue)) {
      a.ended.set(queue, a.leaving.has(queue) ? 'left' : a.asked.has(queue) ? 'expired' : 'ended');
    }
    delete a.followed[queue];
    a.leaving.delete(queue);
  }
  saveFollowed();
  renderAdmission();
  updateEnterButtons();
}

async function enterAdmission(queue) {
  const me = view.me;
  const a = view.adm;
  if (!me || a.busy.has(queue) || livePlace(queue)) return;
  // A new place: its progress counts from its own first rank.
  delete a.followed[queue];
  a.ended.delete(queue);
  a.asked.delete(queue);
  a.error = '';
  a.busy.add(queue);
  updateEnterButtons();
  renderAdmission();
  logFrame('out', { type: 'enter', queue });
  try {
    await me.enter(queue);
    refreshLobbySoon();
    // Entered from the lobby, which may be a screen away (a phone).
    $('admission-card').scrollIntoView({ block: 'nearest' });
  } catch (err) {
    a.error = `${queue}: ${describe(err)}`;
  } finally {
    a.busy.delete(queue);
    updateEnterButtons();
    renderAdmission();
  }
}

async function leaveAdmission(queue) {
  const me = view.me;
  const a = view.adm;
  if (!me || a.busy.has(queue)) return;
  a.error = '';
  a.busy.add(queue);
  a.leaving.add(queue);
  renderAdmission();
  logFrame('out', { type: 'leave', queue });
  try {
    await me.leaveAdmission(queue);
    refreshLobbySoon();
  } catch (err) {
    a.leaving.delete(queue);
    if (err instanceof MatchgateError && err.code === 'ALREADY_CLAIMED') {
      a.error = 'Your token is being used right now, so the place cannot be given up.';
    } else if (err instanceof MatchgateError && err.code === 'NOT_FOUND') {
      me.admissionPosition(queue).catch(() => {}); // the place ended already: hear how it stands
    } else {
      a.error = `${queue}: ${describe(err)}`;
    }
  } finally {
    a.busy.delete(queue);
    renderAdmission();
  }
}

function updateEnterButtons() {
  for (const b of document.querySelectorAll('#lobby-body button.adm-enter')) {
    const q = b.dataset.queue;
    const p = livePlace(q);
    const busy = view.adm.busy.has(q);
    b.disabled = !view.me || !!p || busy;
    b.textContent = p ? (p.status === 'READY' ? 'Your turn' : 'In line') : busy ? 'Entering…' : 'Enter';
    b.title = view.me ? '' : 'Sign in first';
  }
}

// progressOf is how far a place has come through the line, 0..1, counted in
// admissions rather than in time: of the rank0 + 1 admissions it waits for
// (everyone who was ahead of it when first seen, and its own), how many
// have happened. Time waited over time predicted would move the bar by the
// ETA's guess, which is wrong by the queue's ETA error and can run
// backwards when the rate drops; the rank is the server's fact. rank0 is
// the most waiters ever seen ahead of this place (kept across a reload), so
// a place first seen mid-line counts from there, and someone ahead leaving
// moves it on too: one fewer to wait for. A rank that grows back (waiters
// returned by a failed admitter) moves the bar back, honestly.
function progressOf(p, rank0) {
  if (p.status === 'READY') return 1;
  const rank = Math.max(0, Number(p.rank) || 0);
  const r0 = Math.max(rank, Number(rank0) || 0);
  return (r0 - rank) / (r0 + 1);
}

// etaErrorText is the queue's ETA error as GET /v1/queues reports it:
// etaError {p50, p90, admissions}, the miss of the admission predicted at
// entry relative to the wait (|admitted − predicted| / wait), over the
// recent admissions. '' when the listing has none.
function etaErrorText(q) {
  const e = q && q.etaError;
  if (!e || typeof e !== 'object') return '';
  const n = Number(e.admissions ?? e.count);
  if (!(n > 0) || !Number.isFinite(Number(e.p50 ?? NaN)) || !Number.isFinite(Number(e.p90 ?? NaN))) {
    return 'ETA error: no admissions measured yet';
  }
  const pct = (v) => `${Math.round(Number(v) * 100)}%`;
  return `ETA error ${pct(e.p50)} median, ${pct(e.p90)} p90 (${n} admitted)`;
}

// etaText is a waiting place's ETA, "about 40 s, 30–60 s", counted down
// from when it was heard: the server's seconds are from then.
function etaText(eta, sinceMs) {
  if (!eta || !Number.isFinite(Number(eta.seconds))) return 'No estimate yet';
  const gone = Math.max(0, sinceMs) / 1000;
  const left = (v) => Math.max(0, Number(v) - gone);
  const s = left(eta.seconds);
  const low = left(eta.low);
  const high = eta.high === null || eta.high === undefined ? null : left(eta.high);
  if (high !== null && high < 1) return 'Any moment now';
  if (high === null) return `About ${fmtWait(s)}, at least ${fmtWait(low)}`;
  // A range that rounds to one value (a steady rate) is not worth saying.
  return fmtWait(low) === fmtWait(high) ? `About ${fmtWait(s)}` : `About ${fmtWait(s)}, ${fmtRange(low, high)}`;
}

function waitUnit(s) {
  return s < 59.5 ? ['s', 1] : s < 3570 ? ['min', 60] : ['h', 3600];
}

function fmtWait(s) {
  const [u, d] = waitUnit(s);
  return `${u === 'h' ? (s / d).toFixed(1) : Math.round(s / d)} ${u}`;
}

function fmtRange(low, high) {
  const [ul, dl] = waitUnit(low);
  const [uh] = waitUnit(high);
  if (ul !== uh || ul === 'h') return `${fmtWait(low)} – ${fmtWait(high)}`;
  return `${Math.round(low / dl)}–${Math.round(high / dl)} ${ul}`;
}

const ENDED = {
  left: ['Left', 'You left the waiting room', 'Your place was given up; enter again from the lobby to take a new one.'],
  expired: ['Expired', 'Your token expired', 'It was not used in time. Enter again from the lobby to wait for a new one.'],
  ended: ['Ended', 'Your place ended', 'The token was used, the place was given up elsewhere, or it was lost while this page was away.'],
};

function renderAdmission() {
  const a = view.adm;
  const me = view.me;
  const queues = new Set(a.ended.keys());
  if (me) for (const [q, p] of me.admissions) if (p.status === 'WAITING' || p.status === 'READY') queues.add(q);
  for (const q of a.busy) queues.add(q);
  const shown = [...queues].sort();
  $('admission-card').hidden = !me || (!shown.length && !a.error);
  $('adm-error').textContent = a.error;
  for (const [q, node] of a.nodes) {
    if (!queues.has(q)) {
      node.root.remove();
      a.nodes.delete(q);
    }
  }
  const box = $('adm-places');
  shown.forEach((q, i) => {
    let node = a.nodes.get(q);
    if (!node) {
      node = placeNode(q);
      a.nodes.set(q, node);
    }
    updatePlace(node, q);
    // A node already in its place is left there, not moved or rebuilt.
    if (box.children[i] !== node.root) box.insertBefore(node.root, box.children[i] || null);
  });
}

// placeNode builds a place's view once; updatePlace fills it in on every
// change and tick, so that its buttons are never replaced under a click.
function placeNode(queue) {
  const root = el('article', 'adm-place');
  root.dataset.queue = queue;
  const head = el('div', 'adm-head');
  const chip = el('span', 'adm-chip');
  head.append(el('span', 'adm-queue', queue), chip);
  const title = el('div', 'adm-title');
  const rank = el('div', 'adm-rank');
  const eta = el('div', 'adm-eta');
  const meter = el('div', 'meter adm-meter');
  meter.setAttribute('role', 'progressbar');
  meter.setAttribute('aria-label', `Progress through the ${queue} line`);
  meter.setAttribute('aria-valuemin', '0');
  meter.setAttribute('aria-valuemax', '100');
  const fill = el('div', 'meter-fill adm-progress');
  meter.append(fill);
  const tokenBox = el('div', 'server adm-token-box');
  const token = el('code', 'adm-token');
  const expiry = el('span', 'server-session adm-expiry');
  tokenBox.append(el('span', 'server-label', 'Entry token'), token, expiry);
  const etaError = el('p', 'muted small adm-eta-error');
  const actions = el('div', 'adm-actions');
  const leave = el('button', 'ghost adm-leave', 'Leave');
  leave.type = 'button';
  leave.addEventListener('click', () => leaveAdmission(queue));
  const dismiss = el('button', 'ghost adm-dismiss', 'Close');
  dismiss.type = 'button';
  dismiss.addEventListener('click', () => {
    view.adm.ended.delete(queue);
    renderAdmission();
  });
  actions.append(leave, dismiss);
  root.append(head, title, rank, eta, meter, tokenBox, etaError, actions);
  return { root, chip, title, rank, eta, meter, fill, tokenBox, token, expiry, etaError, leave, dismiss };
}

function updatePlace(n, queue) {
  const a = view.adm;
  const p = livePlace(queue);
  const now = Date.now();
  let status = p ? p.status : a.ended.has(queue) ? 'ENDED' : 'ENTERING';
  let chip = '';
  let title = '';
  let rank = '';
  let eta = '';
  let progress = null;
  let token = '';
  let expiry = '';
  if (p && p.status === 'WAITING') {
    const r = Math.max(0, Number(p.rank) || 0);
    const total = Math.max(r + 1, Number(p.total) || 0);
    chip = 'In line';
    title = r === 0 ? 'You are next' : `${r} ahead of you`;
    rank = `Number ${r + 1} of ${total} in line`;
    eta = etaText(p.eta, now - (a.heard.get(queue) || now));
    progress = progressOf(p, (a.followed[queue] || {}).rank0);
  } else if (p && p.status === 'READY') {
    const left = Date.parse(p.expiresAt) - now;
    progress = 1;
    token = p.token || '';
    if (!(left <= 0)) {
      chip = 'Your turn';
      title = 'It is your turn';
      rank = 'This one-use token lets you in: hand it to the protected service.';
      expiry = Number.isFinite(left) ? `valid for ${fmtClock(left)}` : '';
    } else {
      status = 'EXPIRED';
      chip = 'Expired';
      title = 'Your token expired';
      expiry = 'expired';
      // Hear the server end it, once: a clock behind the server's would
      // otherwise ask on every tick.
      if (a.asked.get(queue) !== p.token && view.me) {
        a.asked.set(queue, p.token);
        view.me.admissionPosition(queue).catch(() => {});
      }
    }
  } else if (status === 'ENDED') {
    [chip, title, rank] = ENDED[a.ended.get(queue)] || ENDED.ended;
  } else {
    chip = 'Entering';
    title = 'Taking your place…';
  }
  n.root.dataset.status = status;
  n.root.className = 'adm-place ' + status.toLowerCase();
  n.chip.textContent = chip;
  n.title.textContent = title;
  n.rank.textContent = rank;
  n.rank.hidden = !rank;
  n.eta.textContent = eta;
  n.eta.hidden = !eta;
  n.meter.hidden = progress === null;
  if (progress !== null) {
    const pct = Math.round(Math.max(0, Math.min(1, progress)) * 100);
    n.fill.style.width = `${pct}%`;
    n.meter.setAttribute('aria-valuenow', String(pct));
  }
  n.tokenBox.hidden = !token;
  n.token.textContent = token;
  n.expiry.textContent = expiry;
  n.etaError.textContent = etaErrorText(view.queues.find((q) => q.name === queue));
  n.etaError.hidden = !n.etaError.textContent;
  n.leave.hidden = !p || status === 'EXPIRED';
  n.leave.disabled = a.busy.has(queue);
  n.dismiss.hidden = status !== 'ENDED';
}

function positionSummary(p) {
  if (p.status === 'WAITING') return `WAITING ${Number(p.rank) + 1}/${p.total}`;
  if (p.status === 'READY') return `READY token ${short(p.token)}`;
  return p.status;
}

// ---- the provider's side ("I give advice") -----------------------------------

// The provider view signs in a guest of its own with the provider role and
// holds it online over its own socket; the assignments it is offered and
// runs are the client's store, updated by the pushes and the replies.

function providerQueues() {
  return view.queues.filter(isProviderQueue);
}

function renderProviderQueues() {
  const sel = $('p-queue');
  const names = providerQueues().map((q) => q.name);
  const prov = view.prov;
  if (!names.includes(prov.queue) && names.length) prov.queue = names[0];
  const same = sel.options.length === names.length && [...sel.options].every((o, i) => o.value === names[i]);
  if (!same) sel.replaceChildren(...names.map((n) => new Option(n, n)));
  if (prov.queue) sel.value = prov.queue;
  renderProvider();
}

// providerForm reads the form: a capacity and the attributes, lists given
// comma-separated.
function providerForm() {
  const list = (id) => $(id).value.split(',').map((x) => x.trim()).filter(Boolean);
  return {
    capacity: Math.max(0, Math.min(10, Math.round(Number($('p-capacity').value) || 0))),
    attributes: {
      languages: list('p-languages'), specialties: list('p-specialties'), sessionTypes: list('p-sessions'),
      rating: Math.max(0, Math.min(5, Number($('p-rating').value) || 0)),
    },
  };
}

function saveProviderForm() {
  session.set('pform', JSON.stringify({
    capacity: $('p-capacity').value, languages: $('p-languages').value, specialties: $('p-specialties').value,
    sessions: $('p-sessions').value, rating: $('p-rating').value,
  }));
}

function loadProviderForm() {
  try {
    const f = JSON.parse(session.get('pform') || 'null');
    if (!f || typeof f !== 'object') return;
    for (const [id, k] of [['p-capacity', 'capacity'], ['p-languages', 'languages'], ['p-specialties', 'specialties'], ['p-sessions', 'sessions'], ['p-rating', 'rating']]) {
      if (typeof f[k] === 'string') $(id).value = f[k];
    }
  } catch { /* a form from another version: keep the defaults */ }
  $('p-rating-out').textContent = $('p-rating').value;
}

function startProvider(token) {
  const prov = view.prov;
  const c = new MatchgateClient({ baseUrl: ORIGIN });
  prov.client = c;
  c.on('state', (s) => {
    if (c !== prov.client) return;
    prov.reconnectAt = s.state === 'reconnecting' && s.delayMs !== undefined ? Date.now() + s.delayMs : prov.reconnectAt;
    updateConnText();
    if (s.state === 'closed' && (s.code === 4401 || s.code === 4403)) {
      stopProvider(s.code === 4401 ? 'Your provider session expired: go online again.' : 'This account may not give advice right now.');
      return;
    }
    if (s.state === 'open') resumeProvider(c);
    renderProvider();
  });
  c.on('message', (f) => {
    if (c !== prov.client) return;
    logFrame('in', f, 'provider');
    renderProvider();
  });
  c.on('providers', () => renderProvider());
  c.on('assignments', () => renderProvider());
  const hello = c.connect('/v1/ws', token);
  hello.catch(() => { /* reported through the state event */ });
  return hello;
}

// stopProvider forgets the provider guest (its token expired or it is
// refused); the form stays filled in.
function stopProvider(message) {
  const prov = view.prov;
  if (prov.client) prov.client.close(1000, 'provider done');
  prov.client = null;
  prov.want = false;
  prov.userId = null;
  for (const k of ['ptoken', 'puserId', 'pwant']) session.set(k, null);
  prov.error = message || '';
  renderProvider();
}

// resumeProvider puts the provider online again over this socket after a
// reconnect (or a reload) when it was online, even when hello says it still
// is: the socket that held it is gone or going, and its close takes the
// provider offline unless this socket holds it now.
function resumeProvider(c) {
  const prov = view.prov;
  if (!prov.want || !prov.queue) return;
  const { capacity, attributes } = providerForm();
  logFrame('out', { type: 'provider.online', queue: prov.queue }, 'provider');
  c.providerOnline(prov.queue, capacity, attributes).then(refreshLobbySoon, (err) => {
    prov.error = describe(err);
    renderProvider();
  });
}

async function providerGoOnline(ev) {
  ev.preventDefault();
  const prov = view.prov;
  if (prov.busy) return;
  prov.queue = $('p-queue').value || prov.queue;
  if (!prov.queue) {
    prov.error = 'This server has no provider queue.';
    renderProvider();
    return;
  }
  prov.error = '';
  prov.busy = true;
  renderProvider();
  try {
    if (!prov.client) {
      const res = await MatchgateClient.guest(ORIGIN, { role: 'provider' });
      session.set('ptoken', res.token);
      session.set('puserId', res.userId);
      prov.userId = res.userId;
      await startProvider(res.token);
    }
    const { capacity, attributes } = providerForm();
    logFrame('out', { type: 'provider.online', queue: prov.queue, capacity }, 'provider');
    await prov.client.providerOnline(prov.queue, capacity, attributes);
    prov.want = true;
    session.set('pwant', '1');
    session.set('pqueue', prov.queue);
    saveProviderForm();
    refreshLobbySoon();
  } catch (err) {
    prov.error = err instanceof MatchgateError && err.status === 404 ? 'Guest sign-in is disabled on this server.' : describe(err);
  } finally {
    prov.busy = false;
    renderProvider();
  }
}

async function providerCall(label, fn) {
  const prov = view.prov;
  if (!prov.client || prov.busy) return;
  prov.error = '';
  prov.busy = true;
  renderProvider();
  logFrame('out', { type: label, queue: prov.queue }, 'provider');
  try {
    await fn(prov.client);
    refreshLobbySoon();
  } catch (err) {
    prov.error = describe(err);
  } finally {
    prov.busy = false;
    renderProvider();
  }
}

function providerUpdate() {
  const { capacity, attributes } = providerForm();
  providerCall('provider.update', (c) => c.providerUpdate(view.prov.queue, { capacity, attributes }).then(saveProviderForm));
}

function providerGoOffline() {
  const prov = view.prov;
  prov.want = false;
  session.set('pwant', null);
  providerCall('provider.offline', (c) => c.providerOffline(prov.queue));
}

async function answerAssignment(id, kind) {
  const prov = view.prov;
  const c = prov.client;
  if (!c || prov.answering.has(id)) return;
  prov.error = '';
  prov.answering.add(id);
  renderProvider();
  logFrame('out', { type: 'assignment.' + kind, assignmentId: id }, 'provider');
  try {
    if (kind === 'accept') await c.acceptAssignment(id);
    else if (kind === 'decline') await c.declineAssignment(id);
    else await c.endAssignment(id);
    refreshLobbySoon();
  } catch (err) {
    prov.error = describe(err);
  } finally {
    prov.answering.delete(id);
    renderProvider();
  }
}

// assignmentNode builds an assignment's item once; updateAssignment fills
// it in on every change and tick, so its buttons are not replaced under a
// click.
function assignmentNode(id) {
  const root = el('li', 'p-item');
  root.dataset.id = id;
  const row = el('div', 'p-row');
  const av = el('span', 'avatar');
  const who = el('span', 'p-who');
  const name = el('span', 'player-name p-requester');
  const parts = el('span', 'p-parts');
  who.append(name, parts);
  const score = el('span', 'p-score');
  const buttons = el('div', 'p-buttons');
  const accept = el('button', 'primary small p-accept', 'Accept');
  const decline = el('button', 'danger small p-decline', 'Decline');
  const end = el('button', 'ghost small p-end', 'End session');
  for (const [b, kind] of [[accept, 'accept'], [decline, 'decline'], [end, 'end']]) {
    b.type = 'button';
    b.addEventListener('click', () => answerAssignment(id, kind));
  }
  buttons.append(decline, accept, end);
  row.append(av, who, score, buttons);
  const countdown = el('div', 'p-countdown');
  const meter = el('div', 'meter');
  const fill = el('div', 'meter-fill');
  meter.append(fill);
  root.append(row, countdown, meter);
  return { root, av, name, parts, score, accept, decline, end, countdown, meter, fill };
}

const ENDED_TEXT = { DECLINED: 'declined', EXPIRED: 'not answered in time', ENDED: 'ended' };

function updateAssignment(n, a) {
  const now = Date.now();
  const answering = view.prov.answering.has(a.id);
  const who = nameOf(a.requester && a.requester.userId);
  n.root.dataset.status = a.status;
  n.root.dataset.requester = (a.requester && a.requester.userId) || '';
  n.root.className = 'p-item ' + String(a.status).toLowerCase();
  setAvatar(n.av, a.requester && a.requester.userId, who);
  n.name.textContent = who;
  n.score.textContent = `score ${fmtScore(a.score)}`;
  n.parts.textContent = partsText(a.parts);
  const by = Date.parse(a.acceptBy);
  const left = Number.isFinite(by) ? by - now : NaN;
  const offered = a.status === 'OFFERED';
  const late = offered && left <= 0;
  n.accept.hidden = n.decline.hidden = !offered || late;
  n.accept.disabled = n.decline.disabled = answering;
  n.end.hidden = a.status !== 'ACCEPTED';
  n.end.disabled = answering;
  n.meter.hidden = !offered || !Number.isFinite(left);
  let text = '';
  if (offered && Number.isFinite(left)) {
    text = late ? 'Time is up: the requester goes back to the queue' : `Accept within ${Math.ceil(left / 1000)} s`;
    const span = Math.max(1, by - (Date.parse(a.offeredAt) || by - 15000));
    n.fill.style.width = `${Math.max(0, Math.min(100, (left / span) * 100))}%`;
  } else if (offered) {
    text = 'Offered';
  } else if (a.status === 'ACCEPTED') {
    const since = Date.parse(a.acceptedAt || a.offeredAt);
    text = Number.isFinite(since) ? `Session running for ${fmtClock(now - since)}` : 'Session running';
  } else {
    text = ENDED_TEXT[a.status] || String(a.status).toLowerCase();
  }
  n.countdown.textContent = text;
}

function renderProvider() {
  const prov = view.prov;
  const c = prov.client;
  const pv = c && prov.queue ? c.provider(prov.queue) : null;
  const online = !!(pv && pv.online);
  const card = $('provider-card');
  card.dataset.online = String(online);
  const queues = providerQueues();
  $('p-online').hidden = online;
  $('p-online').disabled = prov.busy || !queues.length;
  $('p-update').hidden = !online;
  $('p-offline').hidden = !online;
  $('p-update').disabled = $('p-offline').disabled = prov.busy;
  $('p-queue').disabled = online || prov.busy;
  $('p-error').textContent = prov.error;

  let chip = 'Offline';
  let title = 'Offline';
  let sub = queues.length ? 'Fill in what you offer and go online.' : 'This server has no provider queue.';
  if (c && c.state === 'reconnecting') {
    chip = 'Reconnecting';
    title = 'Connection lost — reconnecting…';
    sub = 'Your running sessions go on; you are put online again once the socket is back.';
  } else if (online) {
    // The slots in use are the live assignments: the provider's state is
    // heard only in replies and hello, the assignments in every push.
    const used = c.store.liveAssignments(pv.queue).length;
    chip = used >= pv.capacity ? 'Busy' : 'Online';
    title = `Online in ${pv.queue} — ${used} of ${pv.capacity} slot${pv.capacity === 1 ? '' : 's'} in use`;
    const at = pv.attributes || {};
    sub = [list(at.languages), list(at.specialties), list(at.sessionTypes), `rating ${fmtNumber(at.rating || 0)}`].filter(Boolean).join(' · ');
  } else if (prov.busy) {
    chip = 'Going online';
    title = 'Going online…';
  } else if (pv) {
    sub = 'You are offline: nobody is offered to you. Sessions still running go on until you end them.';
  }
  $('p-chip').textContent = chip;
  $('p-title').textContent = title;
  $('p-sub').textContent = sub;
  $('p-status').className = 'status ' + (online ? 'online' : 'idle');

  const all = c ? [...c.store.assignments.values()].filter((a) => !prov.queue || a.queue === prov.queue) : [];
  const byTime = (x, y) => String(x.offeredAt || '').localeCompare(String(y.offeredAt || ''));
  const offers = all.filter((a) => a.status === 'OFFERED').sort(byTime);
  const running = all.filter((a) => a.status === 'ACCEPTED').sort(byTime);
  const ended = all.filter((a) => a.status !== 'OFFERED' && a.status !== 'ACCEPTED')
    .sort((x, y) => String(y.endedAt || y.offeredAt || '').localeCompare(String(x.endedAt || x.offeredAt || '')))
    .slice(0, PROVIDER_ENDED_SHOWN);
  const shown = new Set([...offers, ...running, ...ended].map((a) => a.id));
  for (const [id, node] of prov.nodes) {
    if (!shown.has(id)) {
      node.root.remove();
      prov.nodes.delete(id);
    }
  }
  for (const [box, items] of [[$('p-offers'), offers], [$('p-running'), running], [$('p-ended'), ended]]) {
    items.forEach((a, i) => {
      let node = prov.nodes.get(a.id);
      if (!node) {
        node = assignmentNode(a.id);
        prov.nodes.set(a.id, node);
      }
      updateAssignment(node, a);
      if (box.children[i] !== node.root) box.insertBefore(node.root, box.children[i] || null);
    });
  }
  $('p-offers-none').hidden = offers.length > 0;
  $('p-running-none').hidden = running.length > 0;
  $('p-ended-h').hidden = !ended.length;
}

function list(xs) {
  return Array.isArray(xs) && xs.length ? xs.join(', ') : '';
}

function selectTab(tab) {
  view.tab = tab === 'provider' ? 'provider' : 'play';
  session.set('tab', view.tab === 'provider' ? 'provider' : null);
  const provider = view.tab === 'provider';
  $('play-pane').hidden = provider;
  $('provider-pane').hidden = !provider;
  $('tab-play').setAttribute('aria-selected', String(!provider));
  $('tab-provider').setAttribute('aria-selected', String(provider));
  // The player's sign-in chip belongs to the player's tab.
  $('me').hidden = provider || !view.me;
  updateConnText();
  renderProvider();
}

// ---- simulated players -----------------------------------------------------

/** Sim is one simulated player: a guest with its own client and socket. */
class Sim {
  constructor(name, skill, queue, region) {
    Object.assign(this, { name, skill, queue, region, state: 'starting', client: null, userId: '' });
  }

  async run() {
    try {
      const { token, userId } = await MatchgateClient.guest(ORIGIN, { name: this.name, skill: this.skill });
      this.userId = userId;
      view.names.set(userId, this.name);
      const c = new MatchgateClient({ baseUrl: ORIGIN });
      this.client = c;
      c.on('match', (m) => {
        if (m.state === 'PENDING_ACCEPT' && m.acceptBy && !m.provider && !this.accepted) {
          this.accepted = true;
          // A person takes a moment to click.
          setTimeout(() => c.accept(m.id).catch(() => {}), 400 + Math.random() * 1600);
        }
      });
      c.on('ticket', (t) => {
        this.state = t.status;
        if (t.status !== 'WAITING') this.finishSoon();
        renderSims();
      });
      c.on('state', (s) => { if (s.state === 'closed' && this.state === 'WAITING') this.state = 'gone'; });
      await c.connect('/v1/ws', token);
      const t = await c.join(this.queue, { region: this.region });
      // The match may have formed (and been pushed) before the reply.
      this.state = (c.store.ticket(t.id) || t).status;
      if (this.state !== 'WAITING') this.finishSoon();
      refreshLobbySoon();
    } catch (err) {
      this.state = 'failed';
      this.error = describe(err);
      this.finishSoon(0);
    }
    renderSims();
  }

  finishSoon(ms = SIM_LINGER_MS) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      if (this.client) this.client.close(1000, 'done');
      view.sims = view.sims.filter((s) => s !== this);
      renderSims();
    }, ms);
  }
}

function addSims(ev) {
  ev.preventDefault();
  const q = view.queues.find((x) => x.name === view.queue);
  if (!q) return;
  const live = view.sims.length;
  const n = Math.max(1, Math.min(Number($('sim-n').value) || 1, 20, SIM_MAX - live));
  if (live >= SIM_MAX) {
    $('sim-status').textContent = `At most ${SIM_MAX} simulated players at once.`;
    return;
  }
  const base = view.me ? view.skill : 1500;
  for (let i = 0; i < n; i++) {
    const skill = Math.max(0, Math.round(base + (Math.random() * 2 - 1) * 40));
    const name = SIM_NAMES[Math.floor(Math.random() * SIM_NAMES.length)] + ' ' + (Math.floor(Math.random() * 90) + 10);
    const sim = new Sim(name, skill, q.name, view.region);
    view.sims.push(sim);
    sim.run();
  }
  renderSims();
}

function renderSims() {
  if (!view.sims.length) {
    $('sim-status').textContent = 'They sign in as guests from this browser, each with its own WebSocket, join the selected queue and accept their matches.';
    return;
  }
  const count = (st) => view.sims.filter((s) => s.state === st).length;
  const parts = [];
  const waiting = count('WAITING');
  const matched = count('MATCHED');
  const starting = count('starting');
  if (starting) parts.push(`${starting} joining`);
  if (waiting) parts.push(`${waiting} waiting`);
  if (matched) parts.push(`${matched} matched`);
  const other = view.sims.length - waiting - matched - starting;
  if (other) parts.push(`${other} left`);
  const failed = view.sims.find((s) => s.state === 'failed');
  $('sim-status').textContent = `Simulated players: ${parts.join(' · ')}` + (failed ? ` — ${failed.error}` : '');
}

// ---- rendering -------------------------------------------------------------

function waitingTicket() {
  const me = view.me;
  return me ? me.store.waiting()[0] || null : null;
}

function currentTicket() {
  return view.me ? view.me.store.current() : null;
}

function currentMatch() {
  const t = currentTicket();
  return t && view.me ? view.me.store.matchForTicket(t.id) : null;
}

const REASONS = {
  user: ['You left the queue', 'Join again whenever you like.'],
  heartbeat: ['Your ticket timed out', 'The server stopped hearing from this page, so it released your place.'],
  declined: ['You declined the match', 'Join again to find another one.'],
  accept_timeout: ['You did not accept in time', 'The match went ahead without you. Join again to find another one.'],
};

function render() {
  const me = view.me;
  const t = currentTicket();
  const m = currentMatch();
  const waiting = t && t.status === 'WAITING';

  const pendingMatch = m && m.state === 'PENDING_ACCEPT';
  $('join').disabled = !me || !view.queue || view.busy || !!waiting || !!pendingMatch;
  $('join').hidden = !!waiting;
  $('cancel').hidden = !waiting;
  $('cancel').disabled = view.busy;
  for (const input of document.querySelectorAll('#queues input, #region, #prefs select')) input.disabled = !!waiting;
  for (const label of document.querySelectorAll('.queue-option')) label.classList.toggle('locked', !!waiting);

  // status panel
  const box = $('status');
  let state = 'idle';
  let title = 'Not in a queue';
  let sub = 'Pick a queue above and join.';
  const facts = [];
  if (t) {
    state = t.status;
    const place = `${t.queue}${t.region && t.region !== 'global' ? ' · ' + t.region : ''}`;
    const enq = Date.parse(t.enqueuedAt);
    const two = isProviderQueue(queueNamed(t.queue)) || !!(m && m.provider);
    switch (t.status) {
      case 'WAITING': {
        const again = m && m.state === 'DISSOLVED';
        title = again ? 'Back in the queue' : two ? 'Looking for a provider…' : 'Searching for players…';
        sub = again ? (two ? `The provider declined or did not answer in time; you kept your place in ${place}.`
          : `The last match was dissolved; you kept your place in ${place}.`)
          : two ? `In ${place}. A provider who fits is offered you the moment one is free.` : `In ${place}. We push the match the moment it forms.`;
        facts.push(['Waited', fmtClock(Date.now() - enq), 'waited']);
        if (t.deadline) facts.push(['Gives up in', fmtClock(Date.parse(t.deadline) - Date.now())]);
        if (t.estimated) facts.push(['Skill', `${fmtNumber(t.skill)} (estimated)`]);
        const ex = view.explain.get(t.id);
        if (two) for (const f of providerExplainFacts(t, ex)) facts.push(f);
        else for (const [k, v] of explainFacts(ex)) facts.push([k, v]);
        break;
      }
      case 'MATCHED':
        title = 'Match found';
        sub = `After ${fmtClock(stampOf(t) - enq)} in ${place}.`;
        if (m && m.provider) {
          const who = nameOf(m.provider.userId);
          title = m.state === 'READY' ? `Your session with ${who} started`
            : m.state === 'PENDING_ACCEPT' ? `Provider found — waiting for ${who} to accept` : title;
          sub = `${who} fits you with a score of ${fmtScore(m.provider.score)}; found after ${fmtClock(stampOf(t) - enq)} in ${place}.`;
        } else if (m && m.state === 'PENDING_ACCEPT') {
          title = view.accepted.has(m.id) ? 'Accepted — waiting for the others' : 'Match found — accept it below';
        } else if (m && m.state === 'READY') {
          title = 'Match ready';
        }
        break;
      case 'CANCELLED': {
        [title, sub] = REASONS[t.cancelReason] || ['Ticket cancelled', t.cancelReason ? `Reason: ${t.cancelReason}.` : 'Join again whenever you like.'];
        break;
      }
      case 'EXPIRED':
        title = 'No match found in time';
        sub = `Nobody close enough to your skill joined ${place} before the deadline. Try again or pick another queue.`;
        break;
      default:
        title = t.status;
        sub = place;
    }
  }
  box.className = 'status ' + state.toLowerCase();
  box.dataset.state = state;
  $('status-title').textContent = title;
  $('status-sub').textContent = sub;
  fillFacts($('status-facts'), facts);

  // A matched ticket whose match this page has not seen (say, the match
  // aged out of hello): ask once over REST.
  if (t && t.matchId && !m && me && !view.asked.has(t.id)) {
    view.asked.add(t.id);
    me.getTicket(t.id).then(render, () => {});
  }
  renderMatch(m, t);
  renderBanner();
}

function renderMatch(m, t) {
  const card = $('match-card');
  if (!m || !t) {
    card.hidden = true;
    return;
  }
  if (m.provider) {
    renderProviderMatch(m, t);
    return;
  }
  card.hidden = false;
  card.dataset.state = m.state;
  card.className = 'card match ' + String(m.state || '').toLowerCase();
  const ready = m.state === 'READY';
  const pending = m.state === 'PENDING_ACCEPT';
  const dissolved = m.state === 'DISSOLVED';
  $('match-title').textContent = dissolved ? 'Match dissolved'
    : pending ? (view.accepted.has(m.id) ? 'Match found — accepted' : 'Match found — accept?') : 'Match ready';
  const badge = $('match-badge');
  badge.textContent = { FILLED: 'full match', FALLBACK: 'smaller room', TIMEOUT: 'deadline match' }[m.formedBy] || m.formedBy || '';
  badge.hidden = !badge.textContent;
  const n = (m.players || []).length;
  let sub = `${n} player${n === 1 ? '' : 's'} in ${m.queue}${m.region && m.region !== 'global' ? ' · ' + m.region : ''}`;
  if (m.bots) sub += ` + ${m.bots} bot${m.bots === 1 ? '' : 's'}`;
  if (dissolved) sub = t.status === 'WAITING'
    ? 'Someone declined or did not answer in time. You are back in the queue with your original place.'
    : 'Someone declined or did not answer in time.';
  $('match-sub').textContent = sub;

  $('players').replaceChildren(...(m.players || []).map((p) => {
    const li = document.createElement('li');
    const mine = p.userId === view.userId;
    if (mine) li.className = 'mine';
    const name = seatName(p);
    const av = el('span', 'avatar');
    setAvatar(av, p.userId, name);
    const who = el('span', 'player-name', name);
    if (mine) who.append(el('span', 'tag', 'you'));
    const meta = el('span', 'player-meta', `skill ${fmtNumber(p.skill)}` + (name !== p.userId ? ` · ${p.userId}` : ''));
    const text = el('span', 'player-text');
    text.append(who, meta);
    li.append(av, text);
    return li;
  }));

  $('accept-box').hidden = !(pending && m.acceptBy);
  const answered = view.accepted.has(m.id);
  $('accept').hidden = answered;
  $('decline').hidden = answered;
  updateCountdown(m);
  const server = ready && m.server && m.server.address;
  $('server-box').hidden = !server;
  if (server) {
    $('server-addr').textContent = m.server.address;
    $('server-session').textContent = m.server.session ? `session ${m.server.session}` : '';
  }
  fillFacts($('match-facts'), [
    ['Skill spread', m.spread !== undefined && m.spread !== null ? fmtNumber(m.spread) : ''],
    ['Match', m.id],
  ]);
}

// renderProviderMatch is a requester's match in a provider queue: the
// provider and its score, and while the provider decides the time it has
// (only the provider answers: the requester has nothing to click).
function renderProviderMatch(m, t) {
  const card = $('match-card');
  card.hidden = false;
  card.dataset.state = m.state;
  card.className = 'card match ' + String(m.state || '').toLowerCase();
  const pv = m.provider;
  const who = nameOf(pv.userId);
  const pending = m.state === 'PENDING_ACCEPT';
  const dissolved = m.state === 'DISSOLVED';
  $('match-title').textContent = dissolved ? 'Offer withdrawn' : pending ? 'Provider found' : `Your session with ${who} started`;
  const badge = $('match-badge');
  badge.textContent = `score ${fmtScore(pv.score)}`;
  badge.hidden = false;
  $('match-sub').textContent = dissolved
    ? (t.status === 'WAITING' ? 'The provider declined or did not answer in time. You are back in the queue with your original place.' : 'The provider declined or did not answer in time.')
    : pending ? `Offered to ${who}, who has a moment to accept.` : `${who} accepted: your session is running.`;

  const provLi = document.createElement('li');
  provLi.className = 'provider-seat';
  provLi.dataset.userId = pv.userId;
  const av = el('span', 'avatar');
  setAvatar(av, pv.userId, who);
  const name = el('span', 'player-name', who);
  name.append(el('span', 'tag', 'provider'));
  const meta = el('span', 'player-meta', [`score ${fmtScore(pv.score)}`, partsText(pv.parts)].filter(Boolean).join(' · '));
  const text = el('span', 'player-text');
  text.append(name, meta);
  provLi.append(av, text);
  const mine = (m.players || []).filter((p) => p.userId === view.userId).map((p) => {
    const li = document.createElement('li');
    li.className = 'mine';
    const a = el('span', 'avatar');
    setAvatar(a, p.userId, view.name || p.userId);
    const w = el('span', 'player-name', view.name || p.userId);
    w.append(el('span', 'tag', 'you'));
    const tx = el('span', 'player-text');
    tx.append(w, el('span', 'player-meta', p.userId));
    li.append(a, tx);
    return li;
  });
  $('players').replaceChildren(provLi, ...mine);

  $('accept-box').hidden = !(pending && m.acceptBy);
  $('accept').hidden = true;
  $('decline').hidden = true;
  updateCountdown(m);
  $('server-box').hidden = true;
  fillFacts($('match-facts'), [
    ['Provider', pv.userId, 'provider'],
    ['Score', fmtScore(pv.score), 'score'],
    ['Match', m.id],
  ]);
}

function updateCountdown(m) {
  if (!m || m.state !== 'PENDING_ACCEPT' || !m.acceptBy) return;
  const by = Date.parse(m.acceptBy);
  const created = Date.parse(m.createdAt) || by - 10000;
  const left = Math.max(0, by - Date.now());
  const secs = el('strong', '', `${Math.ceil(left / 1000)} s`);
  if (m.provider) $('accept-text').replaceChildren(`Waiting for ${nameOf(m.provider.userId)} to accept · `, secs, ' left');
  else if (view.accepted.has(m.id)) $('accept-text').replaceChildren('Accepted — waiting for the others · ', secs, ' left');
  else $('accept-text').replaceChildren('Accept within ', secs);
  $('accept-bar').style.width = `${Math.max(0, Math.min(100, (left / Math.max(1, by - created)) * 100))}%`;
}

function renderBanner() {
  const b = $('banner');
  if (!view.me || view.conn === 'open' || view.conn === 'idle') {
    b.hidden = true;
    return;
  }
  b.hidden = false;
  const waiting = waitingTicket();
  if (view.conn === 'reconnecting') {
    const s = Math.max(0, (view.reconnectAt - Date.now()) / 1000);
    b.textContent = `Connection lost — reconnecting${s > 0.05 ? ` in ${s.toFixed(1)} s` : '…'}` + (waiting ? ' Your place in the queue is kept.' : '');
  } else if (view.conn === 'connecting') {
    b.textContent = 'Connecting…';
  } else {
    b.textContent = 'Disconnected.';
  }
}

// explainFacts turns the server's explanation of a wait into label/value
// pairs without depending on its exact shape.
function explainFacts(ex) {
  if (!ex || typeof ex !== 'object') return [];
  const out = [];
  const add = (key, v) => {
    if (v === null || v === undefined || v === '' || out.length >= 6) return;
    const label = humanize(key);
    if (typeof v === 'number') {
      if (/ms$|millis/i.test(key)) out.push([label.replace(/ ms$/i, ''), fmtSeconds(v / 1000)]);
      else if (/seconds?$|wait|age|after/i.test(key)) out.push([label.replace(/ seconds?$/i, ''), fmtSeconds(v)]);
      else out.push([label, fmtNumber(v)]);
    } else if (typeof v === 'boolean') out.push([label, v ? 'yes' : 'no']);
    else if (Array.isArray(v)) out.push([label, v.length && typeof v[0] !== 'object' ? v.join(', ') : String(v.length)]);
    else if (typeof v === 'object') {
      for (const [k2, v2] of Object.entries(v)) {
        if (typeof v2 !== 'object' || v2 === null) add(`${key} ${k2}`, v2);
      }
    } else out.push([label, String(v)]);
  };
  const keys = Object.keys(ex).sort((a, b) => rank(a) - rank(b));
  for (const k of keys) add(k, ex[k]);
  return out;
}

// providerExplainFacts is a requester's wait in a provider queue: what it
// asked for, why no provider takes it yet (explain.noProvider, when
// explain.missing is "provider"), and which constraints the wait dropped.
function providerExplainFacts(t, ex) {
  const a = t.attributes || {};
  const asked = [a.language, a.specialty, a.sessionType, a.minRating ? `rating ≥ ${a.minRating}` : ''].filter(Boolean).join(' · ');
  const out = [['Asked for', asked || 'anyone', 'asked']];
  if (!ex || typeof ex !== 'object') return out;
  if (ex.noProvider) out.push(['Why no provider yet', String(ex.noProvider), 'noprovider']);
  else if (ex.missing === 'provider') out.push(['Why no provider yet', 'no provider fits yet', 'noprovider']);
  const relaxed = Array.isArray(ex.relaxed) ? ex.relaxed : [];
  out.push(['Relaxed', relaxed.length ? relaxed.map(humanize).join(', ') : 'nothing yet', 'relaxed']);
  if (Number.isFinite(Number(ex.estimatedWait)) && ex.estimatedWait !== null) out.push(['Estimated wait', fmtSeconds(Number(ex.estimatedWait))]);
  return out;
}

function rank(k) {
  if (/window/i.test(k)) return 0;
  if (/estimat/i.test(k)) return 1;
  if (/candidate/i.test(k)) return 2;
  return 3;
}

function humanize(key) {
  const s = String(key).replace(/([a-z0-9])([A-Z])/g, '$1 $2').replace(/[_.-]+/g, ' ').toLowerCase().trim();
  return s.charAt(0).toUpperCase() + s.slice(1);
}

function fillFacts(dl, pairs) {
  const nodes = [];
  for (const [k, v, id] of pairs) {
    if (v === null || v === undefined || v === '') continue;
    const div = el('div', 'fact');
    const dd = el('dd', '', String(v));
    if (id) dd.id = 'fact-' + id;
    div.append(el('dt', '', k), dd);
    nodes.push(div);
  }
  dl.replaceChildren(...nodes);
  dl.hidden = !nodes.length;
}

// ---- connection indicator --------------------------------------------------

function setConn(state, s = {}) {
  view.conn = state;
  view.connNode = s.node || (state === 'open' ? view.connNode : '');
  updateConnText();
}

// shownConn is the connection the indicator shows: the player's, or on
// the provider tab the provider's own socket.
function shownConn() {
  if (view.tab !== 'provider') return { state: view.conn, at: view.reconnectAt, node: view.connNode };
  const p = view.prov;
  return { state: p.client ? p.client.state : 'off', at: p.reconnectAt, node: p.client ? p.client.node : '' };
}

function updateConnText() {
  const { state, at, node } = shownConn();
  const pill = $('conn');
  const cls = { open: 'on', connecting: 'wait', reconnecting: 'wait' }[state] || 'off';
  pill.className = 'conn ' + cls;
  pill.title = node ? `node ${node}` : '';
  const text = {
    open: 'Connected',
    connecting: 'Connecting…',
    reconnecting: 'Reconnecting…',
  }[state] || 'Offline';
  let t = text;
  if (state === 'reconnecting') {
    const s = (at - Date.now()) / 1000;
    if (s > 0.05) t = `Reconnecting in ${s.toFixed(1)} s`;
  }
  $('conn-text').textContent = t;
}

// ---- log -------------------------------------------------------------------

function logFrame(dir, f, who) {
  const li = document.createElement('li');
  li.className = dir + (f.type === 'error' ? ' err' : '');
  const time = el('span', 't', new Date().toLocaleTimeString());
  const ty = el('span', 'ty', (dir === 'out' ? '→ ' : '← ') + (who ? who + ' ' : '') + f.type);
  li.append(time, ' ', ty, ' ', summary(f));
  const log = $('log');
  log.prepend(li);
  while (log.children.length > LOG_MAX) log.lastChild.remove();
  view.logCount++;
  $('log-count').textContent = `(${view.logCount})`;
}

function summary(f) {
  const parts = [];
  if (f.re) parts.push('re=' + f.re);
  if (f.ticket) parts.push(`ticket ${short(f.ticket.id)} ${f.ticket.status} v${f.ticket.version}`);
  if (f.match) parts.push(`match ${short(f.match.id)} ${f.match.state} v${f.match.version}`);
  if (f.tickets) parts.push(`${f.tickets.length} ticket(s)`);
  if (f.matches) parts.push(`${f.matches.length} match(es)`);
  if (f.error) parts.push(`${f.error.code}: ${f.error.message}`);
  if (f.queue) parts.push(`${f.queue}${f.region ? '/' + f.region : ''}`);
  if (f.ticketId) parts.push('ticket ' + short(f.ticketId));
  if (f.matchId) parts.push('match ' + short(f.matchId));
  if (f.node) parts.push('node ' + f.node);
  if (f.position) parts.push(positionSummary(f.position));
  if (f.assignment) parts.push(`assignment ${short(f.assignment.id)} ${f.assignment.status} v${f.assignment.version}`);
  if (f.assignmentId) parts.push('assignment ' + short(f.assignmentId));
  if (f.provider && f.type === 'provider') parts.push(`${f.provider.online ? 'online' : 'offline'} ${f.provider.used}/${f.provider.capacity}`);
  if (Array.isArray(f.providers)) parts.push(`${f.providers.length} provider queue(s)`);
  if (f.token) parts.push('token ' + short(f.token));
  return parts.join(' · ');
}

// ---- helpers ---------------------------------------------------------------

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function nameOf(userId) {
  return view.names.get(userId) || userId;
}

// seatName is how a match's player is shown: the display name the server
// sends with the seat (the one its player chose), else one this browser
// knows, else the user id.
function seatName(p) {
  if (typeof p.name === 'string' && p.name) {
    if (p.userId !== view.userId) view.names.set(p.userId, p.name);
    return p.name;
  }
  return nameOf(p.userId);
}

function fmtScore(v) {
  const n = Number(v);
  return Number.isFinite(n) ? n.toFixed(2) : '—';
}

// partsText is a score's parts, the largest first: "specialty 2.00 · load 1.00".
function partsText(parts) {
  return Object.entries(parts || {}).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${fmtScore(v)}`).join(' · ');
}

function short(id) {
  return id ? String(id).slice(0, 8) : '';
}

function stampOf(t) {
  return Date.parse(t.updatedAt) || Date.now();
}

function fmtClock(ms) {
  const s = Math.max(0, Math.floor((Number(ms) || 0) / 1000));
  const h = Math.floor(s / 3600);
  const mm = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return h ? `${h}:${String(mm).padStart(2, '0')}:${ss}` : `${mm}:${ss}`;
}

function fmtSeconds(s) {
  if (!Number.isFinite(s)) return '—';
  if (s < 1) return `${Math.round(s * 1000)} ms`;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  return fmtClock(s * 1000);
}

function fmtNumber(n) {
  const v = Number(n);
  if (!Number.isFinite(v)) return String(n);
  return Number.isInteger(v) ? String(v) : v.toFixed(Math.abs(v) < 10 ? 2 : 1);
}

function describe(err) {
  if (err instanceof MatchgateError) {
    switch (err.code) {
      case 'COOLDOWN':
      case 'RATE_LIMITED':
        return err.retryAfterMs ? `${err.message} (try again in ${Math.ceil(err.retryAfterMs / 1000)} s)` : err.message;
      case 'NETWORK':
        return 'The server cannot be reached.';
      case 'TIMEOUT':
      case 'DISCONNECTED':
        return 'The connection dropped before the server answered; your state is refreshed when it is back.';
    }
    return err.message;
  }
  return String((err && err.message) || err);
}

function showError(text, onSignin) {
  $('error').textContent = onSignin ? '' : text;
  let e = document.querySelector('#signin .error');
  if (!e) {
    e = el('p', 'error');
    e.setAttribute('role', 'alert');
    $('signin-form').after(e);
  }
  e.textContent = onSignin ? text : '';
}

function hue(s) {
  let h = 0;
  for (const c of String(s)) h = (h * 31 + c.codePointAt(0)) >>> 0;
  return h % 360;
}

function setAvatar(node, id, name) {
  const words = String(name || id || '?').replace(/^guest-/, '').split(/\s+/).filter((w) => /^\p{L}/u.test(w));
  const letters = words.map((w) => w[0]).join('').slice(0, 2).toUpperCase();
  node.textContent = letters || '?';
  node.style.setProperty('--h', String(hue(id)));
}

// ---- wiring ----------------------------------------------------------------

$('signin-form').addEventListener('submit', signIn);
$('skill').addEventListener('input', () => { $('skill-out').textContent = $('skill').value; });
$('signout').addEventListener('click', () => signOut());
$('region').addEventListener('change', () => selectQueue(view.queue, $('region').value));
$('join').addEventListener('click', join);
$('cancel').addEventListener('click', cancel);
$('accept').addEventListener('click', () => answer('accept'));
$('decline').addEventListener('click', () => answer('decline'));
$('sim-form').addEventListener('submit', addSims);
$('tab-play').addEventListener('click', () => selectTab('play'));
$('tab-provider').addEventListener('click', () => selectTab('provider'));
$('p-form').addEventListener('submit', providerGoOnline);
$('p-update').addEventListener('click', providerUpdate);
$('p-offline').addEventListener('click', providerGoOffline);
$('p-queue').addEventListener('change', () => { view.prov.queue = $('p-queue').value; renderProvider(); });
$('p-rating').addEventListener('input', () => { $('p-rating-out').textContent = $('p-rating').value; });

setInterval(() => {
  // clocks: time waited, deadlines, accept countdown, reconnect countdown
  const t = currentTicket();
  if (t && t.status === 'WAITING') render();
  else {
    updateCountdown(currentMatch());
    renderBanner();
  }
  updateConnText();
  updateLobbyAge();
  renderAdmission();
  if (view.tab === 'provider') renderProvider(); // offer countdowns, session clocks
}, 250);
setInterval(refreshLobby, LOBBY_EVERY_MS);
setInterval(() => {
  const t = waitingTicket();
  if (t && !isProviderQueue(queueNamed(t.queue))) refreshExplain();
}, EXPLAIN_EVERY_MS);
setInterval(() => {
  const t = waitingTicket();
  if (t && isProviderQueue(queueNamed(t.queue))) refreshExplain();
}, PROVIDER_EXPLAIN_EVERY_MS);

$('name').value = view.name;
$('skill').value = String(view.skill);
$('skill-out').textContent = String(view.skill);
const token = session.get('token');
if (token && view.userId) start(token);
loadProviderForm();
const ptoken = session.get('ptoken');
if (ptoken && view.prov.userId) startProvider(ptoken);
selectTab(view.tab);
refreshLobby();
render();
renderAdmission();
