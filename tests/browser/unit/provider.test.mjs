// Unit tests of the provider side of web/matchgate.js (provider queues,
// two-sided matching) against a fake WebSocket: the provider commands and
// their frames, the replies resolved by id, the assignment store by
// version whatever order the pushes and replies arrive in, hello's
// providers list, and the events.
//
//   node --test unit/

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  MatchgateClient, MatchgateError, Store, PROVIDER_CLIENT_FRAME_TYPES, PROVIDER_SERVER_FRAME_TYPES,
  SERVER_FRAME_TYPES, CLIENT_FRAME_TYPES,
} from '../../../web/matchgate.js';
import { FakeWebSocket } from './fake-websocket.mjs';

function newClient() {
  FakeWebSocket.instances = [];
  return new MatchgateClient({
    WebSocket: FakeWebSocket,
    fetch: async () => { throw new Error('no fetch in this test'); },
    reconnectBaseMs: 4,
    reconnectCapMs: 20,
    requestTimeoutMs: 500,
    heartbeatMs: 0,
  });
}

async function connected(hello = {}) {
  const c = newClient();
  const p = c.connect('ws://h/v1/ws', 't');
  const ws = FakeWebSocket.last();
  ws.accept(hello);
  await p;
  return { c, ws };
}

const attrs = { languages: ['en', 'fr'], specialties: ['tax'], sessionTypes: ['video'], rating: 4.5 };

const providerView = (over = {}) => ({
  queue: 'advice', userId: 'u1', online: true, capacity: 2, used: 0, attributes: attrs,
  lastSeen: '2026-01-01T00:00:00.000Z', ...over,
});

const assignment = (over = {}) => ({
  id: 'a1', queue: 'advice', status: 'OFFERED', requester: { userId: 'r1', ticketId: 't1' },
  score: 3.9, parts: { specialty: 2, rating: 0.9, load: 1 }, offeredAt: '2026-01-01T00:00:01.000Z',
  acceptBy: '2026-01-01T00:00:16.000Z', version: 1, ...over,
});

/** reply answers the newest frame of type the client sent with frame. */
function reply(ws, type, frame) {
  const sent = ws.lastSent(type);
  assert.ok(sent, `no ${type} sent`);
  ws.push({ ...frame, re: sent.id });
  return sent;
}

test('the provider frame types are the protocol\'s, apart from the players\' wire', () => {
  assert.deepEqual([...PROVIDER_CLIENT_FRAME_TYPES].sort(), ['assignment.accept', 'assignment.decline', 'assignment.end',
    'provider.offline', 'provider.online', 'provider.update']);
  assert.deepEqual([...PROVIDER_SERVER_FRAME_TYPES].sort(), ['assignment', 'assignment.offered', 'assignment.update', 'provider']);
  for (const t of PROVIDER_SERVER_FRAME_TYPES) assert.ok(!SERVER_FRAME_TYPES.includes(t), t);
  for (const t of PROVIDER_CLIENT_FRAME_TYPES) assert.ok(!CLIENT_FRAME_TYPES.includes(t), t);
});

test('providerOnline, providerUpdate and providerOffline send their frames and keep the state', async () => {
  const { c, ws } = await connected();
  const heard = [];
  c.on('providers', (p) => heard.push(p.online));
  const frames = [];
  c.on('provider', (f) => frames.push(f.re));

  const on = c.providerOnline('advice', 2, attrs);
  const sent = reply(ws, 'provider.online', { type: 'provider', provider: providerView() });
  assert.deepEqual(sent, { type: 'provider.online', id: sent.id, queue: 'advice', capacity: 2, attributes: attrs });
  assert.deepEqual(await on, providerView());
  assert.equal(c.provider('advice').capacity, 2);

  // What is not given is left out of the frame: the server keeps it.
  const up = c.providerUpdate('advice', { capacity: 3 });
  const upSent = reply(ws, 'provider.update', { type: 'provider', provider: providerView({ capacity: 3 }) });
  assert.deepEqual(Object.keys(upSent).sort(), ['capacity', 'id', 'queue', 'type']);
  assert.equal((await up).capacity, 3);
  assert.equal(c.provider('advice').capacity, 3);

  const off = c.providerOffline('advice');
  const offSent = reply(ws, 'provider.offline', { type: 'provider', provider: providerView({ online: false, capacity: 3 }) });
  assert.deepEqual(Object.keys(offSent).sort(), ['id', 'queue', 'type']);
  assert.equal((await off).online, false);
  assert.equal(c.provider('advice').online, false);
  assert.equal(c.provider('other'), null);
  assert.deepEqual(heard, [true, true, false]);
  assert.equal(frames.length, 3, 'each reply is emitted under provider');
  assert.ok(frames.every((re) => typeof re === 'string' && re));
});

test('a refused provider command rejects with the server\'s error and changes nothing', async () => {
  const { c, ws } = await connected();
  const on = c.providerOnline('advice', 2, attrs);
  reply(ws, 'provider.online', { type: 'error', error: { code: 'FORBIDDEN', message: 'not a provider' } });
  await assert.rejects(on, (e) => e instanceof MatchgateError && e.code === 'FORBIDDEN');
  assert.equal(c.provider('advice'), null);
  const acc = c.acceptAssignment('a1');
  const sent = reply(ws, 'assignment.accept', { type: 'error', error: { code: 'NOT_FOUND', message: 'no such assignment' } });
  assert.deepEqual(Object.keys(sent).sort(), ['assignmentId', 'id', 'type']);
  await assert.rejects(acc, (e) => e instanceof MatchgateError && e.code === 'NOT_FOUND');
  assert.equal(c.store.assignments.size, 0);
});

test('offers are pushed, answered and ended; the store keeps the highest version', async () => {
  const { c, ws } = await connected();
  const events = [];
  for (const t of ['assignment.offered', 'assignment.update', 'assignment', 'assignments']) {
    c.on(t, (x) => events.push(t + ':' + (x.assignment ? x.assignment.status : x.status)));
  }
  ws.push({ type: 'assignment.offered', assignment: assignment() });
  assert.equal(c.store.assignment('a1').status, 'OFFERED');
  assert.deepEqual(c.store.liveAssignments('advice').map((a) => a.id), ['a1']);

  const acc = c.acceptAssignment('a1');
  const sent = reply(ws, 'assignment.accept', { type: 'assignment', assignment: assignment({ status: 'ACCEPTED', version: 2 }) });
  assert.equal(sent.assignmentId, 'a1');
  assert.equal((await acc).status, 'ACCEPTED');
  // The push of the same change arrives after the reply: nothing changes.
  ws.push({ type: 'assignment.update', assignment: assignment({ status: 'ACCEPTED', version: 2 }) });
  // A stale offer (a late duplicate) does not undo the acceptance.
  ws.push({ type: 'assignment.offered', assignment: assignment() });
  assert.equal(c.store.assignment('a1').status, 'ACCEPTED');

  const end = c.endAssignment('a1');
  reply(ws, 'assignment.end', { type: 'assignment', assignment: assignment({ status: 'ENDED', version: 3, endReason: 'ended' }) });
  assert.equal((await end).status, 'ENDED');
  assert.equal(ws.lastSent('assignment.end').assignmentId, 'a1');
  assert.equal(c.store.assignment('a1').status, 'ENDED');
  assert.deepEqual(c.store.liveAssignments(), []);
  assert.deepEqual(events, [
    'assignments:OFFERED', 'assignment.offered:OFFERED',
    'assignments:ACCEPTED', 'assignment:ACCEPTED',
    'assignment.update:ACCEPTED',
    'assignment.offered:OFFERED',
    'assignments:ENDED', 'assignment:ENDED',
  ]);
});

test('a decline resolves with the declined assignment', async () => {
  const { c, ws } = await connected();
  ws.push({ type: 'assignment.offered', assignment: assignment({ id: 'a2' }) });
  const dec = c.declineAssignment('a2');
  reply(ws, 'assignment.decline', { type: 'assignment', assignment: assignment({ id: 'a2', status: 'DECLINED', version: 2 }) });
  assert.equal((await dec).status, 'DECLINED');
  assert.equal(ws.lastSent('assignment.decline').assignmentId, 'a2');
  assert.equal(c.store.assignment('a2').status, 'DECLINED');
});

test('pushes in any order end in the newest state, thousands of times', () => {
  // Every order of the three versions of one assignment leaves version 3.
  const versions = [
    assignment({ version: 1 }),
    assignment({ status: 'ACCEPTED', version: 2 }),
    assignment({ status: 'ENDED', version: 3 }),
  ];
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const outcomes = new Map();
  for (let i = 0; i < 3000; i++) {
    const s = new Store();
    const order = [...versions, ...versions].sort(() => rand() - 0.5);
    let changes = 0;
    for (const a of order) if (s.putAssignment(a)) changes++;
    const got = s.assignment('a1');
    outcomes.set(got.status, (outcomes.get(got.status) || 0) + 1);
    assert.ok(changes >= 1 && changes <= 3, `changes ${changes}`);
  }
  assert.deepEqual([...outcomes], [['ENDED', 3000]]);
});

test('hello lists the provider\'s state with its live assignments; a queue it does not name is offline', async () => {
  const c = newClient();
  const seen = [];
  c.on('providers', (p) => seen.push(`${p.queue}:${p.online}`));
  const p = c.connect('ws://h/v1/ws', 't');
  let ws = FakeWebSocket.last();
  ws.accept({
    providers: [
      providerView({ used: 1, assignments: [assignment({ status: 'ACCEPTED', version: 2 })] }),
      providerView({ queue: 'coaching', capacity: 1 }),
    ],
  });
  const hello = await p;
  assert.equal(hello.providers.length, 2, 'hello keeps its providers');
  assert.equal(c.provider('advice').used, 1);
  assert.equal(c.store.assignment('a1').status, 'ACCEPTED');
  assert.equal(c.provider('coaching').online, true);

  // Reconnected: only advice is named now.
  ws.drop(1006);
  while (FakeWebSocket.instances.length < 2) await new Promise((r) => setTimeout(r, 5));
  ws = FakeWebSocket.last();
  ws.accept({ providers: [providerView({ used: 1 })] });
  assert.equal(c.provider('coaching').online, false);
  assert.equal(c.provider('advice').online, true);
  // A view without assignments says nothing about them: the store keeps them.
  assert.equal(c.store.assignment('a1').status, 'ACCEPTED');
  assert.deepEqual(seen, ['advice:true', 'coaching:true', 'advice:true', 'coaching:false']);
  c.close();
});

test('a requester\'s provider match is stored as any match, with its provider', async () => {
  const { c, ws } = await connected({ tickets: [{ id: 't1', userId: 'u1', queue: 'advice', status: 'WAITING', version: 1 }] });
  ws.push({
    type: 'match.found',
    match: {
      id: 'm1', queue: 'advice', state: 'PENDING_ACCEPT', players: [{ ticketId: 't1', userId: 'u1', skill: 1500 }],
      provider: { userId: 'p1', score: 3.9, parts: { specialty: 2 } }, acceptBy: '2026-01-01T00:00:16.000Z', version: 1,
    },
  });
  assert.equal(c.store.match('m1').provider.userId, 'p1');
  assert.equal(c.store.ticket('t1').status, 'MATCHED');
  assert.equal(c.provider('advice'), null, "a match's provider is not the user's provider state");
  assert.equal(c.store.assignments.size, 0);
  ws.push({ type: 'match.dissolved', match: { ...c.store.match('m1'), state: 'DISSOLVED', version: 2 } });
  ws.push({ type: 'ticket.update', ticket: { id: 't1', userId: 'u1', queue: 'advice', status: 'WAITING', version: 3 } });
  assert.equal(c.store.ticket('t1').status, 'WAITING');
});
