// A typed use of every method, option and event of the client, imported
// by its package name as a game would after `npm install`. It is only
// type-checked (tsc --noEmit, strict): TestDeclarations packs web/ and
// installs it beside this file first. Each use pins a declaration: a
// method, member or frame declared wrong fails to compile here.

import {
  MatchgateClient, MatchgateError, Emitter, Store, backoffDelay, tokenExpiry,
  TERMINAL_CLOSE_CODES, SERVER_FRAME_TYPES, CLIENT_FRAME_TYPES, RANKING_CLIENT_FRAME_TYPES,
  PROVIDER_SERVER_FRAME_TYPES, PROVIDER_CLIENT_FRAME_TYPES, ERROR_CODES,
} from '@matchgate/client';
import type {
  Assignment, AssignmentStatus, CancelReason, ClientErrorCode, ClientFrame, ClientFrameType,
  CommandReplies, ConnectionState, ErrorCode, Explain, FormedBy, HelloFrame, Match, MatchState,
  MatchgateErrorCode, MatchgateEvents, Position, ProviderView, QueueInfo, RankingView, RankingWindow,
  ServerFrame, ServerFrameType, StateEvent, Ticket, TicketPage, TicketStatus, TicketView,
} from '@matchgate/client';
import { type Equal, expect, exact } from './assert.js';

// ---- the lists and the unions agree ----------------------------------------

expect<Equal<ServerFrameType,
  (typeof SERVER_FRAME_TYPES)[number] | (typeof PROVIDER_SERVER_FRAME_TYPES)[number]>>(true);
expect<Equal<ClientFrameType,
  (typeof CLIENT_FRAME_TYPES)[number] | (typeof RANKING_CLIENT_FRAME_TYPES)[number]
  | (typeof PROVIDER_CLIENT_FRAME_TYPES)[number]>>(true);
expect<Equal<ErrorCode, keyof typeof ERROR_CODES>>(true);
expect<Equal<keyof CommandReplies, ClientFrameType>>(true);
// Each frame type's event carries that frame (error carries more: see below).
type FrameEvents = { [K in Exclude<ServerFrameType, 'error'>]: Extract<ServerFrame, { type: K }> };
expect<Equal<Pick<MatchgateEvents, keyof FrameEvents>, FrameEvents>>(true);
// Every reply frame of CommandReplies is a server frame.
expect<Equal<CommandReplies[ClientFrameType] extends ServerFrame ? true : false, true>>(true);

// The closed sets, as the server spells them (matcher, provider, ranking
// and admission): a value added there is added here on purpose.
expect<Equal<TicketStatus, 'WAITING' | 'MATCHED' | 'CANCELLED' | 'EXPIRED'>>(true);
expect<Equal<CancelReason, 'user' | 'heartbeat' | 'declined' | 'accept_timeout' | 'superseded' | 'banned'>>(true);
expect<Equal<MatchState, 'PENDING_ACCEPT' | 'READY' | 'DISSOLVED'>>(true);
expect<Equal<FormedBy, 'FILLED' | 'FALLBACK' | 'TIMEOUT'>>(true);
expect<Equal<AssignmentStatus, 'OFFERED' | 'ACCEPTED' | 'DECLINED' | 'EXPIRED' | 'ENDED'>>(true);
expect<Equal<Position['status'], 'WAITING' | 'READY' | 'NOT_ENTERED'>>(true);
expect<Equal<RankingWindow, 'hour' | 'day' | 'week'>>(true);
expect<Equal<Explain['missing'], '' | 'players' | 'coherent_group' | 'allocation' | 'provider'>>(true);
expect<Equal<QueueInfo['kind'], 'skill' | 'room' | 'provider' | 'admission'>>(true);
expect<Equal<ConnectionState, 'idle' | StateEvent['state']>>(true);
expect<Equal<ClientErrorCode, 'TIMEOUT' | 'DISCONNECTED' | 'NOT_CONNECTED' | 'NETWORK' | 'BAD_FRAME'>>(true);
expect<Equal<MatchgateErrorCode, ErrorCode | ClientErrorCode>>(true);

const status409: 409 = ERROR_CODES.ALREADY_QUEUED;
const terminal: 4401 | 4403 = TERMINAL_CLOSE_CODES[0];
const delay: number = backoffDelay(2, 500, 15000, () => 0.5) + backoffDelay(0, 500, 15000);
const exp: number | null = tokenExpiry('a.b.c');
void [status409, terminal, delay, exp];

// ---- options and construction ----------------------------------------------

const mg = new MatchgateClient({
  baseUrl: 'http://127.0.0.1:8080',
  reconnectBaseMs: 500,
  reconnectCapMs: 15000,
  requestTimeoutMs: 10000,
  heartbeatMs: 0,
  admissionPoll: true,
  admissionPollMinMs: 1000,
  WebSocket: globalThis.WebSocket,
  fetch: globalThis.fetch,
  random: Math.random,
});
new MatchgateClient();
// The defaults are filled in.
const timeout: number = mg.options.requestTimeoutMs;
const base: string | undefined = mg.options.baseUrl;
void [timeout, base];

// ---- every event, narrowed ---------------------------------------------------

/** Fails to compile when a case is missing: every frame type is handled. */
function never(x: never): never {
  throw new Error(`unhandled ${JSON.stringify(x)}`);
}

function describe(f: ServerFrame): string {
  switch (f.type) {
    case 'hello': return `${f.userId ?? '?'}@${f.node ?? '?'}: ${f.tickets.length} tickets, `
      + `${f.admission?.map((a) => `${a.queue}:${a.position.status}`).join() ?? ''}`
      + `${f.providers?.map((p) => p.queue).join() ?? ''}${f.more ? ` more before ${f.next}` : ''}`;
    case 'status': return `${f.re}: ${f.tickets.length + f.matches.length}`;
    case 'joined': return `${f.ticket.queue} ${f.ticket.status}`;
    case 'cancelled': return `${f.ticket.cancelReason ?? 'none'}`;
    case 'match.update': return `${f.match.state} ${f.match.accepted?.join() ?? ''}`;
    case 'pong': return `pong ${f.re ?? ''}`;
    case 'error': return `${f.error.code}: ${f.error.message} ${f.error.retryAfter ?? 0}`;
    case 'ticket.update': return `${f.ticket.id} v${f.ticket.version} ${f.ticket.relaxed?.join() ?? ''}`;
    case 'match.found': return `${f.match.players.map((p) => p.userId).join()} ${f.match.acceptBy ?? ''}`;
    case 'match.ready': return `${f.match.server?.address ?? ''} ${f.match.server?.session ?? ''}`;
    case 'match.dissolved': return `${f.match.id} ${f.reason ?? ''}`;
    case 'entered': return describePosition(f.position);
    case 'position': return describePosition(f.position);
    case 'left': return 'left';
    case 'admission.position': return `${f.queue ?? ''} ${describePosition(f.position)}`;
    case 'admission.ready': return `${f.queue} ${f.token} until ${f.expiresAt}`;
    case 'subscribed': return `${f.ranking}/${f.window} ${f.items?.length ?? 0}`;
    case 'unsubscribed': return `${f.ranking ?? ''}`;
    case 'ranking.update': return `${f.ranking} ${f.period ?? ''} v${f.weightsVersion ?? 0}: `
      + f.items.map((i) => `${i.rank}. ${i.item} ${i.score ?? '-'} ${Object.keys(i.parts)}`).join();
    case 'provider': return `${f.provider.queue} ${f.provider.used}/${f.provider.capacity}`;
    case 'assignment': return `${f.assignment.status}`;
    case 'assignment.offered': return `${f.assignment.requester.userId} ${f.assignment.acceptBy ?? ''}`;
    case 'assignment.update': return `${f.assignment.endReason ?? ''}`;
    default: return never(f);
  }
}

function describePosition(p: Position): string {
  switch (p.status) {
    case 'WAITING': return `${p.rank + 1}/${p.total} in ${p.eta ? `${p.eta.seconds}s (${p.eta.low}–${p.eta.high ?? '∞'})` : '?'}, ask in ${p.pollAfter}s`;
    case 'READY': return `token ${p.token} until ${p.expiresAt}`;
    case 'NOT_ENTERED': return 'not entered';
    default: return never(p);
  }
}

function describeState(e: StateEvent): string {
  switch (e.state) {
    case 'connecting': return `connecting (${e.attempt})`;
    case 'reconnecting': return `retry in ${e.delayMs ?? 0} ms after ${e.code ?? '-'} ${e.reason ?? ''}`;
    case 'open': return `open on ${e.node ?? '?'}`;
    case 'closed': return `closed ${e.code} ${e.reason}`;
    default: return never(e);
  }
}

function describeQueue(q: QueueInfo): string {
  switch (q.kind) {
    case 'skill':
    case 'room':
    case 'provider':
      return `${q.name}: ${q.players} a match, ${Object.values(q.depth).reduce((a, b) => a + b, 0)} waiting, `
        + `p90 ${q.wait?.p90 ?? '-'}, ${q.providers?.online ?? 0} providers online`;
    case 'admission':
      return `${q.name}: ${q.waiting} waiting at ${q.measuredRate.mean}/s, ETA error ${q.etaError.p50 ?? '-'}`;
    default: return never(q);
  }
}

const offs: Array<() => void> = [];
offs.push(mg.on('message', (f) => console.log(describe(f))));
offs.push(mg.on('hello', (f) => exact<HelloFrame>()(f)));
offs.push(mg.on('status', (f) => console.log(f.tickets.map((t) => t.status))));
offs.push(mg.on('joined', (f) => console.log(f.ticket.deadline)));
offs.push(mg.on('cancelled', (f) => console.log(f.ticket.updatedAt)));
offs.push(mg.on('match.update', (f) => console.log(f.match.bots, f.match.spread)));
offs.push(mg.on('pong', (f) => console.log(f.re)));
offs.push(mg.on('error', (e) => {
  // An error frame, a MatchgateError, or whatever a listener threw.
  if (e instanceof MatchgateError) console.log(e.code, e.status, e.retryAfterMs, e.ticketId, e.matchId);
  else console.log(e);
}));
offs.push(mg.on('ticket.update', (f) => console.log(f.ticket.estimated, f.ticket.attributes?.mode)));
offs.push(mg.on('match.found', (f) => console.log(f.match.formedBy, f.match.provider?.score)));
offs.push(mg.on('match.ready', (f) => console.log(f.match.server?.address)));
offs.push(mg.on('match.dissolved', (f) => console.log(f.reason)));
offs.push(mg.on('entered', (f) => console.log(describePosition(f.position))));
offs.push(mg.on('position', (f) => console.log(describePosition(f.position))));
offs.push(mg.on('left', (f) => console.log(f.re)));
offs.push(mg.on('admission.position', (f) => console.log(f.queue, f.position.status)));
offs.push(mg.on('admission.ready', (f) => console.log(f.token.length, Date.parse(f.expiresAt))));
offs.push(mg.on('subscribed', (f) => console.log(f.period, f.weightsVersion)));
offs.push(mg.on('unsubscribed', (f) => console.log(f.window)));
offs.push(mg.on('ranking.update', (f) => console.log(f.items[0]?.metrics)));
offs.push(mg.on('provider', (f) => console.log(f.provider.online, f.provider.lastSeen)));
offs.push(mg.on('assignment', (f) => console.log(f.assignment.version)));
offs.push(mg.on('assignment.offered', (f) => console.log(f.assignment.parts?.specialty)));
offs.push(mg.on('assignment.update', (f) => console.log(f.assignment.endedAt, f.assignment.acceptedAt)));
offs.push(mg.on('state', (e) => console.log(describeState(e))));
offs.push(mg.on('ticket', (t) => exact<Ticket>()(t)));
offs.push(mg.on('match', (m) => exact<Match>()(m)));
offs.push(mg.on('assignments', (a) => exact<Assignment>()(a)));
offs.push(mg.on('providers', (p) => exact<ProviderView>()(p)));
offs.push(mg.on('ranking', (v) => exact<RankingView>()(v)));
offs.push(mg.on('admission', (e) => console.log(e.queue, describePosition(e.position), new Date(e.at))));
offs.push(mg.once('match.found', ({ match }) => console.log('matched with', match.players)));
const onPong = (f: MatchgateEvents['pong']): void => console.log(f.type);
mg.on('pong', onPong);
mg.off('pong', onPong);
mg.emit('state', { state: 'open', attempt: 0, node: null });
for (const off of offs) off();

// ---- every method --------------------------------------------------------------

async function play(): Promise<void> {
  const guest = await MatchgateClient.guest('http://127.0.0.1:8080', { name: 'ada', skill: 1500, role: 'player' });
  await MatchgateClient.guest('http://127.0.0.1:8080', {}, { fetch: globalThis.fetch });
  await MatchgateClient.guest('http://127.0.0.1:8080');
  const token: string = guest.token;
  const userId: string = guest.userId;

  const hello: HelloFrame = await mg.connect('/v1/ws', token);
  await mg.connect();
  const connected: boolean = mg.connected;
  const state: 'idle' | 'connecting' | 'open' | 'reconnecting' | 'closed' = mg.state;
  const me: string | null = mg.userId ?? mg.node;
  mg.token = token;
  console.log(hello.tickets, connected, state, me, userId);

  for (const q of await mg.queues()) console.log(describeQueue(q));

  const ticket: Ticket = await mg.join('duel', { region: 'eu', attributes: { mode: '5v5' } });
  await mg.join('duel');
  const viaREST: Ticket = await mg.joinREST('duel', { region: 'eu' });
  await mg.joinREST('duel');
  const view: TicketView = await mg.getTicket(ticket.id);
  if (view.explain) console.log(view.explain.missing, view.explain.window, view.explain.estimatedWait);
  console.log(view.match?.id, viaREST.version);
  await mg.heartbeat(ticket.id);
  let page: TicketPage = await mg.history();
  while (page.more) page = await mg.history({ before: page.next, limit: 50 });

  const cancelled: Ticket = await mg.cancel(ticket.id);
  const accepted: Match = await mg.accept('m1');
  const declined: Match = await mg.decline('m1');
  const { tickets, matches } = await mg.status();
  const rtt: number = await mg.ping();
  console.log(cancelled, accepted, declined, tickets, matches, rtt);

  try {
    await mg.join('duel');
  } catch (err) {
    if (err instanceof MatchgateError && err.code === 'ALREADY_QUEUED') console.log(err.ticketId);
    if (err instanceof MatchgateError && err.code === 'TIMEOUT') console.log('no reply', err.message);
  }

  const place: Position = await mg.enter('launch');
  if (place.status === 'READY') console.log(place.token);
  await mg.admissionPosition('launch');
  const held: Position | null = mg.admission('launch');
  await mg.leaveAdmission('launch');
  console.log(held, mg.admissions.get('launch'));

  const top: RankingView = await mg.subscribeRanking('trending', 'hour', { limit: 5 });
  await mg.subscribeRanking('trending', 'day');
  const heard: RankingView | null = mg.ranking('trending', 'hour');
  await mg.unsubscribeRanking('trending', 'hour');
  console.log(top.items.map((i) => i.item), heard, mg.rankings.size);

  const online: ProviderView = await mg.providerOnline('advice', 2, { languages: ['en'], rating: 4.5 });
  await mg.providerOnline('advice', 1);
  await mg.providerUpdate('advice', { capacity: 3 });
  await mg.providerUpdate('advice', { attributes: { specialties: ['career'] } });
  await mg.providerUpdate('advice');
  const offline: ProviderView = await mg.providerOffline('advice');
  const known: ProviderView | null = mg.provider('advice');
  console.log(online.attributes.rating, offline.online, known, mg.providers.get('advice'));
  const a: Assignment = await mg.acceptAssignment('m2');
  await mg.declineAssignment('m2');
  await mg.endAssignment('m2');
  console.log(a.requester.ticketId, a.offeredAt);

  // request: the fields each command needs, and the reply it resolves with.
  const joined = await mg.request('join', { queue: 'duel', region: 'eu' });
  exact<Ticket>()(joined.ticket);
  const pong = await mg.request('ping');
  exact<'pong'>()(pong.type);
  const sub = await mg.request('subscribe', { ranking: 'trending', window: 'week', limit: 3 });
  exact<'subscribed'>()(sub.type);
  const prov = await mg.request('provider.online', { queue: 'advice', capacity: 1 });
  exact<ProviderView>()(prov.provider);
  const asg = await mg.request('assignment.end', { assignmentId: 'm2' });
  exact<Assignment>()(asg.assignment);

  mg.close();
  mg.close(4000, 'done');
}
void play;

// ---- the store, the emitter and the error ---------------------------------------

const store: Store = mg.store;
const waiting: Ticket[] = store.waiting();
const current: Ticket | null = store.current();
const t1: Ticket | null = store.ticket('t1');
const m1: Match | null = store.match('m1') ?? store.matchForTicket('t1');
const live: Assignment[] = store.liveAssignments('advice').concat(store.liveAssignments());
const a1: Assignment | null = store.assignment('m2');
if (m1) {
  const seated: Ticket[] = store.seat(m1);
  const changed: boolean = store.putMatch(m1) || store.putTicket(t1) || store.putAssignment(a1) || store.putTicket(undefined);
  console.log(seated, changed);
}
console.log(waiting, current, live, store.tickets.size, store.matches.size, store.assignments.size);
new Store().clear();

// An emitter of one's own events.
const bus = new Emitter<{ score: number; done: undefined }>();
bus.on('score', (n) => exact<number>()(n));
bus.emit('score', 3);
bus.emit('done');
const loose = new Emitter();
loose.on('anything', (data) => console.log(data));
loose.emit('anything');

const err = new MatchgateError('ALREADY_MATCHED', 'matched', { matchId: 'm1', status: 409 });
const code: MatchgateErrorCode = err.code;
const name: 'MatchgateError' = err.name;
const fromFrame: MatchgateError = MatchgateError.fromWire({ code: 'RATE_LIMITED', message: 'slow down', retryAfter: 2 });
const fromNothing: MatchgateError = MatchgateError.fromWire(undefined, { status: 503, retryAfterMs: 1000 });
const isError: Error = fromFrame;
console.log(code, name, fromNothing.retryAfterMs, isError.message);

// A command frame as a client writes it on the wire.
const frame: ClientFrame = { type: 'join', id: 'r1', queue: 'duel', attributes: { mode: '5v5' } };
console.log(frame);
