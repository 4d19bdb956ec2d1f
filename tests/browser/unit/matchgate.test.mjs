// Unit tests of web/matchgate.js with node's built-in test runner and a
// fake WebSocket: request ids and replies, events, the version store,
// reconnects with full jitter, terminal close codes, heartbeats, admission
// places (the poll while no push comes, hello's list).
//
//   node --test unit/

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  MatchgateClient, MatchgateError, Store, backoffDelay, tokenExpiry, TERMINAL_CLOSE_CODES,
} from '../../../web/matchgate.js';
import { FakeWebSocket } from './fake-websocket.mjs';

const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

function newClient(extra = {}) {
  FakeWebSocket.instances = [];
  return new MatchgateClient({
    WebSocket: FakeWebSocket,
    fetch: async () => { throw new Error('no fetch in this test'); },
    reconnectBaseMs: 4,
    reconnectCapMs: 20,
    requestTimeoutMs: 500,
    heartbeatMs: 0,
    ...extra,
  });
}

const ticket = (over = {}) => ({
  id: 't1', userId: 'u1', queue: 'duel', region: 'global', status: 'WAITING', skill: 1500,
  estimated: false, enqueuedAt: '2026-01-01T00:00:00.000Z', deadline: null, matchId: null,
  cancelReason: null, updatedAt: '2026-01-01T00:00:00.000Z', version: 1, ...over,
});

const match = (over = {}) => ({
  id: 'm1', queue: 'duel', region: 'global', state: 'READY', formedBy: 'FILLED',
  players: [{ ticketId: 't1', userId: 'u1', skill: 1500 }, { ticketId: 't2', userId: 'u2', skill: 1510 }],
  bots: 0, spread: 10, server: null, acceptBy: null, createdAt: '2026-01-01T00:00:03.000Z', version: 1, ...over,
});

function fakeJWT(claims) {
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(claims)}.sig`;
}

test('backoffDelay is full jitter under an exponential, capped ceiling', () => {
  assert.equal(backoffDelay(0, 500, 15000, () => 0), 0);
  assert.equal(backoffDelay(0, 500, 15000, () => 0.5), 250);
  assert.equal(backoffDelay(3, 500, 15000, () => 0.5), 2000);
  assert.equal(backoffDelay(10, 500, 15000, () => 0.999999), 14999);
  assert.equal(backoffDelay(1000, 500, 15000, () => 0.5), 7500, 'huge attempts stay at the cap');
  for (let i = 0; i < 200; i++) {
    const d = backoffDelay(4, 500, 15000);
    assert.ok(d >= 0 && d < 8000, `delay ${d}`);
  }
});

test('tokenExpiry reads exp and tolerates garbage', () => {
  assert.equal(tokenExpiry(fakeJWT({ sub: 'u', exp: 2000000000 })), 2000000000 * 1000);
  assert.equal(tokenExpiry(fakeJWT({ sub: 'u' })), null);
  assert.equal(tokenExpiry('not a token'), null);
});

test('MatchgateError carries the server code and ids', () => {
  const e = MatchgateError.fromWire({ code: 'ALREADY_MATCHED', message: 'too late', ticketId: 't1', matchId: 'm1' }, { status: 409 });
  assert.ok(e instanceof Error);
  assert.equal(e.name, 'MatchgateError');
  assert.deepEqual([e.code, e.message, e.ticketId, e.matchId, e.status], ['ALREADY_MATCHED', 'too late', 't1', 'm1', 409]);
});

test('Store keeps the highest version', () => {
  const s = new Store();
  assert.equal(s.putTicket(ticket({ version: 2, status: 'CANCELLED' })), true);
  assert.equal(s.putTicket(ticket({ version: 1 })), false, 'older version ignored');
  assert.equal(s.putTicket(ticket({ version: 2 })), false, 'equal version ignored');
  assert.equal(s.ticket('t1').status, 'CANCELLED');
  assert.equal(s.putTicket(ticket({ version: 3, status: 'WAITING' })), true);
  assert.equal(s.current().id, 't1');
  assert.equal(s.putMatch(match({ version: 2 })), true);
  assert.equal(s.putMatch(match({ version: 1, state: 'DISSOLVED' })), false);
  assert.equal(s.match('m1').state, 'READY');
  assert.equal(s.putTicket(null), false);
  assert.equal(s.putTicket({ version: 9 }), false, 'no id');
});

test('Store seats waiting tickets in a formed match, in either order', () => {
  const s = new Store();
  s.putTicket(ticket());
  s.putMatch(match());
  const changed = s.seat(match());
  assert.deepEqual(changed.map((t) => [t.id, t.status, t.matchId, t.version]), [['t1', 'MATCHED', 'm1', 1]]);
  assert.equal(s.matchForTicket('t1').id, 'm1');
  // The joined reply (version 1, WAITING) arriving late changes nothing.
  assert.equal(s.putTicket(ticket()), false);
  assert.equal(s.ticket('t1').status, 'MATCHED');
  // The server's own later state still wins (a dissolved match requeued it).
  s.putMatch(match({ version: 2, state: 'DISSOLVED' }));
  assert.equal(s.putTicket(ticket({ version: 3, status: 'WAITING' })), true);
  assert.equal(s.ticket('t1').status, 'WAITING');

  // match.found before the joined reply.
  const s2 = new Store();
  s2.putMatch(match());
  s2.putTicket(ticket());
  assert.equal(s2.ticket('t1').status, 'MATCHED');
  // A dissolved match seats nobody.
  const s3 = new Store();
  s3.putTicket(ticket());
  assert.deepEqual(s3.seat(match({ state: 'DISSOLVED' })), []);
});

test('connect resolves with hello, merges its state and reports the connection state', async () => {
  const c = newClient();
  const states = [];
  c.on('state', (s) => states.push(s.state));
  const p = c.connect('http://127.0.0.1:9/', 'tok en');
  const ws = FakeWebSocket.last();
  assert.equal(ws.url, 'ws://127.0.0.1:9/v1/ws?token=tok%20en');
  ws.accept({ tickets: [ticket()], matches: [] });
  const hello = await p;
  assert.equal(hello.type, 'hello');
  assert.equal(c.userId, 'u1');
  assert.equal(c.node, 'n1');
  assert.equal(c.store.ticket('t1').status, 'WAITING');
  assert.deepEqual(states, ['connecting', 'open']);
  assert.equal(c.options.baseUrl, 'http://127.0.0.1:9');
  c.close();
});

test('requests resolve by their id and error replies reject with MatchgateError', async () => {
  const c = newClient();
  const p = c.connect('ws://h/v1/ws', 't');
  const ws = FakeWebSocket.last();
  ws.accept();
  await p;

  const joined = c.join('duel', { region: 'eu', attributes: { mode: 'x' } });
  const sent = ws.lastSent('join');
  assert.deepEqual({ ...sent, id: undefined }, { type: 'join', id: undefined, queue: 'duel', region: 'eu', attributes: { mode: 'x' } });
  ws.push({ type: 'joined', re: sent.id, ticket: ticket() });
  assert.equal((await joined).id, 't1');

  const again = c.join('duel');
  const id2 = ws.lastSent('join').id;
  assert.notEqual(id2, sent.id, 'ids are unique');
  ws.push({ type: 'error', re: id2, error: { code: 'ALREADY_QUEUED', message: 'already queued', ticketId: 't1' } });
  await assert.rejects(again, (e) => e instanceof MatchgateError && e.code === 'ALREADY_QUEUED' && e.ticketId === 't1');

  const cancel = c.cancel('t1');
  ws.push({ type: 'error', re: ws.lastSent('cancel').id, error: { code: 'ALREADY_MATCHED', message: 'matched first', ticketId: 't1', matchId: 'm1' } });
  await assert.rejects(cancel, (e) => e.code === 'ALREADY_MATCHED' && e.matchId === 'm1');

  const acc = c.accept('m1');
  assert.deepEqual(ws.lastSent('accept').matchId, 'm1');
  ws.push({ type: 'match.update', re: ws.lastSent('accept').id, match: match() });
  assert.equal((await acc).id, 'm1');

  const dec = c.decline('m1');
  ws.push({ type: 'match.update', re: ws.lastSent('decline').id, match: match({ version: 2, state: 'DISSOLVED' }) });
  assert.equal((await dec).state, 'DISSOLVED');

  const st = c.status();
  ws.push({ type: 'status', re: ws.lastSent('status').id, tickets: [ticket({ version: 5, status: 'CANCELLED' })], matches: [] });
  assert.equal((await st).tickets.length, 1);
  assert.equal(c.store.ticket('t1').version, 5);

  const ping = c.ping();
  ws.push({ type: 'pong', re: ws.lastSent('ping').id });
  assert.ok((await ping) >= 0);
  c.close();
});

test('every server frame is emitted, pushes update the store', async () => {
  const c = newClient();
  const seen = [];
  c.on('message', (f) => seen.push(f.type));
  const found = [];
  c.on('match.found', (f) => found.push(f.match.id));
  const tickets = [];
  c.on('ticket', (t) => tickets.push(`${t.id}:${t.status}`));
  const p = c.connect('ws://h/v1/ws', 't');
  const ws = FakeWebSocket.last();
  ws.accept({ tickets: [ticket()] });
  await p;
  ws.push({ type: 'match.found', match: match() });
  ws.push({ type: 'match.found', match: match() }); // at least once: a repeat
  ws.push({ type: 'ticket.update', ticket: ticket({ version: 2, status: 'MATCHED', matchId: 'm1' }) });
  ws.push({ type: 'match.ready', match: match({ version: 2, server: { address: '10.0.0.1:7777', session: 's' } }) });
  ws.push({ type: 'something.new', x: 1 });
  assert.deepEqual(seen, ['hello', 'match.found', 'match.found', 'ticket.update', 'match.ready', 'something.new']);
  assert.deepEqual(found, ['m1', 'm1']);
  assert.deepEqual(tickets, ['t1:WAITING', 't1:MATCHED', 't1:MATCHED']);
  assert.equal(c.store.match('m1').server.address, '10.0.0.1:7777');
  assert.equal(c.store.ticket('t1').version, 2);
  c.close();
});

test('a lost connection reconnects with jittered backoff and reconciles by version', async () => {
  const c = newClient({ random: () => 0.5 });
  const states = [];
  c.on('state', (s) => states.push(s));
  const p = c.connect('ws://h/v1/ws', 't');
  FakeWebSocket.last().accept({ tickets: [ticket({ version: 4, status: 'MATCHED', matchId: 'm1' })] });
  await p;

  const inflight = c.join('duel');
  FakeWebSocket.last().drop(1001, 'going away');
  await assert.rejects(inflight, (e) => e.code === 'DISCONNECTED');
  const r = states.find((s) => s.state === 'reconnecting');
  assert.equal(r.code, 1001);
  assert.equal(r.delayMs, 2, 'half of the first 4 ms ceiling');

  // A request made while reconnecting waits for the new socket.
  const queued = c.status();
  await tick(10);
  assert.equal(FakeWebSocket.instances.length, 2);
  const ws2 = FakeWebSocket.last();
  ws2.accept({ tickets: [ticket({ version: 3, status: 'WAITING' })] }); // older than what we hold
  assert.equal(c.store.ticket('t1').version, 4, 'an older version never overwrites');
  assert.equal(c.store.ticket('t1').status, 'MATCHED');
  const sent = ws2.lastSent('status');
  assert.ok(sent, 'the queued request went out after hello');
  ws2.push({ type: 'status', re: sent.id, tickets: [], matches: [] });
  await queued;
  assert.deepEqual(states.map((s) => s.state), ['connecting', 'open', 'reconnecting', 'reconnecting', 'open']);

  // Failures in a row widen the window; hello resets it.
  const before = FakeWebSocket.instances.length;
  ws2.drop(1006);
  await tick(5);
  FakeWebSocket.last().drop(1006);
  const delays = states.filter((s) => s.delayMs !== undefined).map((s) => s.delayMs);
  assert.deepEqual(delays.slice(-2), [2, 4]);
  await tick(10);
  assert.ok(FakeWebSocket.instances.length > before);
  FakeWebSocket.last().accept();
  assert.equal(c.state, 'open');
  c.close();
});

test('terminal close codes stop reconnecting', async () => {
  assert.deepEqual([...TERMINAL_CLOSE_CODES], [4401, 4403]);
  const c = newClient();
  const states = [];
  c.on('state', (s) => states.push(s));
  const p = c.connect('ws://h/v1/ws', 't');
  FakeWebSocket.last().accept();
  await p;
  FakeWebSocket.last().drop(4401, 'token expired');
  await tick(30);
  assert.equal(FakeWebSocket.instances.length, 1, 'no reconnect');
  assert.equal(c.state, 'closed');
  assert.equal(states[states.length - 1].code, 4401);
  await assert.rejects(c.join('duel'), (e) => e.code === 'NOT_CONNECTED');
});

test('an expired token is not used to reconnect', async () => {
  const c = newClient();
  const p = c.connect('ws://h/v1/ws', fakeJWT({ sub: 'u', exp: Math.floor(Date.now() / 1000) - 10 }));
  await assert.rejects(p, (e) => e.code === 'UNAUTHORIZED');
  assert.equal(FakeWebSocket.instances.length, 0);
  assert.equal(c.state, 'closed');
});

test('close stops for good and fails what waits', async () => {
  const c = newClient();
  const p = c.connect('ws://h/v1/ws', 't');
  const ws = FakeWebSocket.last();
  ws.accept();
  await p;
  const pending = c.status();
  c.close();
  await assert.rejects(pending, (e) => e.code === 'NOT_CONNECTED');
  assert.deepEqual(ws.closedWith, { code: 1000, reason: 'client closed' });
  await tick(30);
  assert.equal(FakeWebSocket.instances.length, 1);
  assert.equal(c.state, 'closed');
  // A hello promise of a client closed before it connected rejects without
  // an unhandled rejection.
  const c2 = newClient();
  const never = c2.connect('ws://h/v1/ws', 't');
  c2.close();
  await assert.rejects(never, (e) => e.code === 'NOT_CONNECTED');
});

test('a request without a reply times out', async () => {
  const c = newClient({ requestTimeoutMs: 20 });
  const p = c.connect('ws://h/v1/ws', 't');
  FakeWebSocket.last().accept();
  await p;
  await assert.rejects(c.ping(), (e) => e.code === 'TIMEOUT');
  c.close();
});

test('waiting tickets are kept alive over REST, and reconciled when they stopped waiting', async () => {
  const calls = [];
  const fetch = async (url, init) => {
    calls.push(`${init.method} ${url} ${init.headers.Authorization}`);
    if (init.method === 'PUT') {
      return new Response(JSON.stringify({ error: { code: 'ALREADY_MATCHED', message: 'matched', ticketId: 't1', matchId: 'm1' } }),
        { status: 409, headers: { 'Content-Type': 'application/json' } });
    }
    return new Response(JSON.stringify({ ticket: ticket({ version: 2, status: 'MATCHED', matchId: 'm1' }), match: match() }), { status: 200 });
  };
  const c = newClient({ fetch, heartbeatMs: 10 });
  const p = c.connect('ws://h:1/v1/ws', 'tok');
  FakeWebSocket.last().accept({ tickets: [ticket()] });
  await p;
  await tick(60);
  assert.equal(calls[0], 'PUT http://h:1/v1/tickets/t1/heartbeat Bearer tok');
  assert.equal(calls[1], 'GET http://h:1/v1/tickets/t1 Bearer tok');
  assert.equal(c.store.ticket('t1').status, 'MATCHED');
  const n = calls.length;
  await tick(40);
  assert.equal(calls.length, n, 'no heartbeats once nothing waits');
  c.close();
});

test('REST helpers decode answers and errors', async () => {
  const fetch = async (url, init) => {
    if (url.endsWith('/v1/auth/guest')) {
      assert.deepEqual(JSON.parse(init.body), { name: 'ada', skill: 1200 });
      return new Response(JSON.stringify({ token: 'tk', userId: 'guest-1' }), { status: 200 });
    }
    if (url.endsWith('/v1/queues')) return new Response(JSON.stringify({ queues: [{ name: 'duel', depth: { global: 2 } }] }), { status: 200 });
    return new Response(JSON.stringify({ error: { code: 'COOLDOWN', message: 'wait' } }), { status: 429, headers: { 'Retry-After': '3' } });
  };
  assert.deepEqual(await MatchgateClient.guest('http://h/', { name: 'ada', skill: 1200 }, { fetch }), { token: 'tk', userId: 'guest-1' });
  const c = new MatchgateClient({ baseUrl: 'http://h', fetch });
  assert.equal((await c.queues())[0].depth.global, 2);
  await assert.rejects(c.joinREST('duel'), (e) => e.code === 'COOLDOWN' && e.status === 429 && e.retryAfterMs === 3000);
  const down = new MatchgateClient({ baseUrl: 'http://h', fetch: async () => { throw new TypeError('connection refused'); } });
  await assert.rejects(down.queues(), (e) => e.code === 'NETWORK');
});

const waitingPlace = (over = {}) => ({
  status: 'WAITING', rank: 5, total: 9, eta: { seconds: 5, low: 4, high: 8 }, pollAfter: 2, ...over,
});
const FAR = '2099-01-01T00:00:00.000Z';
// setImmediate is not among the timers mocked below: it lets promises settle.
const settle = () => new Promise((r) => setImmediate(r));

test('a waiting admission place is asked for after its pollAfter of silence', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const c = newClient({ admissionPollMinMs: 100 });
  const heard = [];
  c.on('admission', (e) => heard.push([e.queue, e.position.status, typeof e.at]));
  const p = c.connect('ws://h/v1/ws', 'tok');
  const ws = FakeWebSocket.last();
  ws.accept();
  await p;
  const asks = () => ws.sent.filter((f) => f.type === 'position');

  const entering = c.enter('drop');
  ws.push({ type: 'entered', re: ws.lastSent('enter').id, position: waitingPlace() });
  await entering;
  t.mock.timers.tick(1900);
  assert.equal(asks().length, 0, 'not asked before pollAfter');
  ws.push({ type: 'admission.position', queue: 'drop', position: waitingPlace({ rank: 4 }) });
  t.mock.timers.tick(1900);
  assert.equal(asks().length, 0, 'a push re-arms the wait');
  t.mock.timers.tick(100);
  assert.equal(asks().length, 1, 'asked after pollAfter of silence');
  assert.equal(asks()[0].queue, 'drop');

  // admission.ready, then the answer to the ask (taken before it) saying
  // WAITING: the place stays READY, and nothing more is asked.
  ws.push({ type: 'admission.ready', queue: 'drop', token: 'tk', expiresAt: FAR });
  ws.push({ type: 'position', re: asks()[0].id, position: waitingPlace({ rank: 0 }) });
  await settle();
  assert.deepEqual(c.admission('drop'), { status: 'READY', token: 'tk', expiresAt: FAR });
  t.mock.timers.tick(10000);
  assert.equal(asks().length, 1, 'a READY place is not polled');
  assert.deepEqual(heard, [['drop', 'WAITING', 'number'], ['drop', 'WAITING', 'number'], ['drop', 'READY', 'number']]);

  // An enter is a new place: it replaces READY.
  const again = c.enter('drop');
  ws.push({ type: 'entered', re: ws.lastSent('enter').id, position: waitingPlace({ rank: 7 }) });
  await again;
  assert.equal(c.admission('drop').rank, 7);
  c.close();
  t.mock.timers.tick(10000);
  assert.equal(asks().length, 1, 'close stops the polls');
});

test('while the socket is down a waiting place is asked for over REST; a queue that is gone ends it', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const calls = [];
  let answer = { status: 200, body: { position: waitingPlace({ rank: 3, pollAfter: 1 }) } };
  const fetch = async (url, init) => {
    calls.push(`${init.method} ${url} ${init.headers.Authorization}`);
    return new Response(JSON.stringify(answer.body), { status: answer.status });
  };
  const c = newClient({ fetch, admissionPollMinMs: 100, reconnectBaseMs: 60000, reconnectCapMs: 60000, random: () => 0.99 });
  const p = c.connect('ws://h:1/v1/ws', 'tok');
  const ws = FakeWebSocket.last();
  ws.accept();
  await p;
  const entering = c.enter('drop q');
  ws.push({ type: 'entered', re: ws.lastSent('enter').id, position: waitingPlace({ pollAfter: 1 }) });
  await entering;
  ws.drop(1006);
  t.mock.timers.tick(1000);
  await settle();
  assert.deepEqual(calls, ['GET http://h:1/v1/admission/drop%20q/position Bearer tok']);
  assert.equal(c.admission('drop q').rank, 3);

  answer = { status: 400, body: { error: { code: 'UNKNOWN_QUEUE', message: 'no such queue' } } };
  t.mock.timers.tick(1000);
  await settle();
  assert.equal(calls.length, 2);
  assert.deepEqual(c.admission('drop q'), { status: 'NOT_ENTERED' });
  t.mock.timers.tick(5000);
  await settle();
  assert.equal(calls.length, 2, 'an ended place is not polled');
  c.close();
});

test('hello lists the live admission places; a place it does not name ended', async () => {
  const c = newClient({ admissionPoll: false, random: () => 0 });
  const p = c.connect('ws://h/v1/ws', 'tok');
  FakeWebSocket.last().accept({
    admission: [{ queue: 'a', position: waitingPlace() }, { queue: 'b', position: { status: 'READY', token: 'tk', expiresAt: FAR } }],
  });
  await p;
  assert.equal(c.admission('a').status, 'WAITING');
  assert.equal(c.admission('b').token, 'tk');

  FakeWebSocket.last().drop(1006);
  await tick(30);
  FakeWebSocket.last().accept({ admission: [{ queue: 'b', position: { status: 'READY', token: 'tk', expiresAt: FAR } }] });
  await tick(0);
  assert.deepEqual(c.admission('a'), { status: 'NOT_ENTERED' }, 'a ended while the socket was away');
  assert.equal(c.admission('b').status, 'READY');

  // A hello without the list (an older server) leaves the places alone.
  FakeWebSocket.last().drop(1006);
  await tick(30);
  FakeWebSocket.last().accept();
  await tick(0);
  assert.equal(c.admission('b').status, 'READY');
  c.close();
});

test('ranking subscriptions: pushes kept, made again after a reconnect, dropped when refused', async () => {
  const c = newClient({ random: () => 0.5 });
  const p = c.connect('ws://h/v1/ws', 't');
  FakeWebSocket.last().accept();
  await p;
  const views = [];
  c.on('ranking', (v) => views.push(v));
  const view = (period, items) => ({ ranking: 'trending', window: 'hour', period, weightsVersion: 1, items });
  const item = (name, rank) => ({ item: name, rank, score: 10 - rank, metrics: {}, parts: {} });

  const sub = c.subscribeRanking('trending', 'hour', { limit: 5 });
  let ws = FakeWebSocket.last();
  const sent = ws.lastSent('subscribe');
  assert.deepEqual({ ...sent, id: 'x' }, { type: 'subscribe', id: 'x', ranking: 'trending', window: 'hour', limit: 5 });
  ws.push({ type: 'subscribed', re: sent.id, ...view('2026-12-02T14', [item('a', 1)]) });
  assert.deepEqual(await sub, view('2026-12-02T14', [item('a', 1)]));
  ws.push({ type: 'ranking.update', ...view('2026-12-02T14', [item('b', 1), item('a', 2)]) });
  assert.deepEqual(c.ranking('trending', 'hour').items.map((i) => i.item), ['b', 'a']);
  assert.equal(views.length, 2);

  // A new socket: the subscription is made again, with its limit.
  ws.drop(1006);
  await tick(10);
  ws = FakeWebSocket.last();
  ws.accept();
  const again = ws.lastSent('subscribe');
  assert.ok(again, 'subscribed again after the reconnect');
  assert.deepEqual([again.ranking, again.window, again.limit], ['trending', 'hour', 5]);
  ws.push({ type: 'subscribed', re: again.id, ...view('2026-12-02T15', []) });
  await tick();
  assert.equal(c.ranking('trending', 'hour').period, '2026-12-02T15');

  // The board is gone on the next server: the subscription is dropped.
  const errors = [];
  c.on('error', (e) => { if (e instanceof Error) errors.push(e); }); // error frames come under "error" too
  ws.drop(1006);
  await tick(10);
  ws = FakeWebSocket.last();
  ws.accept();
  const third = ws.lastSent('subscribe');
  ws.push({ type: 'error', re: third.id, error: { code: 'NOT_FOUND', message: 'no such ranking board' } });
  await tick();
  assert.equal(c.ranking('trending', 'hour'), null);
  assert.deepEqual(errors.map((e) => e.code), ['NOT_FOUND']);
  ws.drop(1006);
  await tick(10);
  FakeWebSocket.last().accept();
  assert.equal(FakeWebSocket.last().lastSent('subscribe'), undefined, 'not made again');

  // Unsubscribed: a push still under way is not kept.
  const s2 = c.subscribeRanking('trending', 'day');
  ws = FakeWebSocket.last();
  ws.push({ type: 'subscribed', re: ws.lastSent('subscribe').id, ...view('2026-12-02', []), window: 'day' });
  await s2;
  const un = c.unsubscribeRanking('trending', 'day');
  ws.push({ type: 'unsubscribed', re: ws.lastSent('unsubscribe').id });
  await un;
  ws.push({ type: 'ranking.update', ...view('2026-12-02', [item('a', 1)]), window: 'day' });
  assert.equal(c.ranking('trending', 'day'), null);
  c.close();
});
