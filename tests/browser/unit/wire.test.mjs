// web/matchgate.js against the wire as package protocol renders it:
// protocol/testdata/wire.json, which a Go test keeps equal to what the
// package renders now. Every server frame is handled and read as the
// server meant it, every command goes out in the protocol's shape, and the
// client's tables of frame types and error codes are the protocol's.
//
//   node --test unit/

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  MatchgateClient, MatchgateError, SERVER_FRAME_TYPES, CLIENT_FRAME_TYPES, RANKING_CLIENT_FRAME_TYPES, ERROR_CODES,
} from '../../../web/matchgate.js';
import { FakeWebSocket } from './fake-websocket.mjs';

const wire = JSON.parse(readFileSync(new URL('../../../protocol/testdata/wire.json', import.meta.url), 'utf8'));

function newClient(extra = {}) {
  FakeWebSocket.instances = [];
  return new MatchgateClient({
    WebSocket: FakeWebSocket,
    fetch: async () => { throw new Error('no fetch in this test'); },
    requestTimeoutMs: 500,
    heartbeatMs: 0,
    ...extra,
  });
}

/**
 * connected opens a client on a fake socket, with the given hello or an
 * empty one; errors collects the errors it reports on "error" (where error
 * frames are emitted too, under their type), hello is what connect
 * resolved with.
 */
async function connected(hello) {
  const c = newClient();
  const errors = [];
  c.on('error', (e) => { if (e instanceof Error) errors.push(e); });
  const p = c.connect('ws://h/v1/ws', 't');
  const ws = FakeWebSocket.last();
  if (hello) {
    ws.readyState = 1;
    ws.push(hello);
  } else {
    ws.accept();
  }
  return { c, ws, errors, hello: await p };
}

/** assertHas checks every member expect names, and only those. */
function assertHas(got, expect, what) {
  assert.ok(got, `${what}: missing`);
  for (const [k, v] of Object.entries(expect)) {
    assert.deepEqual(got[k], v, `${what}.${k}`);
  }
}

// The command each reply frame answers, and what the call resolves with.
const replies = {
  joined: { call: (c) => c.join('duel'), type: 'join', check: (v, f) => assert.deepEqual(v, f.ticket) },
  cancelled: { call: (c) => c.cancel('t3'), type: 'cancel', check: (v, f) => assert.deepEqual(v, f.ticket) },
  'match.update': { call: (c) => c.accept('m1'), type: 'accept', check: (v, f) => assert.deepEqual(v, f.match) },
  status: {
    call: (c) => c.status(), type: 'status',
    check: (v, f) => assert.deepEqual(v, { tickets: f.tickets, matches: f.matches }),
  },
  pong: { call: (c) => c.ping(), type: 'ping', check: (v) => assert.ok(v >= 0, `round trip ${v}`) },
  entered: { call: (c) => c.enter('drop'), type: 'enter', check: (v, f) => assert.deepEqual(v, f.position) },
  position: { call: (c) => c.admissionPosition('drop'), type: 'position', check: (v, f) => assert.deepEqual(v, f.position) },
  subscribed: {
    call: (c) => c.subscribeRanking('trending', 'hour', { limit: 5 }), type: 'subscribe',
    check: (v, f) => assert.deepEqual(v, rankingOf(f)),
  },
  unsubscribed: {
    call: (c) => c.unsubscribeRanking('trending', 'hour'), type: 'unsubscribe',
    check: (v, f, c) => {
      assert.equal(v, undefined);
      assert.equal(c.ranking('trending', 'hour'), null);
    },
  },
  left: {
    call: (c) => c.leaveAdmission('drop'), type: 'leave',
    check: (v, f, c) => {
      assert.equal(v, undefined);
      assert.deepEqual(c.admission('drop'), { status: 'NOT_ENTERED' });
    },
  },
};

/** rankingOf is the view a ranking frame carries. */
function rankingOf(f) {
  return { ranking: f.ranking, window: f.window, period: f.period, weightsVersion: f.weightsVersion, items: f.items };
}

/** subscribeTo subscribes c to the board and window of f, answered empty. */
async function subscribeTo(c, ws, f) {
  const p = c.subscribeRanking(f.ranking, f.window);
  ws.push({ type: 'subscribed', re: ws.lastSent('subscribe').id, ranking: f.ranking, window: f.window,
    period: 'before', weightsVersion: 0, items: [] });
  await p;
}

test('the client lists the protocol frame types and error codes', () => {
  assert.deepEqual([...SERVER_FRAME_TYPES].sort(), [...wire.serverFrameTypes].sort());
  assert.deepEqual([...CLIENT_FRAME_TYPES].sort(), [...wire.clientFrameTypes].sort());
  assert.deepEqual([...RANKING_CLIENT_FRAME_TYPES].sort(), [...wire.rankingClientFrameTypes].sort());
  assert.deepEqual({ ...ERROR_CODES }, Object.fromEntries(wire.errorCodes.map((e) => [e.code, e.status])));
  for (const e of wire.server) assert.ok(SERVER_FRAME_TYPES.includes(e.frame.type), e.example);
});

for (const ex of wire.server) {
  test(`server frame: ${ex.example}`, async () => {
    const isHello = ex.frame.type === 'hello';
    const { c, ws, errors, hello } = await connected(isHello ? ex.frame : undefined);
    // A push of a ranking is kept only while subscribed to it.
    if (ex.frame.type === 'ranking.update') await subscribeTo(c, ws, ex.frame);
    const emitted = [];
    c.on(ex.frame.type, (f) => emitted.push(f));
    const messages = [];
    c.on('message', (f) => messages.push(f));

    if (isHello) {
      emitted.push(hello); // the first frame: connect resolved with it
    } else if (ex.frame.re !== undefined) {
      const r = replies[ex.frame.type];
      assert.ok(r, `no command is answered by ${ex.frame.type}`);
      const pending = r.call(c);
      const sent = ws.lastSent(r.type);
      ws.push({ ...ex.frame, re: sent.id });
      r.check(await pending, ex.frame, c);
    } else {
      ws.push(ex.frame);
    }

    if (!isHello) assert.equal(messages.length, 1, 'emitted under message');
    const e = ex.expect;
    assert.equal(emitted.filter((f) => !(f instanceof Error)).length, 1, `emitted under ${ex.frame.type}`);
    if (e.error) {
      assert.equal(errors.length, 1, 'an error frame without re is reported as a MatchgateError');
      assert.ok(errors[0] instanceof MatchgateError);
      assertHas(errors[0], e.error, 'error');
    } else {
      assert.deepEqual(errors, [], 'handled without error');
    }
    if (e.ticket) assertHas(c.store.ticket(e.ticket.id), e.ticket, 'stored ticket');
    if (e.match) assertHas(c.store.match(e.match.id), e.match, 'stored match');
    for (const t of e.tickets || []) assertHas(c.store.ticket(t.id), t, `stored ticket ${t.id}`);
    for (const m of e.matches || []) assertHas(c.store.match(m.id), m, `stored match ${m.id}`);
    if (e.userId) assert.equal(c.userId, e.userId);
    if (e.node) assert.equal(c.node, e.node);
    if (e.reason) assert.equal(emitted[0].reason, e.reason);
    if (e.more) assert.deepEqual([emitted[0].more, emitted[0].next], [e.more, e.next]);
    // An admission queue's place: the replies answer the command's queue
    // ("drop"), the pushes name theirs.
    if (e.position) assert.deepEqual(c.admission(e.queue || 'drop'), e.position, 'the place kept');
    if (e.token) assert.deepEqual(c.admission(e.queue), { status: 'READY', token: e.token, expiresAt: e.expiresAt });
    // hello's admission list: the user's live places, one per queue.
    for (const a of e.admission || []) assert.deepEqual(c.admission(a.queue), a.position, `the place in ${a.queue}`);
    // A ranking's view: kept while subscribed, under its board and window.
    if (e.ranking) assert.deepEqual(c.ranking(e.ranking, e.window), rankingOf(e), 'the ranking kept');
    c.close();
  });
}

test('every error code rejects a command, and a REST call with its status', async () => {
  for (const ex of wire.errors) {
    const body = ex.body.error;
    const { c, ws, errors } = await connected();
    const pending = c.join('duel');
    ws.push({ ...ex.frame, re: ws.lastSent('join').id });
    assert.deepEqual(errors, [], 'a refused request is its promise\'s, not an "error" event');
    await assert.rejects(pending, (err) => {
      assert.ok(err instanceof MatchgateError);
      assert.deepEqual([err.code, err.message, err.ticketId, err.matchId, err.retryAfterMs],
        [body.code, body.message, body.ticketId || null, body.matchId || null, (body.retryAfter || 0) * 1000], ex.code);
      return true;
    });
    c.close();

    const headers = body.retryAfter ? { 'Retry-After': String(body.retryAfter) } : {};
    const rest = new MatchgateClient({
      baseUrl: 'http://h',
      fetch: async () => new Response(JSON.stringify(ex.body), { status: ex.status, headers }),
    });
    await assert.rejects(rest.joinREST('duel'), (err) => {
      assert.deepEqual([err.code, err.status, err.ticketId, err.matchId, err.retryAfterMs],
        [body.code, ex.status, body.ticketId || null, body.matchId || null, (body.retryAfter || 0) * 1000], `REST ${ex.code}`);
      return true;
    });
  }
});

test('an error answer without a body still carries a protocol code', async () => {
  for (const status of [400, 401, 403, 404, 409, 429, 500, 502, 503]) {
    const c = new MatchgateClient({ baseUrl: 'http://h', fetch: async () => new Response('<html>proxy</html>', { status }) });
    await assert.rejects(c.queues(), (err) => {
      assert.ok(err.code in ERROR_CODES, `${status}: ${err.code} is not a protocol code`);
      assert.equal(err.status, status);
      return true;
    });
  }
});

// The call that sends each client example.
const commands = {
  join: (c) => c.join('duel', { region: 'eu', attributes: { mode: '5v5' } }),
  'join (queue only)': (c) => c.join('duel'),
  cancel: (c) => c.cancel('t1'),
  accept: (c) => c.accept('m1'),
  decline: (c) => c.decline('m1'),
  status: (c) => c.status(),
  ping: (c) => c.ping(),
  enter: (c) => c.enter('drop'),
  position: (c) => c.admissionPosition('drop'),
  leave: (c) => c.leaveAdmission('drop'),
  subscribe: (c) => c.subscribeRanking('trending', 'hour', { limit: 5 }),
  'subscribe (no limit)': (c) => c.subscribeRanking('trending', 'day'),
  unsubscribe: (c) => c.unsubscribeRanking('trending', 'hour'),
};

test('every command goes out in the protocol shape', async () => {
  for (const ex of [...wire.client, ...wire.rankingClient]) {
    const call = commands[ex.example];
    assert.ok(call, `no call sends the example ${JSON.stringify(ex.example)}`);
    const { c, ws } = await connected();
    call(c).catch(() => {}); // closed below, unanswered
    assert.equal(ws.sent.length, 1, ex.example);
    const sent = ws.sent[0];
    assert.equal(typeof sent.id, 'string');
    assert.notEqual(sent.id, '');
    assert.deepEqual({ ...sent, id: ex.frame.id }, ex.frame, ex.example);
    c.close();
  }
});
