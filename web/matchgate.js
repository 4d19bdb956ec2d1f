// matchgate.js — a JavaScript client for the matchgate protocol.
//
// One ES module, no dependencies, no build step: copy it into a game's web
// client, or import it from a page served by the gateway at /matchgate.js.
// It runs in browsers and in any runtime with WebSocket and fetch (pass
// them in the options where they are not globals).
//
//   import { MatchgateClient } from './matchgate.js';
//   const { token } = await MatchgateClient.guest(location.origin, { name: 'ada', skill: 1500 });
//   const mg = new MatchgateClient();
//   mg.on('match.found', ({ match }) => console.log('matched with', match.players));
//   await mg.connect('/v1/ws', token);          // resolves with the first hello
//   const ticket = await mg.join('duel');       // resolves with the WAITING ticket
//
// What it does for you:
//   - request ids: join, cancel, accept, decline, status and ping return
//     promises settled by the reply that carries the same id in "re"; error
//     replies reject with a MatchgateError (code, ticketId, matchId,
//     retryAfterMs);
//   - events: every server frame is emitted under its type ("hello",
//     "ticket.update", "match.found", …) and under "message"; the client also
//     emits "state" (connection state), "ticket", "match" and
//     "assignments" (the store changed), "providers" (a provider's state in
//     a queue was heard; plural, since "provider" is the reply frame's
//     type), and "error" for frames that could not be handled;
//   - reconnects after a lost connection with exponential backoff and full
//     jitter, and stops on terminal close codes (4401 token expired, 4403);
//   - a store of tickets and matches that keeps the highest version seen in a
//     hello, a push, a reply or a REST answer, so a stale frame never
//     overwrites a newer state;
//   - heartbeats: while a ticket is WAITING it is kept alive over REST
//     (PUT /v1/tickets/{id}/heartbeat), connected or not;
//   - admission queues (waiting rooms): enter, admissionPosition and
//     leaveAdmission, and the user's place in each queue from their replies,
//     the admission.position and admission.ready pushes and hello's
//     admission list (admission()); while a place is WAITING and nothing is
//     heard of it for its pollAfter, the client asks for it (over the socket,
//     or over REST while the socket is down);
//   - provider queues (two-sided matching), for a token whose role is
//     provider: providerOnline, providerUpdate and providerOffline, and
//     acceptAssignment, declineAssignment and endAssignment; the provider's
//     state in each queue (provider()) from the replies and hello's
//     providers list, and its assignments in the store, newest version of
//     each, from the replies and the assignment.offered and
//     assignment.update pushes;
//   - ranking boards: subscribeRanking and unsubscribeRanking, the board's
//     Top from the subscribed reply and each ranking.update push
//     (ranking()), emitted as "ranking"; the subscriptions are made again
//     after every reconnect.

/**
 * @typedef {'WAITING'|'MATCHED'|'CANCELLED'|'EXPIRED'} TicketStatus
 *
 * @typedef {object} Ticket
 * @property {string} id
 * @property {string} userId
 * @property {string} queue
 * @property {string} region
 * @property {TicketStatus} status
 * @property {number} skill
 * @property {boolean} estimated
 * @property {Object<string,string>} [attributes]
 * @property {string} enqueuedAt   RFC 3339 with milliseconds
 * @property {string|null} deadline
 * @property {string|null} matchId
 * @property {string|null} cancelReason  "user", "heartbeat", "declined", "accept_timeout", …
 * @property {string|null} [updatedAt]
 * @property {number} version      grows with every change: keep the highest
 *
 * @typedef {object} Player
 * @property {string} ticketId
 * @property {string} userId
 * @property {number} skill
 *
 * @typedef {object} Match
 * @property {string} id
 * @property {string} queue
 * @property {string} region
 * @property {'PENDING_ACCEPT'|'READY'|'DISSOLVED'|string} state
 * @property {'FILLED'|'FALLBACK'|'TIMEOUT'|string} formedBy
 * @property {Player[]} players
 * @property {number} bots
 * @property {number} spread
 * @property {{address: string, session: string}|null} server
 * @property {string|null} acceptBy  set while the players must accept
 * @property {string} [createdAt]
 * @property {number} version
 *
 * @typedef {object} QueueInfo
 * @property {string} name
 * @property {string} kind             "skill" or "room"
 * @property {number} players
 * @property {string[]} regions
 * @property {Object<string,number>} depth   waiting tickets per region
 *
 * @typedef {object} TicketView  the answer of GET /v1/tickets/{id}
 * @property {Ticket} ticket
 * @property {Match|null} match
 * @property {object} [explain]  why no match yet, when the server says
 *
 * @typedef {object} Position  a place in an admission queue
 * @property {'WAITING'|'READY'|'NOT_ENTERED'} status
 * @property {number} [rank]       WAITING: the waiters ahead (zero-based)
 * @property {number} [total]      WAITING: the line's length
 * @property {{seconds: number, low: number, high: number|null}} [eta]
 *           WAITING: seconds from now; absent when it cannot be predicted,
 *           high null without an upper bound
 * @property {number} [pollAfter]  WAITING: seconds before asking again without a socket
 * @property {string} [token]      READY: the entry token
 * @property {string} [expiresAt]  READY: the end of the token's life
 *
 * @typedef {object} RankedItem  an item's place in a ranking
 * @property {string} item
 * @property {number} rank              1 is the top
 * @property {number|null} score        null when not finite
 * @property {Object<string,number|null>} metrics
 * @property {Object<string,number|null>} parts   weight × transformed metric, by metric
 *
 * @typedef {object} RankingView  a board's Top of one window's current period
 * @property {string} ranking           the board
 * @property {string} window            "hour", "day" or "week"
 * @property {string} period            e.g. "2026-12-02T14" for an hour
 * @property {number} weightsVersion
 * @property {RankedItem[]} items
 *
 * @typedef {object} ProviderAttributes  what a provider offers
 * @property {string[]} [languages]
 * @property {string[]} [specialties]   the first is the primary one
 * @property {string[]} [sessionTypes]
 * @property {number} rating            0–5
 *
 * @typedef {object} Assignment  a requester in one of a provider's slots
 * @property {string} id                the match's id
 * @property {string} queue
 * @property {'OFFERED'|'ACCEPTED'|'DECLINED'|'EXPIRED'|'ENDED'|string} status
 * @property {{userId: string, ticketId: string}} requester
 * @property {number} score             the provider's fit, the sum of parts
 * @property {Object<string,number>} [parts]   weight × term, by term
 * @property {string} offeredAt
 * @property {string|null} acceptBy     OFFERED: the end of the accept window
 * @property {string} [acceptedAt]
 * @property {string} [endedAt]
 * @property {string} [endReason]
 * @property {number} version           grows with every change: keep the highest
 *
 * @typedef {object} ProviderView  a provider's state in one provider queue
 * @property {string} queue
 * @property {string} userId
 * @property {boolean} online
 * @property {number} capacity
 * @property {number} used              slots its assignments hold
 * @property {ProviderAttributes} attributes
 * @property {string} lastSeen
 * @property {Assignment[]} [assignments]   its live assignments, when listed
 *
 * @typedef {object} Frame  any server→client frame
 * @property {string} type
 * @property {string} [re]
 *
 * @typedef {'idle'|'connecting'|'open'|'reconnecting'|'closed'} ConnectionState
 *
 * @typedef {object} StateEvent
 * @property {ConnectionState} state
 * @property {number} attempt        consecutive failed attempts so far
 * @property {number} [delayMs]      with "reconnecting": when the next attempt starts
 * @property {number} [code]         close code of the connection that ended
 * @property {string} [reason]
 * @property {string} [node]         with "open": the gateway node from hello
 *
 * @typedef {object} ClientOptions
 * @property {string} [baseUrl]        REST base (default: derived from the WebSocket URL)
 * @property {number} [reconnectBaseMs=500]   first backoff ceiling
 * @property {number} [reconnectCapMs=15000]  largest backoff ceiling
 * @property {number} [requestTimeoutMs=10000] how long a request waits for its reply
 * @property {number} [heartbeatMs=10000]      heartbeat period for WAITING tickets (0: off)
 * @property {boolean} [admissionPoll=true]   ask for a WAITING admission place after its pollAfter of silence
 * @property {number} [admissionPollMinMs=1000] the shortest such wait
 * @property {typeof WebSocket} [WebSocket]   default: globalThis.WebSocket
 * @property {typeof fetch} [fetch]           default: globalThis.fetch
 * @property {() => number} [random]          default: Math.random (tests make it fixed)
 */

/** Close codes after which reconnecting with the same token cannot help. */
export const TERMINAL_CLOSE_CODES = Object.freeze([4401, 4403]);

/**
 * SERVER_FRAME_TYPES are the frames the server sends. Each is emitted under
 * its type, as is a type not listed here (a newer server's).
 */
export const SERVER_FRAME_TYPES = Object.freeze([
  'hello', 'joined', 'cancelled', 'match.update', 'status', 'pong', 'error',
  'ticket.update', 'match.found', 'match.ready', 'match.dissolved',
  'entered', 'position', 'left', 'admission.position', 'admission.ready',
  'subscribed', 'unsubscribed', 'ranking.update',
]);
/** CLIENT_FRAME_TYPES are the commands join, cancel, … ping and enter, … send. */
export const CLIENT_FRAME_TYPES = Object.freeze([
  'join', 'cancel', 'accept', 'decline', 'status', 'ping', 'enter', 'position', 'leave',
]);
/** RANKING_CLIENT_FRAME_TYPES are the commands of subscribeRanking and unsubscribeRanking (protocol.RankingClientFrameTypes). */
export const RANKING_CLIENT_FRAME_TYPES = Object.freeze(['subscribe', 'unsubscribe']);
/**
 * PROVIDER_SERVER_FRAME_TYPES are the frames only a provider is sent: the
 * replies provider and assignment, and the pushes assignment.offered and
 * assignment.update. They are apart from SERVER_FRAME_TYPES, which is the
 * players' wire (protocol/testdata/wire.json).
 */
export const PROVIDER_SERVER_FRAME_TYPES = Object.freeze([
  'provider', 'assignment', 'assignment.offered', 'assignment.update',
]);
/** PROVIDER_CLIENT_FRAME_TYPES are the commands of a provider (protocol.ProviderClientFrameTypes). */
export const PROVIDER_CLIENT_FRAME_TYPES = Object.freeze([
  'provider.online', 'provider.update', 'provider.offline',
  'assignment.accept', 'assignment.decline', 'assignment.end',
]);

/**
 * ERROR_CODES are the server's error codes and the HTTP status of each
 * over REST (the same codes arrive in WebSocket error frames).
 */
export const ERROR_CODES = Object.freeze({
  BAD_REQUEST: 400,
  UNKNOWN_QUEUE: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  ADMISSION_REQUIRED: 403,
  NOT_FOUND: 404,
  ALREADY_QUEUED: 409,
  ALREADY_MATCHED: 409,
  ALREADY_CANCELLED: 409,
  ALREADY_CLAIMED: 409,
  NOT_CLAIMED: 409,
  RATE_LIMITED: 429,
  COOLDOWN: 429,
  INTERNAL: 500,
  UNAVAILABLE: 503,
});

/**
 * MatchgateError is a refused request: the server's error code (one of
 * ERROR_CODES) and message, and the ticket or match it concerns
 * (ALREADY_QUEUED carries the waiting ticket's id, ALREADY_MATCHED the
 * match's). Client-side failures use their own codes: TIMEOUT,
 * DISCONNECTED, NOT_CONNECTED, NETWORK, BAD_FRAME.
 */
export class MatchgateError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   * @param {{ticketId?: string|null, matchId?: string|null, status?: number, retryAfterMs?: number}} [extra]
   */
  constructor(code, message, extra = {}) {
    super(message || code);
    this.name = 'MatchgateError';
    /** @type {string} */
    this.code = code;
    /** @type {string|null} */
    this.ticketId = extra.ticketId || null;
    /** @type {string|null} */
    this.matchId = extra.matchId || null;
    /** HTTP status for REST errors, else 0. @type {number} */
    this.status = extra.status || 0;
    /**
     * How long to wait before retrying (429, 503): Retry-After over REST,
     * the error's retryAfter over WebSocket; else 0. @type {number}
     */
    this.retryAfterMs = extra.retryAfterMs || 0;
  }

  /**
   * fromWire builds the error of an error frame or REST error body. Its
   * retryAfter (whole seconds, with 429 and 503) is what a WebSocket client
   * has for the Retry-After header of REST; extra's, from the header, wins.
   * @param {{code?: string, message?: string, ticketId?: string, matchId?: string, retryAfter?: number}|undefined} e
   * @param {{status?: number, retryAfterMs?: number}} [extra]
   */
  static fromWire(e, extra = {}) {
    const w = e || {};
    const retryAfterMs = w.retryAfter > 0 ? w.retryAfter * 1000 : 0;
    return new MatchgateError(w.code || 'INTERNAL', w.message || 'request failed', {
      ticketId: w.ticketId, matchId: w.matchId, ...extra, retryAfterMs: extra.retryAfterMs || retryAfterMs,
    });
  }
}

/**
 * backoffDelay is "full jitter": a uniformly random delay between 0 and
 * min(cap, base·2^attempt). A fleet of clients dropped by one node restart
 * spreads its reconnects over the window instead of arriving together.
 * @param {number} attempt  0 for the first retry
 * @param {number} baseMs
 * @param {number} capMs
 * @param {() => number} [random]
 */
export function backoffDelay(attempt, baseMs, capMs, random = Math.random) {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 30));
  return Math.floor(random() * ceiling);
}

/**
 * tokenExpiry reads the exp claim of a JWT (no verification: the server
 * verifies; this only avoids reconnecting with a dead token).
 * @param {string} token
 * @returns {number|null} milliseconds since the epoch, or null when unknown
 */
export function tokenExpiry(token) {
  try {
    const b64 = String(token).split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    const json = typeof atob === 'function'
      ? atob(b64)
      : globalThis.Buffer.from(b64, 'base64').toString('utf8');
    const exp = JSON.parse(json).exp;
    return typeof exp === 'number' ? exp * 1000 : null;
  } catch {
    return null;
  }
}

/**
 * Emitter is a minimal event emitter. Listeners that throw do not stop the
 * others; the exception is reported on "error" (or rethrown asynchronously
 * when nobody listens to "error").
 */
export class Emitter {
  constructor() {
    /** @type {Map<string, Set<Function>>} */
    this._listeners = new Map();
  }

  /**
   * on adds a listener and returns a function that removes it.
   * @param {string} type
   * @param {(data: any) => void} fn
   * @returns {() => void}
   */
  on(type, fn) {
    let set = this._listeners.get(type);
    if (!set) this._listeners.set(type, (set = new Set()));
    set.add(fn);
    return () => this.off(type, fn);
  }

  /**
   * once adds a listener called at most once.
   * @param {string} type
   * @param {(data: any) => void} fn
   * @returns {() => void}
   */
  once(type, fn) {
    const off = this.on(type, (data) => {
      off();
      fn(data);
    });
    return off;
  }

  /**
   * off removes a listener.
   * @param {string} type
   * @param {Function} fn
   */
  off(type, fn) {
    const set = this._listeners.get(type);
    if (set) set.delete(fn);
  }

  /**
   * emit calls every listener of type with data.
   * @param {string} type
   * @param {any} [data]
   */
  emit(type, data) {
    const set = this._listeners.get(type);
    if (!set) return;
    for (const fn of [...set]) {
      try {
        fn(data);
      } catch (err) {
        if (type !== 'error' && this._listeners.get('error')?.size) this.emit('error', err);
        else setTimeout(() => { throw err; });
      }
    }
  }
}

/**
 * Store keeps the newest known version of every ticket, match and (for a
 * provider) assignment. An object with a lower version than the one held
 * is ignored; a missing version counts as 0.
 */
export class Store {
  constructor() {
    /** @type {Map<string, Ticket>} */
    this.tickets = new Map();
    /** @type {Map<string, Match>} */
    this.matches = new Map();
    /** @type {Map<string, Assignment>} */
    this.assignments = new Map();
  }

  /**
   * putTicket stores t unless an equal or newer version is held.
   * @param {Ticket|null|undefined} t
   * @returns {boolean} whether the store changed
   */
  putTicket(t) {
    if (t && t.status === 'WAITING') {
      const m = this._seatedIn(t.id);
      if (m) t = seated(t, m);
    }
    return put(this.tickets, t);
  }

  /**
   * seat marks the WAITING tickets seated in m as MATCHED. A formed match
   * is announced by match.found alone (the tickets' own updates need not
   * follow), so the store draws the conclusion itself. The version stays
   * the ticket's own: any state the server sends later still wins.
   * @param {Match} m
   * @returns {Ticket[]} the tickets that changed
   */
  seat(m) {
    if (!m || m.state === 'DISSOLVED') return [];
    const changed = [];
    for (const p of m.players || []) {
      const t = this.tickets.get(p.ticketId);
      if (t && t.status === 'WAITING') {
        const u = seated(t, m);
        this.tickets.set(u.id, u);
        changed.push(u);
      }
    }
    return changed;
  }

  /**
   * @param {string} ticketId
   * @returns {Match|null} a match, not dissolved, that seats the ticket
   */
  _seatedIn(ticketId) {
    for (const m of this.matches.values()) {
      if (m.state !== 'DISSOLVED' && (m.players || []).some((p) => p.ticketId === ticketId)) return m;
    }
    return null;
  }

  /**
   * putMatch stores m unless an equal or newer version is held.
   * @param {Match|null|undefined} m
   * @returns {boolean} whether the store changed
   */
  putMatch(m) {
    return put(this.matches, m);
  }

  /**
   * putAssignment stores a unless an equal or newer version is held.
   * @param {Assignment|null|undefined} a
   * @returns {boolean} whether the store changed
   */
  putAssignment(a) {
    return put(this.assignments, a);
  }

  /** @param {string} id */
  assignment(id) {
    return this.assignments.get(id) || null;
  }

  /**
   * liveAssignments lists the OFFERED and ACCEPTED assignments, oldest
   * offer first; queue, when given, keeps that queue's only.
   * @param {string} [queue]
   * @returns {Assignment[]}
   */
  liveAssignments(queue) {
    return [...this.assignments.values()]
      .filter((a) => (a.status === 'OFFERED' || a.status === 'ACCEPTED') && (!queue || a.queue === queue))
      .sort((x, y) => String(x.offeredAt || '').localeCompare(String(y.offeredAt || '')));
  }

  /** @param {string} id */
  ticket(id) {
    return this.tickets.get(id) || null;
  }

  /** @param {string} id */
  match(id) {
    return this.matches.get(id) || null;
  }

  /**
   * waiting lists the WAITING tickets.
   * @returns {Ticket[]}
   */
  waiting() {
    return [...this.tickets.values()].filter((t) => t.status === 'WAITING');
  }

  /**
   * matchForTicket finds the match a ticket is seated in: by the ticket's
   * matchId, or (when match.found arrived before the ticket's own update)
   * by the match's players.
   * @param {string} ticketId
   * @returns {Match|null}
   */
  matchForTicket(ticketId) {
    const t = this.tickets.get(ticketId);
    if (t && t.matchId && this.matches.has(t.matchId)) return this.matches.get(t.matchId);
    let best = null;
    for (const m of this.matches.values()) {
      if ((m.players || []).some((p) => p.ticketId === ticketId)) {
        if (!best || String(m.createdAt || '') > String(best.createdAt || '')) best = m;
      }
    }
    return best;
  }

  /**
   * current is the ticket a single-queue UI shows: the WAITING one, else
   * the most recently changed one.
   * @returns {Ticket|null}
   */
  current() {
    let best = null;
    for (const t of this.tickets.values()) {
      if (t.status === 'WAITING') return t;
      if (!best || stamp(t) > stamp(best)) best = t;
    }
    return best;
  }

  clear() {
    this.tickets.clear();
    this.matches.clear();
    this.assignments.clear();
  }
}

/**
 * @param {Ticket} t
 * @param {Match} m
 * @returns {Ticket}
 */
function seated(t, m) {
  return { ...t, status: 'MATCHED', matchId: m.id, updatedAt: m.createdAt || t.updatedAt || null };
}

/** @param {Ticket} t */
function stamp(t) {
  return String(t.updatedAt || t.enqueuedAt || '');
}

/**
 * @param {Map<string, any>} map
 * @param {any} obj
 */
function put(map, obj) {
  if (!obj || typeof obj !== 'object' || !obj.id) return false;
  const old = map.get(obj.id);
  if (old && (Number(obj.version) || 0) <= (Number(old.version) || 0)) return false;
  map.set(obj.id, obj);
  return true;
}

/**
 * MatchgateClient holds one WebSocket to a gateway (reconnecting as needed)
 * and speaks the REST API with the same token.
 */
export class MatchgateClient extends Emitter {
  /** @param {ClientOptions} [options] */
  constructor(options = {}) {
    super();
    this.options = {
      reconnectBaseMs: 500,
      reconnectCapMs: 15000,
      requestTimeoutMs: 10000,
      heartbeatMs: 10000,
      admissionPoll: true,
      admissionPollMinMs: 1000,
      ...options,
    };
    /** The tickets and matches seen so far, newest version of each. */
    this.store = new Store();
    /** The user's place in each admission queue, last heard. @type {Map<string, Position>} */
    this.admissions = new Map();
    /** A provider's state in each provider queue, last heard. @type {Map<string, ProviderView>} */
    this.providers = new Map();
    /** The Top of each subscribed board's window, last heard, by "board/window". @type {Map<string, RankingView>} */
    this.rankings = new Map();
    /** @type {ConnectionState} */
    this.state = 'idle';
    /** The user id from the last hello. @type {string|null} */
    this.userId = null;
    /** The gateway node from the last hello. @type {string|null} */
    this.node = null;
    /** @type {string|null} */
    this.token = null;

    this._url = '';
    this._ws = null;
    this._want = false;      // connect() called and close() not since
    this._attempt = 0;       // consecutive failures
    this._seq = 0;
    this._retryTimer = null;
    this._heartbeatTimer = null;
    /** @type {Map<string, any>} per admission queue: the timer of its next poll */
    this._admissionTimers = new Map();
    /** @type {Map<string, {resolve: Function, reject: Function, timer: any, type: string}>} */
    this._pending = new Map();
    /** @type {Map<string, {ranking: string, window: string, limit?: number, pending: boolean}>} the ranking subscriptions to hold */
    this._rankingSubs = new Map();
    /** @type {Set<Function>} waiters for the next hello */
    this._helloWaiters = new Set();
  }

  // ---- REST helpers ---------------------------------------------------

  /**
   * guest signs in as a new guest (servers with guests enabled only);
   * role "provider" mints a provider's token.
   * @param {string} baseUrl  e.g. location.origin
   * @param {{name?: string, skill?: number, role?: 'player'|'provider'}} [who]
   * @param {{fetch?: typeof fetch}} [options]
   * @returns {Promise<{token: string, userId: string}>}
   */
  static async guest(baseUrl, who = {}, options = {}) {
    return restCall(options.fetch || globalThis.fetch, 'POST', joinURL(baseUrl, '/v1/auth/guest'), null, who);
  }

  /**
   * queues lists the queues with their depths (and, where the server
   * reports them, matches per minute and wait percentiles). No token needed.
   * @returns {Promise<QueueInfo[]>}
   */
  async queues() {
    const body = await this._rest('GET', '/v1/queues');
    return (body && body.queues) || [];
  }

  /**
   * getTicket fetches a ticket with its match (the reconnect fallback) and
   * merges both into the store.
   * @param {string} ticketId
   * @returns {Promise<TicketView>}
   */
  async getTicket(ticketId) {
    const view = await this._rest('GET', `/v1/tickets/${encodeURIComponent(ticketId)}`);
    this._putTicket(view.ticket);
    this._putMatch(view.match);
    return view;
  }

  /**
   * history fetches a page of the user's resolved tickets, newest first,
   * with their matches, and merges them into the store. A hello or status
   * frame holds only the newest few; when its `more` is true, pass its
   * `next` as `before`, then each page's `next` while `more` holds.
   * @param {{before?: string, limit?: number}} [opts]  limit 1..100 (default 20)
   * @returns {Promise<{tickets: Ticket[], matches: Match[], more?: boolean, next?: string}>}
   */
  async history(opts = {}) {
    const q = new URLSearchParams();
    if (opts.before) q.set('before', opts.before);
    if (opts.limit) q.set('limit', String(opts.limit));
    const qs = q.toString();
    const page = await this._rest('GET', '/v1/tickets' + (qs ? '?' + qs : ''));
    for (const t of page.tickets || []) this._putTicket(t);
    for (const m of page.matches || []) this._putMatch(m);
    return page;
  }

  /**
   * heartbeat keeps a WAITING ticket alive (the client does this by itself
   * every heartbeatMs while a ticket waits).
   * @param {string} ticketId
   */
  async heartbeat(ticketId) {
    await this._rest('PUT', `/v1/tickets/${encodeURIComponent(ticketId)}/heartbeat`);
  }

  /**
   * joinREST creates a ticket over REST, for clients without a socket.
   * @param {string} queue
   * @param {{region?: string, attributes?: Object<string,string>}} [opts]
   * @returns {Promise<Ticket>}
   */
  async joinREST(queue, opts = {}) {
    const body = await this._rest('POST', `/v1/queues/${encodeURIComponent(queue)}/tickets`, {
      region: opts.region || '', attributes: opts.attributes,
    });
    this._putTicket(body.ticket);
    this._scheduleHeartbeat();
    return body.ticket;
  }

  // ---- connection -----------------------------------------------------

  /**
   * connect opens the socket and keeps it open (reconnecting with backoff)
   * until close(). It resolves with the first hello frame; it rejects only
   * when the client is closed first or a terminal close code arrives.
   * @param {string} [url]  ws(s)://host/v1/ws, an http(s) base, or a path
   *                        such as "/v1/ws" resolved against the page
   * @param {string} [token]
   * @returns {Promise<Frame>}
   */
  connect(url, token) {
    if (this._ws) {
      // connect() again (a new token, another node): replace the socket.
      const old = this._ws;
      this._ws = null;
      detach(old);
      try { old.close(1000, 'reconnecting'); } catch { /* already closing */ }
      this._failPending('DISCONNECTED', 'the client connected again', true);
    }
    clearTimeout(this._retryTimer);
    this._url = wsURL(url || '/v1/ws');
    if (token !== undefined) this.token = token;
    if (!this.options.baseUrl) this.options.baseUrl = httpBase(this._url);
    this._want = true;
    this._attempt = 0;
    const hello = this._nextHello();
    // A caller that never awaits the hello must not see an unhandled
    // rejection when the client is closed first; one that awaits still does.
    hello.catch(() => {});
    this._open();
    return hello;
  }

  /**
   * close closes the socket for good (no reconnect) and rejects the
   * requests still waiting for a reply.
   * @param {number} [code=1000]
   * @param {string} [reason]
   */
  close(code = 1000, reason = 'client closed') {
    this._want = false;
    clearTimeout(this._retryTimer);
    clearTimeout(this._heartbeatTimer);
    this._heartbeatTimer = null;
    this._stopAdmissionPolls();
    const ws = this._ws;
    this._ws = null;
    if (ws) {
      detach(ws);
      try { ws.close(code, reason); } catch { /* already closing */ }
    }
    this._failPending('NOT_CONNECTED', 'the client was closed');
    this._rejectHello(new MatchgateError('NOT_CONNECTED', 'the client was closed'));
    this._setState('closed', { code, reason });
  }

  /** @returns {boolean} whether the socket is open now */
  get connected() {
    return !!this._ws && this._ws.readyState === 1 && this.state === 'open';
  }

  // ---- commands -------------------------------------------------------

  /**
   * join queues the user; it resolves with the WAITING ticket.
   * ALREADY_QUEUED rejects with the waiting ticket's id in error.ticketId.
   * @param {string} queue
   * @param {{region?: string, attributes?: Object<string,string>}} [opts]
   * @returns {Promise<Ticket>}
   */
  async join(queue, opts = {}) {
    // A region not given is left out of the frame, as attributes are.
    const f = await this.request('join', { queue, region: opts.region || undefined, attributes: opts.attributes });
    return f.ticket;
  }

  /**
   * cancel cancels a WAITING ticket; it resolves with the CANCELLED ticket.
   * ALREADY_MATCHED rejects with error.matchId: the match won.
   * @param {string} ticketId
   * @returns {Promise<Ticket>}
   */
  async cancel(ticketId) {
    const f = await this.request('cancel', { ticketId });
    return f.ticket;
  }

  /**
   * accept accepts a PENDING_ACCEPT match; it resolves with the match.
   * @param {string} matchId
   * @returns {Promise<Match>}
   */
  async accept(matchId) {
    const f = await this.request('accept', { matchId });
    return f.match;
  }

  /**
   * decline declines a PENDING_ACCEPT match; it resolves with the match.
   * @param {string} matchId
   * @returns {Promise<Match>}
   */
  async decline(matchId) {
    const f = await this.request('decline', { matchId });
    return f.match;
  }

  /**
   * status asks for the user's tickets and matches (merged into the store).
   * @returns {Promise<{tickets: Ticket[], matches: Match[]}>}
   */
  async status() {
    const f = await this.request('status', {});
    return { tickets: f.tickets || [], matches: f.matches || [] };
  }

  /**
   * ping measures an application-level round trip in milliseconds.
   * @returns {Promise<number>}
   */
  async ping() {
    const start = Date.now();
    await this.request('ping', {});
    return Date.now() - start;
  }

  /**
   * enter takes the user's place in an admission queue (or the place the
   * user holds already); it resolves with the place.
   * @param {string} queue
   * @returns {Promise<Position>}
   */
  async enter(queue) {
    const f = await this.request('enter', { queue });
    this._putAdmission(queue, f.position, 'enter');
    return f.position;
  }

  /**
   * admissionPosition asks for the user's place in an admission queue.
   * @param {string} queue
   * @returns {Promise<Position>}
   */
  async admissionPosition(queue) {
    const f = await this.request('position', { queue });
    this._putAdmission(queue, f.position, 'reply');
    return f.position;
  }

  /**
   * leaveAdmission gives the user's place in an admission queue up.
   * @param {string} queue
   * @returns {Promise<void>}
   */
  async leaveAdmission(queue) {
    await this.request('leave', { queue });
    this._putAdmission(queue, { status: 'NOT_ENTERED' }, 'leave');
  }

  /**
   * admission is the user's place in queue as last heard (a reply or a
   * push), or null.
   * @param {string} queue
   * @returns {Position|null}
   */
  admission(queue) {
    return this.admissions.get(queue) || null;
  }

  // ---- ranking boards -------------------------------------------------

  /**
   * subscribeRanking subscribes to a board's window: it resolves with the
   * board's Top of the current period, and every change of it is pushed
   * (ranking.update, and "ranking" with the view). The subscription is made
   * again after each reconnect. A server without the board rejects with
   * NOT_FOUND.
   * @param {string} ranking  the board
   * @param {string} window   "hour", "day" or "week"
   * @param {{limit?: number}} [opts]  the items wanted (default 20, at most the board's N)
   * @returns {Promise<RankingView>}
   */
  async subscribeRanking(ranking, window, opts = {}) {
    const key = rankingKey(ranking, window);
    const sub = { ranking, window, pending: true };
    if (opts.limit !== undefined) sub.limit = opts.limit;
    this._rankingSubs.set(key, sub);
    try {
      const f = await this.request('subscribe', rankingFields(sub));
      sub.pending = false;
      return this.ranking(ranking, window) || rankingView(f);
    } catch (err) {
      sub.pending = false;
      // Refused by the server: no subscription. Lost with the socket or
      // unanswered: it is made again after the reconnect.
      if (!CLIENT_SIDE_CODES.includes(err && err.code) && this._rankingSubs.get(key) === sub) this._rankingSubs.delete(key);
      throw err;
    }
  }

  /**
   * unsubscribeRanking ends a subscription: nothing more is pushed of it.
   * @param {string} ranking
   * @param {string} window
   * @returns {Promise<void>}
   */
  async unsubscribeRanking(ranking, window) {
    const key = rankingKey(ranking, window);
    this._rankingSubs.delete(key);
    this.rankings.delete(key);
    await this.request('unsubscribe', { ranking, window });
  }

  /**
   * ranking is a subscribed board's Top as last heard, or null.
   * @param {string} ranking
   * @param {string} window
   * @returns {RankingView|null}
   */
  ranking(ranking, window) {
    return this.rankings.get(rankingKey(ranking, window)) || null;
  }

  /**
   * _putRanking keeps a subscribed board's view and emits "ranking"; a view
   * of a board no longer subscribed (a push already under way) is dropped.
   * @param {any} f  a subscribed or ranking.update frame
   */
  _putRanking(f) {
    if (typeof f.ranking !== 'string' || typeof f.window !== 'string') return;
    const key = rankingKey(f.ranking, f.window);
    if (!this._rankingSubs.has(key)) return;
    const view = rankingView(f);
    this.rankings.set(key, view);
    this.emit('ranking', view);
  }

  /**
   * _resubscribeRankings makes the subscriptions again on a new socket
   * (or after hello tells of a resync: the same socket answers with the
   * current view). One the server refuses for good (the board is gone) is
   * dropped and reported on "error".
   */
  _resubscribeRankings() {
    for (const [key, sub] of this._rankingSubs) {
      if (sub.pending) continue; // its own request is on the way
      sub.pending = true;
      this.request('subscribe', rankingFields(sub)).then(() => { sub.pending = false; }, (err) => {
        sub.pending = false;
        if (err && (err.code === 'NOT_FOUND' || err.code === 'BAD_REQUEST') && this._rankingSubs.get(key) === sub) {
          this._rankingSubs.delete(key);
          this.rankings.delete(key);
          if (this._listeners.get('error')?.size) this.emit('error', err);
        }
      });
    }
  }

  // ---- provider queues (a token whose role is provider) ---------------

  /**
   * providerOnline puts the user online in a provider queue with capacity
   * slots and what it offers; it resolves with its state there. This
   * socket holds it online: it goes offline when the socket is gone for
   * good.
   * @param {string} queue
   * @param {number} capacity
   * @param {ProviderAttributes} [attributes]
   * @returns {Promise<ProviderView>}
   */
  async providerOnline(queue, capacity, attributes) {
    const f = await this.request('provider.online', { queue, capacity, attributes });
    return f.provider;
  }

  /**
   * providerUpdate changes the capacity or the attributes (what is not
   * given stays) of a provider online in queue.
   * @param {string} queue
   * @param {{capacity?: number, attributes?: ProviderAttributes}} [changes]
   * @returns {Promise<ProviderView>}
   */
  async providerUpdate(queue, changes = {}) {
    const f = await this.request('provider.update', { queue, capacity: changes.capacity, attributes: changes.attributes });
    return f.provider;
  }

  /**
   * providerOffline takes the user offline in queue; its running
   * assignments go on, its open offers are withdrawn.
   * @param {string} queue
   * @returns {Promise<ProviderView>}
   */
  async providerOffline(queue) {
    const f = await this.request('provider.offline', { queue });
    return f.provider;
  }

  /**
   * provider is the user's state in a provider queue as last heard, or null.
   * @param {string} queue
   * @returns {ProviderView|null}
   */
  provider(queue) {
    return this.providers.get(queue) || null;
  }

  /**
   * acceptAssignment accepts an OFFERED assignment within its acceptBy; it
   * resolves with the ACCEPTED assignment.
   * @param {string} id
   * @returns {Promise<Assignment>}
   */
  acceptAssignment(id) {
    return this._assignmentCall('assignment.accept', id);
  }

  /**
   * declineAssignment declines an OFFERED assignment: the requester goes
   * back to its place in the queue.
   * @param {string} id
   * @returns {Promise<Assignment>}
   */
  declineAssignment(id) {
    return this._assignmentCall('assignment.decline', id);
  }

  /**
   * endAssignment ends a running (ACCEPTED) assignment and frees its slot.
   * @param {string} id
   * @returns {Promise<Assignment>}
   */
  endAssignment(id) {
    return this._assignmentCall('assignment.end', id);
  }

  /**
   * @param {string} type
   * @param {string} assignmentId
   */
  async _assignmentCall(type, assignmentId) {
    const f = await this.request(type, { assignmentId });
    return f.assignment;
  }

  /**
   * request sends any command frame with a fresh id and resolves with the
   * reply that carries it in "re" (rejecting with MatchgateError on an
   * error reply, a timeout or a lost connection). While the client is
   * reconnecting the frame waits for the socket, within the timeout.
   * @param {string} type
   * @param {object} [fields]
   * @returns {Promise<Frame & Record<string, any>>}
   */
  request(type, fields = {}) {
    if (!this._want) {
      return Promise.reject(new MatchgateError('NOT_CONNECTED', 'call connect() first'));
    }
    const id = 'r' + ++this._seq;
    return new Promise((resolve, reject) => {
      const entry = { resolve, reject, type, timer: null, sent: false, frame: { type, id, ...fields } };
      entry.timer = setTimeout(() => {
        this._pending.delete(id);
        reject(new MatchgateError('TIMEOUT', `no reply to ${type} within ${this.options.requestTimeoutMs} ms`));
      }, this.options.requestTimeoutMs);
      this._pending.set(id, entry);
      if (this.connected) this._send(entry);
    });
  }

  // ---- internals ------------------------------------------------------

  _open() {
    clearTimeout(this._retryTimer);
    if (!this._want) return;
    const exp = this.token ? tokenExpiry(this.token) : null;
    if (exp !== null && exp <= Date.now()) {
      this._terminal(4401, 'token expired');
      return;
    }
    const WS = this.options.WebSocket || globalThis.WebSocket;
    if (!WS) throw new Error('matchgate: no WebSocket implementation (pass options.WebSocket)');
    let url = this._url;
    if (this.token) url += (url.includes('?') ? '&' : '?') + 'token=' + encodeURIComponent(this.token);
    this._setState(this._attempt === 0 && this.state !== 'reconnecting' ? 'connecting' : 'reconnecting', {});
    let ws;
    try {
      ws = new WS(url);
    } catch (err) {
      this._lost(1006, String(err && err.message || err));
      return;
    }
    this._ws = ws;
    ws.onmessage = (ev) => this._onMessage(ev.data);
    ws.onclose = (ev) => {
      if (this._ws !== ws) return;
      this._ws = null;
      this._lost(ev.code, ev.reason || '');
    };
    // onerror is always followed by onclose; nothing to do here, and a
    // listener keeps runtimes from reporting it as unhandled.
    ws.onerror = () => {};
  }

  /**
   * _lost handles a connection that ended (or never opened).
   * @param {number} code
   * @param {string} reason
   */
  _lost(code, reason) {
    this._failPending('DISCONNECTED', `connection lost (${code}) before the reply`, true);
    if (!this._want) return;
    if (TERMINAL_CLOSE_CODES.includes(code)) {
      this._terminal(code, reason);
      return;
    }
    const delayMs = backoffDelay(this._attempt, this.options.reconnectBaseMs,
      this.options.reconnectCapMs, this.options.random);
    this._attempt++;
    this._setState('reconnecting', { delayMs, code, reason });
    this._retryTimer = setTimeout(() => this._open(), delayMs);
    this._scheduleHeartbeat(); // keep waiting tickets alive while offline
  }

  /**
   * _terminal stops reconnecting: the token must change first.
   * @param {number} code
   * @param {string} reason
   */
  _terminal(code, reason) {
    this._want = false;
    this._stopAdmissionPolls();
    const err = new MatchgateError(code === 4403 ? 'FORBIDDEN' : 'UNAUTHORIZED', reason || 'connection refused');
    this._failPending('DISCONNECTED', 'connection closed for good');
    this._rejectHello(err);
    this._setState('closed', { code, reason });
  }

  /**
   * @param {ConnectionState} state
   * @param {Partial<StateEvent>} extra
   */
  _setState(state, extra) {
    this.state = state;
    this.emit('state', { state, attempt: this._attempt, ...extra });
  }

  /** @param {any} data */
  _onMessage(data) {
    let f;
    try {
      f = JSON.parse(typeof data === 'string' ? data : String(data));
    } catch {
      this.emit('error', new MatchgateError('BAD_FRAME', 'the server sent a frame that is not JSON'));
      return;
    }
    if (!f || typeof f.type !== 'string') return;

    // Reconcile first, so listeners of the frame see the merged store.
    switch (f.type) {
      case 'hello':
      case 'status':
        for (const t of f.tickets || []) this._putTicket(t);
        for (const m of f.matches || []) this._putMatch(m);
        if (f.type === 'hello' && Array.isArray(f.admission)) this._helloAdmissions(f.admission);
        if (f.type === 'hello' && Array.isArray(f.providers)) this._helloProviders(f.providers);
        break;
      case 'provider':
        this._putProvider(f.provider);
        break;
      case 'admission.position':
        this._putAdmission(f.queue, f.position, 'push');
        break;
      case 'admission.ready':
        this._putAdmission(f.queue, { status: 'READY', token: f.token, expiresAt: f.expiresAt }, 'push');
        break;
      case 'subscribed':
      case 'ranking.update':
        this._putRanking(f);
        break;
      default:
        if (f.ticket) this._putTicket(f.ticket);
        if (f.match) this._putMatch(f.match);
        if (f.assignment) this._putAssignment(f.assignment);
    }

    if (f.type === 'hello') {
      this.userId = f.userId || this.userId;
      this.node = f.node || null;
      this._attempt = 0;
      this._setState('open', { node: this.node });
      this._resolveHello(f);
      this._flushPending();
      this._resubscribeRankings();
      this._scheduleHeartbeat();
    }

    if (f.re !== undefined && f.re !== null && f.re !== '') {
      const entry = this._pending.get(f.re);
      if (entry) {
        this._pending.delete(f.re);
        clearTimeout(entry.timer);
        if (f.type === 'error') entry.reject(MatchgateError.fromWire(f.error));
        else entry.resolve(f);
      }
    }
    this.emit(f.type, f);
    this.emit('message', f);
    if (f.type === 'error' && (f.re === undefined || f.re === '') && this._listeners.get('error')?.size) {
      this.emit('error', MatchgateError.fromWire(f.error));
    }
  }

  /** @param {any} t */
  _putTicket(t) {
    if (this.store.putTicket(t)) {
      this.emit('ticket', t);
      this._scheduleHeartbeat();
    }
  }

  /**
   * _putAdmission keeps the newest place heard of in queue, emits
   * "admission" {queue, position, at} (at: when it was heard, in ms since
   * the epoch: an ETA counts from then) and arms the poll of a WAITING
   * place.
   *
   * A place carries no version on the wire, so one rule stands in for it:
   * a WAITING place heard in a poll or a push does not replace a READY one
   * whose token is alive. A waiter's place only moves forward, and a
   * position answered just before the admission can arrive just after
   * admission.ready. An enter (a new place) and hello (the state after a
   * reconnect) always replace it.
   * @param {string} queue
   * @param {Position|undefined} position
   * @param {'enter'|'reply'|'leave'|'push'|'poll'|'hello'} source
   */
  _putAdmission(queue, position, source) {
    if (typeof queue !== 'string' || !position || typeof position.status !== 'string') return;
    const held = this.admissions.get(queue);
    if (held && held.status === 'READY' && position.status === 'WAITING' && source !== 'enter' && source !== 'hello'
      && !(Date.parse(held.expiresAt) <= Date.now())) {
      return;
    }
    this.admissions.set(queue, position);
    this._scheduleAdmissionPoll(queue);
    this.emit('admission', { queue, position, at: Date.now() });
  }

  /**
   * _helloAdmissions merges hello's admission list, the user's live places:
   * a place held here that it does not name ended while this socket was
   * away.
   * @param {{queue: string, position: Position}[]} list
   */
  _helloAdmissions(list) {
    const named = new Set();
    for (const e of list) {
      if (!e || typeof e.queue !== 'string') continue;
      named.add(e.queue);
      this._putAdmission(e.queue, e.position, 'hello');
    }
    for (const [queue, p] of [...this.admissions]) {
      if (!named.has(queue) && p.status !== 'NOT_ENTERED') this._putAdmission(queue, { status: 'NOT_ENTERED' }, 'hello');
    }
  }

  /**
   * _scheduleAdmissionPoll (re)arms the poll of queue's place: pollAfter
   * seconds after the last word on a WAITING place. Every reply or push
   * re-arms it, so a socket that pushes the place costs no poll; one that
   * does not (an older server, a lost push) still sees the line move, and
   * the poll tells the server the waiter is still there.
   * @param {string} queue
   */
  _scheduleAdmissionPoll(queue) {
    clearTimeout(this._admissionTimers.get(queue));
    this._admissionTimers.delete(queue);
    const p = this.admissions.get(queue);
    if (!this.options.admissionPoll || !this._want || !p || p.status !== 'WAITING') return;
    const after = Number(p.pollAfter) > 0 ? p.pollAfter * 1000 : 5000;
    this._admissionTimers.set(queue, setTimeout(() => {
      this._admissionTimers.delete(queue);
      this._pollAdmission(queue);
    }, Math.max(this.options.admissionPollMinMs, after)));
  }

  _stopAdmissionPolls() {
    for (const timer of this._admissionTimers.values()) clearTimeout(timer);
    this._admissionTimers.clear();
  }

  /**
   * _pollAdmission asks for queue's place: over the socket when it is
   * open, else over REST. A queue that is gone (UNKNOWN_QUEUE, NOT_FOUND)
   * ends the place; any other failure asks again after the same wait.
   * @param {string} queue
   */
  async _pollAdmission(queue) {
    try {
      if (this.connected) {
        await this.admissionPosition(queue);
      } else {
        const body = await this._rest('GET', `/v1/admission/${encodeURIComponent(queue)}/position`);
        this._putAdmission(queue, body && body.position, 'poll');
      }
    } catch (err) {
      if (err instanceof MatchgateError && (err.code === 'UNKNOWN_QUEUE' || err.code === 'NOT_FOUND')) {
        this._putAdmission(queue, { status: 'NOT_ENTERED' }, 'poll');
        return;
      }
    }
    // Nothing replaced the place (a failure, or a stale answer ignored):
    // ask again later.
    if (!this._admissionTimers.has(queue)) this._scheduleAdmissionPoll(queue);
  }

  /**
   * _putProvider keeps the provider's state in its queue as last heard
   * (the replies and hello carry no version: each is the server's state
   * when sent, and they arrive in order on one socket) and stores the
   * assignments it lists. Emits "providers" with the view.
   * @param {any} p
   */
  _putProvider(p) {
    if (!p || typeof p !== 'object' || typeof p.queue !== 'string') return;
    for (const a of p.assignments || []) this._putAssignment(a);
    this.providers.set(p.queue, p);
    this.emit('providers', p);
  }

  /**
   * _helloProviders merges hello's providers list: the user's state in
   * each provider queue. A queue held here that it does not name is one
   * the user is no longer known in: offline.
   * @param {any[]} list
   */
  _helloProviders(list) {
    const named = new Set();
    for (const p of list) {
      if (!p || typeof p.queue !== 'string') continue;
      named.add(p.queue);
      this._putProvider(p);
    }
    for (const [queue, p] of [...this.providers]) {
      if (!named.has(queue) && p.online) this._putProvider({ ...p, online: false, assignments: undefined });
    }
  }

  /**
   * _putAssignment stores a; emits "assignments" with it when the store
   * changed (plural: "assignment" is the reply frame's type).
   * @param {any} a
   */
  _putAssignment(a) {
    if (this.store.putAssignment(a)) this.emit('assignments', a);
  }

  /** @param {any} m */
  _putMatch(m) {
    if (!this.store.putMatch(m)) return;
    for (const t of this.store.seat(m)) this.emit('ticket', t);
    this.emit('match', m);
  }

  /** @param {{frame: object, sent: boolean}} entry */
  _send(entry) {
    entry.sent = true;
    this._ws.send(JSON.stringify(entry.frame));
  }

  /** _flushPending sends the requests that waited for the socket. */
  _flushPending() {
    for (const entry of this._pending.values()) {
      if (!entry.sent && this.connected) this._send(entry);
    }
  }

  /**
   * _failPending rejects the requests still waiting for a reply.
   * @param {string} code
   * @param {string} message
   * @param {boolean} [sentOnly]  keep the unsent ones (they wait for the reconnect)
   */
  _failPending(code, message, sentOnly = false) {
    for (const [id, entry] of this._pending) {
      if (sentOnly && !entry.sent) continue;
      this._pending.delete(id);
      clearTimeout(entry.timer);
      entry.reject(new MatchgateError(code, `${entry.type}: ${message}`));
    }
  }

  /** @returns {Promise<Frame>} */
  _nextHello() {
    return new Promise((resolve, reject) => {
      this._helloWaiters.add({ resolve, reject });
    });
  }

  /** @param {Frame} f */
  _resolveHello(f) {
    for (const w of this._helloWaiters) w.resolve(f);
    this._helloWaiters.clear();
  }

  /** @param {Error} err */
  _rejectHello(err) {
    for (const w of this._helloWaiters) w.reject(err);
    this._helloWaiters.clear();
  }

  /**
   * _scheduleHeartbeat arms the heartbeat timer while a ticket waits.
   * Heartbeats go over REST whether or not the socket is up: they are
   * cheap, and they are what keeps a ticket alive through a long outage.
   */
  _scheduleHeartbeat() {
    if (this._heartbeatTimer || !this.options.heartbeatMs || !this.token) return;
    if (!this.store.waiting().length) return;
    this._heartbeatTimer = setTimeout(() => {
      this._heartbeatTimer = null;
      this._beat().finally(() => this._scheduleHeartbeat());
    }, this.options.heartbeatMs);
  }

  async _beat() {
    const fetchImpl = this.options.fetch || globalThis.fetch;
    if (!fetchImpl) return;
    await Promise.all(this.store.waiting().map(async (t) => {
      try {
        await this.heartbeat(t.id);
      } catch (err) {
        // The ticket is no longer waiting (or the network is down): ask
        // for its state; when that fails too the next beat tries again.
        if (err instanceof MatchgateError && err.code !== 'NETWORK') {
          await this.getTicket(t.id).catch(() => {});
        }
      }
    }));
  }

  /**
   * @param {string} method
   * @param {string} path
   * @param {object} [body]
   */
  _rest(method, path, body) {
    const base = this.options.baseUrl || httpBase(wsURL('/v1/ws'));
    return restCall(this.options.fetch || globalThis.fetch, method, joinURL(base, path), this.token, body);
  }
}

/** detach removes a socket's handlers so a closed client hears nothing more. */
function detach(ws) {
  ws.onmessage = ws.onclose = ws.onerror = null;
}

/**
 * restCall performs one REST call and decodes the JSON answer; a non-2xx
 * answer rejects with the server's MatchgateError.
 * @param {typeof fetch} fetchImpl
 * @param {string} method
 * @param {string} url
 * @param {string|null} token
 * @param {object} [body]
 */
async function restCall(fetchImpl, method, url, token, body) {
  if (!fetchImpl) throw new Error('matchgate: no fetch implementation (pass options.fetch)');
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (token) headers.Authorization = 'Bearer ' + token;
  let res;
  try {
    res = await fetchImpl(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (err) {
    throw new MatchgateError('NETWORK', `${method} ${url}: ${err && err.message || err}`);
  }
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
  if (!res.ok) {
    const ra = Number(res.headers && res.headers.get && res.headers.get('Retry-After'));
    throw MatchgateError.fromWire(data && data.error ? data.error : { code: httpCode(res.status), message: res.statusText },
      { status: res.status, retryAfterMs: ra > 0 ? ra * 1000 : 0 });
  }
  return data;
}

/**
 * httpCode is the code of an error answer without an error body (from a
 * proxy, say): the protocol's code for the status, when one code is the
 * status's generic one, else INTERNAL.
 * @param {number} status
 */
function httpCode(status) {
  switch (status) {
    case 400: return 'BAD_REQUEST';
    case 401: return 'UNAUTHORIZED';
    case 403: return 'FORBIDDEN';
    case 404: return 'NOT_FOUND';
    case 429: return 'RATE_LIMITED';
    case 503: return 'UNAVAILABLE';
  }
  return 'INTERNAL';
}

/**
 * wsURL turns "/v1/ws", "http://host" or "ws://host/v1/ws" into a WebSocket URL.
 * @param {string} url
 */
function wsURL(url) {
  const loc = globalThis.location;
  let u;
  try {
    u = new URL(url, loc && loc.href);
  } catch {
    throw new Error(`matchgate: cannot resolve ${url} without a page location`);
  }
  if (u.protocol === 'http:') u.protocol = 'ws:';
  if (u.protocol === 'https:') u.protocol = 'wss:';
  if (u.pathname === '/' || u.pathname === '') u.pathname = '/v1/ws';
  return u.toString();
}

/**
 * httpBase is the REST origin of a WebSocket URL.
 * @param {string} ws
 */
function httpBase(ws) {
  const u = new URL(ws);
  u.protocol = u.protocol === 'wss:' ? 'https:' : 'http:';
  return u.origin;
}

/**
 * @param {string} base
 * @param {string} path
 */
/** CLIENT_SIDE_CODES are the client's own refusals, which the server never gave. */
const CLIENT_SIDE_CODES = ['DISCONNECTED', 'TIMEOUT', 'NOT_CONNECTED'];

/** rankingKey names a board's window in the client's maps. */
function rankingKey(ranking, window) {
  return `${ranking}/${window}`;
}

/** rankingFields are a subscribe's members; limit only when given. */
function rankingFields(sub) {
  const f = { ranking: sub.ranking, window: sub.window };
  if (sub.limit !== undefined) f.limit = sub.limit;
  return f;
}

/** @returns {RankingView} */
function rankingView(f) {
  return { ranking: f.ranking, window: f.window, period: f.period, weightsVersion: f.weightsVersion, items: f.items || [] };
}

function joinURL(base, path) {
  return String(base || '').replace(/\/+$/, '') + path;
}
