// matchgate.d.ts — the types of matchgate.js, the matchgate protocol's
// JavaScript client. Written by hand beside it: the frames are those of
// docs/asyncapi.yaml (members it requires are required here), the objects
// in them those of docs/openapi.yaml, and the methods and events those of
// matchgate.js. tests/types checks them against the module itself and
// against the wire as package protocol renders it
// (protocol/testdata/wire.json).
//
// Times are RFC 3339 strings with milliseconds, in UTC.

// ---- objects on the wire -----------------------------------------------

/** Only WAITING is not terminal. */
export type TicketStatus = 'WAITING' | 'MATCHED' | 'CANCELLED' | 'EXPIRED';

/** Why a ticket was CANCELLED. */
export type CancelReason = 'user' | 'heartbeat' | 'declined' | 'accept_timeout' | 'superseded' | 'banned';

export interface Ticket {
  id: string;
  userId: string;
  /** The player's display name, cleaned (at most 32 characters); absent: show userId. */
  name?: string;
  queue: string;
  region: string;
  status: TicketStatus;
  skill: number;
  /** The skill was not in the token and was estimated. */
  estimated: boolean;
  /** As joined; absent when none. */
  attributes?: Record<string, string>;
  enqueuedAt: string | null;
  /** Stamped once at join; never moves. */
  deadline: string | null;
  matchId: string | null;
  cancelReason: CancelReason | null;
  updatedAt: string | null;
  /** Grows with every change: keep the highest. */
  version: number;
  /**
   * A provider queue's ticket.update pushed when the wait drops a
   * constraint: the constraints dropped so far (the ticket itself is
   * unchanged, same version).
   */
  relaxed?: string[];
}

export interface Player {
  ticketId: string;
  userId: string;
  /** The player's display name, cleaned (at most 32 characters); absent: show userId. */
  name?: string;
  skill: number;
}

/** Where the players of a READY match meet. */
export interface GameServer {
  address: string;
  session: string;
}

/** PENDING_ACCEPT while acceptBy runs, then READY or DISSOLVED. */
export type MatchState = 'PENDING_ACCEPT' | 'READY' | 'DISSOLVED';

/** FILLED, FALLBACK (a smaller room after fallbackAfter) or TIMEOUT (at the deadline). */
export type FormedBy = 'FILLED' | 'FALLBACK' | 'TIMEOUT';

/** The provider a provider queue's match gives its one player (the requester) to. */
export interface ProviderSeat {
  userId: string;
  /** The score that chose this provider. */
  score: number;
  /** Each term's contribution to score; absent when there are none. */
  parts?: Record<string, number>;
}

export interface Match {
  id: string;
  queue: string;
  region: string;
  state: MatchState;
  formedBy: FormedBy;
  players: Player[];
  /** Only on a provider queue's match. */
  provider?: ProviderSeat;
  bots: number;
  /** Largest skill distance within the match. */
  spread: number;
  /** Shown only once the match is READY. */
  server: GameServer | null;
  /** Set while the players must accept. */
  acceptBy: string | null;
  /** The users who accepted, in the order they did. */
  accepted?: string[];
  createdAt: string | null;
  /** Grows with every change: keep the highest. */
  version: number;
}

/** Why a WAITING ticket has no match yet (GET /v1/tickets/{id}). */
export interface Explain {
  /** Seconds waited so far. */
  waited: number;
  /** The current skill half-width; null for room queues. */
  window: number | null;
  candidatesInWindow: number;
  playersNeeded: number;
  /** What stands in the way; empty when a match should form on the next pass. */
  missing: '' | 'players' | 'coherent_group' | 'allocation' | 'provider';
  /** Adjacent regions the ticket is offered to. */
  offeredTo?: string[];
  /** The ticket waits in the overflow pool of a sharded queue. */
  overflow?: boolean;
  /** Provider queues: why no provider can take the requester yet. */
  noProvider?: string;
  /** Provider queues: the constraints the wait has dropped. */
  relaxed?: string[];
  /** Provider queues: the shed tier scoring is at now. */
  shedTier?: number;
  /** The queue's median recent wait in seconds; null without recent data. */
  estimatedWait: number | null;
}

/** The answer of GET /v1/tickets/{id}. */
export interface TicketView {
  ticket: Ticket;
  match: Match | null;
  /** Present while the ticket is WAITING. */
  explain?: Explain;
}

/** A page of the user's resolved tickets (GET /v1/tickets), newest first. */
export interface TicketPage {
  tickets: Ticket[];
  matches: Match[];
  /** Older resolved tickets exist; absent when false. */
  more?: boolean;
  /** With more: the cursor of the next page (history's before). */
  next?: string;
}

/** Wait percentiles in seconds over tickets resolved in the last hour. */
export interface WaitPercentiles {
  p50: number;
  p90: number;
  p99: number;
}

/** A provider queue's providers by state, and the slots of those online. */
export interface ProviderCounts {
  online: number;
  busy: number;
  offline: number;
  used: number;
  capacity: number;
}

/** A matched queue in GET /v1/queues. */
export interface MatchedQueueInfo {
  name: string;
  kind: 'skill' | 'room' | 'provider';
  /** Players per match. */
  players: number;
  regions: string[];
  /** Waiting tickets per region. */
  depth: Record<string, number>;
  /** Provider queues only. */
  providers?: ProviderCounts;
  // The recent outcomes, where the server reports them.
  /** Matches formed per minute over the last 5 minutes. */
  matchesPerMinute?: number;
  wait?: WaitPercentiles | null;
  /** (TIMEOUT matches + EXPIRED tickets) ÷ recent outcomes. */
  timeoutFraction?: number;
  /** The median recent wait in seconds. */
  estimatedWait?: number | null;
  /** The tickets the percentiles are taken over. */
  samples?: number;
}

/** An admission queue (a waiting room) in GET /v1/queues. */
export interface AdmissionQueueInfo {
  name: string;
  kind: 'admission';
  /** The configured admissions a second. */
  rate: number;
  /** Waiters in the line. */
  waiting: number;
  /** Admissions a second measured over the last minute (measured false: the configured rate). */
  measuredRate: { mean: number; low: number; high: number; measured: boolean };
  /** The relative error of the ETAs shown at entry over the last ten minutes. */
  etaError: { p50: number | null; p90: number | null; admissions: number };
}

/** One queue of GET /v1/queues; kind tells the two shapes apart. */
export type QueueInfo = MatchedQueueInfo | AdmissionQueueInfo;

/** A waiter's predicted admission, in seconds from now. */
export interface Eta {
  seconds: number;
  low: number;
  /** Null without an upper bound. */
  high: number | null;
}

/** A place in an admission queue's line. */
export interface WaitingPosition {
  status: 'WAITING';
  /** The waiters ahead (zero-based). */
  rank: number;
  /** The line's length. */
  total: number;
  /** Absent when the admission cannot be predicted. */
  eta?: Eta;
  /** Seconds before a client without a socket asks again. */
  pollAfter: number;
}

/** An admitted place: the one-use entry token and the end of its life. */
export interface ReadyPosition {
  status: 'READY';
  token: string;
  expiresAt: string;
}

/** No live place: never entered, left, abandoned, or the token's life ended. */
export interface NotEnteredPosition {
  status: 'NOT_ENTERED';
}

/** A user's place in an admission queue; status tells the three apart. */
export type Position = WaitingPosition | ReadyPosition | NotEnteredPosition;

/** A board's window. */
export type RankingWindow = 'hour' | 'day' | 'week';

/** An item's place in a ranking. */
export interface RankedItem {
  item: string;
  /** 1 is the top. */
  rank: number;
  /** Null when not finite. */
  score: number | null;
  metrics: Record<string, number | null>;
  /** Weight × transformed metric, by metric. */
  parts: Record<string, number | null>;
}

/** A board's Top of one window's current period, as the client keeps it. */
export interface RankingView {
  /** The board. */
  ranking: string;
  window: RankingWindow;
  /** E.g. "2026-12-02T14" for an hour; absent when the frame had none. */
  period: string | undefined;
  weightsVersion: number | undefined;
  items: RankedItem[];
}

/** What a provider offers. */
export interface ProviderAttributes {
  languages?: string[];
  /** The first is the primary one. */
  specialties?: string[];
  sessionTypes?: string[];
  /** 0–5. */
  rating: number;
}

/** What providerOnline and providerUpdate send: a rating not given is 0. */
export type ProviderAttributesInput = Partial<ProviderAttributes>;

export type AssignmentStatus = 'OFFERED' | 'ACCEPTED' | 'DECLINED' | 'EXPIRED' | 'ENDED';

/** A requester in one of a provider's slots. */
export interface Assignment {
  /** The match's id. */
  id: string;
  queue: string;
  status: AssignmentStatus;
  requester: { userId: string; ticketId: string };
  /** The provider's fit, the sum of parts. */
  score: number;
  /** Weight × term, by term. */
  parts?: Record<string, number>;
  offeredAt: string;
  /** OFFERED: the end of the accept window; null when the queue assigns at once. */
  acceptBy: string | null;
  acceptedAt?: string;
  endedAt?: string;
  endReason?: string;
  /** Grows with every change: keep the highest. */
  version: number;
}

/** A provider's state in one provider queue. */
export interface ProviderView {
  queue: string;
  userId: string;
  online: boolean;
  capacity: number;
  /** Slots its offered or running assignments hold. */
  used: number;
  attributes: ProviderAttributes;
  lastSeen: string | null;
  /** Its live assignments, when listed. */
  assignments?: Assignment[];
}

/** The server's error codes (ERROR_CODES has the HTTP status of each). */
export type ErrorCode =
  | 'BAD_REQUEST' | 'UNAUTHORIZED' | 'FORBIDDEN' | 'UNKNOWN_QUEUE' | 'ALREADY_QUEUED'
  | 'ALREADY_MATCHED' | 'ALREADY_CANCELLED' | 'NOT_FOUND' | 'RATE_LIMITED' | 'COOLDOWN'
  | 'UNAVAILABLE' | 'INTERNAL' | 'ALREADY_CLAIMED' | 'NOT_CLAIMED' | 'ADMISSION_REQUIRED';

/** The client's own failures. */
export type ClientErrorCode = 'TIMEOUT' | 'DISCONNECTED' | 'NOT_CONNECTED' | 'NETWORK' | 'BAD_FRAME';

export type MatchgateErrorCode = ErrorCode | ClientErrorCode;

/** The error member of an error frame and of a REST error body. */
export interface WireError {
  code: ErrorCode;
  message: string;
  /** The ticket concerned (ALREADY_QUEUED names the waiting one). */
  ticketId?: string;
  /** The match concerned (ALREADY_MATCHED names the one that won). */
  matchId?: string;
  /** With 429 and 503: whole seconds to wait before retrying. */
  retryAfter?: number;
}

/** The body of every REST error. */
export interface ErrorBody {
  error: WireError;
}

// ---- client → server frames ----------------------------------------------

export interface JoinCommand {
  type: 'join';
  id: string;
  queue: string;
  /** Absent: the queue's only region. */
  region?: string;
  /** At most 16 entries; keys 1–32 characters, values at most 64. */
  attributes?: Record<string, string>;
}
export interface CancelCommand { type: 'cancel'; id: string; ticketId: string }
export interface AcceptCommand { type: 'accept'; id: string; matchId: string }
export interface DeclineCommand { type: 'decline'; id: string; matchId: string }
export interface StatusCommand { type: 'status'; id: string }
export interface PingCommand { type: 'ping'; id: string }
export interface EnterCommand { type: 'enter'; id: string; queue: string }
export interface PositionCommand { type: 'position'; id: string; queue: string }
export interface LeaveCommand { type: 'leave'; id: string; queue: string }
export interface SubscribeCommand {
  type: 'subscribe';
  id: string;
  ranking: string;
  window: RankingWindow;
  /** The items wanted (default 20, at most the board's N). */
  limit?: number;
}
export interface UnsubscribeCommand { type: 'unsubscribe'; id: string; ranking: string; window: RankingWindow }
export interface ProviderOnlineCommand {
  type: 'provider.online';
  id: string;
  queue: string;
  capacity: number;
  attributes?: ProviderAttributesInput;
}
export interface ProviderUpdateCommand {
  type: 'provider.update';
  id: string;
  queue: string;
  capacity?: number;
  attributes?: ProviderAttributesInput;
}
export interface ProviderOfflineCommand { type: 'provider.offline'; id: string; queue: string }
export interface AssignmentAcceptCommand { type: 'assignment.accept'; id: string; assignmentId: string }
export interface AssignmentDeclineCommand { type: 'assignment.decline'; id: string; assignmentId: string }
export interface AssignmentEndCommand { type: 'assignment.end'; id: string; assignmentId: string }

/** Every frame a client sends; type tells them apart. */
export type ClientFrame =
  | JoinCommand | CancelCommand | AcceptCommand | DeclineCommand | StatusCommand | PingCommand
  | EnterCommand | PositionCommand | LeaveCommand
  | SubscribeCommand | UnsubscribeCommand
  | ProviderOnlineCommand | ProviderUpdateCommand | ProviderOfflineCommand
  | AssignmentAcceptCommand | AssignmentDeclineCommand | AssignmentEndCommand;

export type ClientFrameType = ClientFrame['type'];

// ---- server → client frames ----------------------------------------------

/** The catch-up every socket gets first (and after a reconnect). */
export interface HelloFrame {
  type: 'hello';
  userId?: string;
  /** The gateway node. */
  node?: string;
  /** The user's live tickets and its most recently resolved ones. */
  tickets: Ticket[];
  matches: Match[];
  /** Older resolved tickets were left out: history({before: next}) has them. */
  more?: boolean;
  next?: string;
  /** The user's live admission places. */
  admission?: { queue: string; position: Position }[];
  /** A provider's state in each provider queue (a provider's token only). */
  providers?: ProviderView[];
}
/** The reply to status. */
export interface StatusFrame {
  type: 'status';
  re?: string;
  tickets: Ticket[];
  matches: Match[];
  more?: boolean;
  next?: string;
}
/** The reply to join: the WAITING ticket. */
export interface JoinedFrame { type: 'joined'; re?: string; ticket: Ticket }
/** The reply to cancel: the CANCELLED ticket. */
export interface CancelledFrame { type: 'cancelled'; re?: string; ticket: Ticket }
/** The reply to accept and decline. */
export interface MatchUpdateFrame { type: 'match.update'; re?: string; match: Match }
export interface PongFrame { type: 'pong'; re?: string }
/** A refused command (with re), or a frame that could not be read (without). */
export interface ErrorFrame { type: 'error'; re?: string; error: WireError }
export interface TicketUpdateFrame { type: 'ticket.update'; ticket: Ticket }
export interface MatchFoundFrame { type: 'match.found'; match: Match }
export interface MatchReadyFrame { type: 'match.ready'; match: Match }
export interface MatchDissolvedFrame {
  type: 'match.dissolved';
  match: Match;
  /** Why, e.g. "declined" or "accept_timeout". */
  reason?: string;
}
/** The reply to enter. */
export interface EnteredFrame { type: 'entered'; re?: string; position: Position }
/** The reply to position. */
export interface PositionFrame { type: 'position'; re?: string; position: Position }
/** The reply to leave. */
export interface LeftFrame { type: 'left'; re?: string }
/** A waiter's new place. */
export interface AdmissionPositionFrame { type: 'admission.position'; queue?: string; position: Position }
/** A waiter's admission, with the entry token. */
export interface AdmissionReadyFrame { type: 'admission.ready'; queue: string; token: string; expiresAt: string }
/** The reply to subscribe: the board's Top of the current period. */
export interface SubscribedFrame {
  type: 'subscribed';
  re?: string;
  ranking: string;
  window: RankingWindow;
  period?: string;
  weightsVersion?: number;
  items?: RankedItem[];
}
/** The reply to unsubscribe. */
export interface UnsubscribedFrame { type: 'unsubscribed'; re?: string; ranking?: string; window?: RankingWindow }
/** A change of a subscribed board's Top, or its period's roll-over. */
export interface RankingUpdateFrame {
  type: 'ranking.update';
  ranking: string;
  window: RankingWindow;
  period?: string;
  weightsVersion?: number;
  items: RankedItem[];
}
/** The reply to provider.online, provider.update and provider.offline. */
export interface ProviderFrame { type: 'provider'; re?: string; provider: ProviderView }
/** The reply to assignment.accept, assignment.decline and assignment.end. */
export interface AssignmentFrame { type: 'assignment'; re?: string; assignment: Assignment }
export interface AssignmentOfferedFrame { type: 'assignment.offered'; assignment: Assignment }
export interface AssignmentUpdateFrame { type: 'assignment.update'; assignment: Assignment }

/** Every frame the server sends; type tells them apart. */
export type ServerFrame =
  | HelloFrame | StatusFrame | JoinedFrame | CancelledFrame | MatchUpdateFrame | PongFrame | ErrorFrame
  | TicketUpdateFrame | MatchFoundFrame | MatchReadyFrame | MatchDissolvedFrame
  | EnteredFrame | PositionFrame | LeftFrame | AdmissionPositionFrame | AdmissionReadyFrame
  | SubscribedFrame | UnsubscribedFrame | RankingUpdateFrame
  | ProviderFrame | AssignmentFrame | AssignmentOfferedFrame | AssignmentUpdateFrame;

export type ServerFrameType = ServerFrame['type'];

/** Any server frame: its type, and re on a reply. */
export interface Frame {
  type: string;
  re?: string;
}

/** The reply frame each command resolves request() with. */
export interface CommandReplies {
  join: JoinedFrame;
  cancel: CancelledFrame;
  accept: MatchUpdateFrame;
  decline: MatchUpdateFrame;
  status: StatusFrame;
  ping: PongFrame;
  enter: EnteredFrame;
  position: PositionFrame;
  leave: LeftFrame;
  subscribe: SubscribedFrame;
  unsubscribe: UnsubscribedFrame;
  'provider.online': ProviderFrame;
  'provider.update': ProviderFrame;
  'provider.offline': ProviderFrame;
  'assignment.accept': AssignmentFrame;
  'assignment.decline': AssignmentFrame;
  'assignment.end': AssignmentFrame;
}

/** A command's members other than type and id (request() adds those). */
export type CommandFields<T extends ClientFrameType> = Omit<Extract<ClientFrame, { type: T }>, 'type' | 'id'>;

// ---- the client's own events -------------------------------------------

export type ConnectionState = 'idle' | 'connecting' | 'open' | 'reconnecting' | 'closed';

/** "state": the connection's state changed ('idle' is only the state before connect). */
export type StateEvent =
  | { state: 'connecting'; attempt: number }
  | {
    state: 'reconnecting';
    /** Consecutive failed attempts so far. */
    attempt: number;
    /** When the next attempt starts; absent on the attempt itself. */
    delayMs?: number;
    /** The close code of the connection that ended. */
    code?: number;
    reason?: string;
  }
  | { state: 'open'; attempt: number; /** The gateway node from hello. */ node: string | null }
  | { state: 'closed'; attempt: number; code: number; reason: string };

/** "admission": the user's place in an admission queue, as heard. */
export interface AdmissionEvent {
  queue: string;
  position: Position;
  /** When it was heard, in ms since the epoch: an ETA counts from then. */
  at: number;
}

/**
 * The events of a MatchgateClient and what each listener is called with.
 * Every server frame is emitted under its type and under "message"; the
 * others are the client's own. (A frame of a type this version does not
 * know, a newer server's, is emitted too, under its type and "message";
 * these types name only the frames of this version.)
 */
export interface MatchgateEvents {
  hello: HelloFrame;
  status: StatusFrame;
  joined: JoinedFrame;
  cancelled: CancelledFrame;
  'match.update': MatchUpdateFrame;
  pong: PongFrame;
  /**
   * The error frame itself, then for one without re (no request to reject)
   * its MatchgateError; a MatchgateError for a frame that is not JSON or a
   * ranking subscription refused after a reconnect; and whatever a
   * listener of another event threw.
   */
  error: unknown;
  'ticket.update': TicketUpdateFrame;
  'match.found': MatchFoundFrame;
  'match.ready': MatchReadyFrame;
  'match.dissolved': MatchDissolvedFrame;
  entered: EnteredFrame;
  position: PositionFrame;
  left: LeftFrame;
  'admission.position': AdmissionPositionFrame;
  'admission.ready': AdmissionReadyFrame;
  subscribed: SubscribedFrame;
  unsubscribed: UnsubscribedFrame;
  'ranking.update': RankingUpdateFrame;
  provider: ProviderFrame;
  assignment: AssignmentFrame;
  'assignment.offered': AssignmentOfferedFrame;
  'assignment.update': AssignmentUpdateFrame;
  /** Every server frame, after the event of its type. */
  message: ServerFrame;
  state: StateEvent;
  /** A ticket in the store changed (the newer version). */
  ticket: Ticket;
  /** A match in the store changed. */
  match: Match;
  /** An assignment in the store changed (plural: "assignment" is the reply frame's type). */
  assignments: Assignment;
  /** A provider's state in a queue was heard (plural: "provider" is the reply frame's type). */
  providers: ProviderView;
  /** A subscribed board's Top was heard. */
  ranking: RankingView;
  admission: AdmissionEvent;
}

// ---- the module's values -----------------------------------------------

/** Close codes after which reconnecting with the same token cannot help. */
export declare const TERMINAL_CLOSE_CODES: readonly [4401, 4403];

/** The frames the server sends to players. */
export declare const SERVER_FRAME_TYPES: readonly [
  'hello', 'joined', 'cancelled', 'match.update', 'status', 'pong', 'error',
  'ticket.update', 'match.found', 'match.ready', 'match.dissolved',
  'entered', 'position', 'left', 'admission.position', 'admission.ready',
  'subscribed', 'unsubscribed', 'ranking.update',
];
/** The commands of join, cancel, … ping and enter, …. */
export declare const CLIENT_FRAME_TYPES: readonly [
  'join', 'cancel', 'accept', 'decline', 'status', 'ping', 'enter', 'position', 'leave',
];
/** The commands of subscribeRanking and unsubscribeRanking. */
export declare const RANKING_CLIENT_FRAME_TYPES: readonly ['subscribe', 'unsubscribe'];
/** The frames only a provider is sent. */
export declare const PROVIDER_SERVER_FRAME_TYPES: readonly [
  'provider', 'assignment', 'assignment.offered', 'assignment.update',
];
/** The commands of a provider. */
export declare const PROVIDER_CLIENT_FRAME_TYPES: readonly [
  'provider.online', 'provider.update', 'provider.offline',
  'assignment.accept', 'assignment.decline', 'assignment.end',
];

/** The server's error codes and the HTTP status of each over REST. */
export declare const ERROR_CODES: {
  readonly BAD_REQUEST: 400;
  readonly UNKNOWN_QUEUE: 400;
  readonly UNAUTHORIZED: 401;
  readonly FORBIDDEN: 403;
  readonly ADMISSION_REQUIRED: 403;
  readonly NOT_FOUND: 404;
  readonly ALREADY_QUEUED: 409;
  readonly ALREADY_MATCHED: 409;
  readonly ALREADY_CANCELLED: 409;
  readonly ALREADY_CLAIMED: 409;
  readonly NOT_CLAIMED: 409;
  readonly RATE_LIMITED: 429;
  readonly COOLDOWN: 429;
  readonly INTERNAL: 500;
  readonly UNAVAILABLE: 503;
};

/**
 * A refused request: the server's error code and message, and the ticket
 * or match it concerns; or one of the client's own failures.
 */
export declare class MatchgateError extends Error {
  constructor(code: MatchgateErrorCode, message?: string, extra?: {
    ticketId?: string | null;
    matchId?: string | null;
    status?: number;
    retryAfterMs?: number;
  });
  name: 'MatchgateError';
  code: MatchgateErrorCode;
  ticketId: string | null;
  matchId: string | null;
  /** The HTTP status of a REST error, else 0. */
  status: number;
  /** How long to wait before retrying (429, 503), else 0. */
  retryAfterMs: number;
  /** The error of an error frame or REST error body; extra's retryAfterMs (Retry-After) wins. */
  static fromWire(
    e: Partial<WireError> | undefined,
    extra?: { status?: number; retryAfterMs?: number },
  ): MatchgateError;
}

/** "Full jitter": a uniformly random delay in [0, min(capMs, baseMs·2^attempt)). */
export declare function backoffDelay(attempt: number, baseMs: number, capMs: number, random?: () => number): number;

/** The exp claim of a JWT in ms since the epoch (not verified), or null. */
export declare function tokenExpiry(token: string): number | null;

/** The arguments of emit: the data may be left out where undefined is allowed. */
type EmitArgs<T> = undefined extends T ? [data?: T] : [data: T];

/**
 * A minimal event emitter; E maps each event to its listeners' argument.
 * Listeners that throw do not stop the others: the exception is emitted
 * on "error", or rethrown asynchronously when nobody listens to "error".
 */
export declare class Emitter<E extends object = Record<string, unknown>> {
  constructor();
  /** Adds a listener; returns a function that removes it. */
  on<K extends keyof E & string>(type: K, fn: (data: E[K]) => void): () => void;
  /** Adds a listener called at most once; returns a function that removes it (off(type, fn) does not). */
  once<K extends keyof E & string>(type: K, fn: (data: E[K]) => void): () => void;
  off<K extends keyof E & string>(type: K, fn: (data: E[K]) => void): void;
  emit<K extends keyof E & string>(type: K, ...data: EmitArgs<E[K]>): void;
}

/**
 * The newest known version of every ticket, match and assignment: an
 * object with a lower version than the one held is ignored.
 */
export declare class Store {
  constructor();
  readonly tickets: Map<string, Ticket>;
  readonly matches: Map<string, Match>;
  readonly assignments: Map<string, Assignment>;
  /** Stores t unless an equal or newer version is held; whether the store changed. */
  putTicket(t: Ticket | null | undefined): boolean;
  /** Marks the WAITING tickets seated in m as MATCHED; the tickets that changed. */
  seat(m: Match): Ticket[];
  putMatch(m: Match | null | undefined): boolean;
  putAssignment(a: Assignment | null | undefined): boolean;
  assignment(id: string): Assignment | null;
  /** The OFFERED and ACCEPTED assignments (of queue, when given), oldest offer first. */
  liveAssignments(queue?: string): Assignment[];
  ticket(id: string): Ticket | null;
  match(id: string): Match | null;
  /** The WAITING tickets. */
  waiting(): Ticket[];
  /** The match a ticket is seated in. */
  matchForTicket(ticketId: string): Match | null;
  /** The WAITING ticket, else the most recently changed one. */
  current(): Ticket | null;
  clear(): void;
}

export interface ClientOptions {
  /** REST base; default: derived from the WebSocket URL. */
  baseUrl?: string;
  /** First backoff ceiling (default 500). */
  reconnectBaseMs?: number;
  /** Largest backoff ceiling (default 15000). */
  reconnectCapMs?: number;
  /** How long a request waits for its reply (default 10000). */
  requestTimeoutMs?: number;
  /** Heartbeat period for WAITING tickets; 0 is off (default 10000). */
  heartbeatMs?: number;
  /** Ask for a WAITING admission place after its pollAfter of silence (default true). */
  admissionPoll?: boolean;
  /** The shortest such wait (default 1000). */
  admissionPollMinMs?: number;
  /** Default: globalThis.WebSocket. */
  WebSocket?: typeof globalThis.WebSocket;
  /** Default: globalThis.fetch. */
  fetch?: typeof globalThis.fetch;
  /** Default: Math.random. */
  random?: () => number;
}

/** The options as the client holds them: the defaults filled in. */
export type ResolvedClientOptions = ClientOptions & Required<Pick<ClientOptions,
  'reconnectBaseMs' | 'reconnectCapMs' | 'requestTimeoutMs' | 'heartbeatMs' | 'admissionPoll' | 'admissionPollMinMs'>>;

export interface JoinOptions {
  /** One of the queue's regions; absent: the queue's only region. */
  region?: string;
  attributes?: Record<string, string>;
}

export interface GuestRequest {
  /** The display name, cleaned by the server (at most 32 characters). */
  name?: string;
  /** 0–10000 (default 1500). */
  skill?: number;
  /** provider mints a provider's token (default player). */
  role?: 'player' | 'provider';
}

export interface GuestResponse {
  token: string;
  userId: string;
  /** The display name as cleaned; absent when none was given or none was left. */
  name?: string;
}

/** The arguments of request after its type: the fields, optional where none is required. */
type RequestArgs<T extends ClientFrameType> =
  {} extends CommandFields<T> ? [fields?: CommandFields<T>] : [fields: CommandFields<T>];

/**
 * One WebSocket to a gateway (reconnecting as needed) and the REST API
 * with the same token.
 */
export declare class MatchgateClient extends Emitter<MatchgateEvents> {
  constructor(options?: ClientOptions);
  options: ResolvedClientOptions;
  /** The tickets, matches and assignments seen so far, newest version of each. */
  readonly store: Store;
  /** The user's place in each admission queue, last heard. */
  readonly admissions: Map<string, Position>;
  /** A provider's state in each provider queue, last heard. */
  readonly providers: Map<string, ProviderView>;
  /** The Top of each subscribed board's window, last heard, by "board/window". */
  readonly rankings: Map<string, RankingView>;
  readonly state: ConnectionState;
  /** The user id from the last hello. */
  readonly userId: string | null;
  /** The gateway node from the last hello. */
  readonly node: string | null;
  /** The token of the socket and of REST calls. */
  token: string | null;

  /** Signs in as a new guest (servers with guests enabled only). */
  static guest(baseUrl: string, who?: GuestRequest, options?: { fetch?: typeof globalThis.fetch }): Promise<GuestResponse>;

  /** The queues with their depths. No token needed. */
  queues(): Promise<QueueInfo[]>;
  /** A ticket with its match, merged into the store. */
  getTicket(ticketId: string): Promise<TicketView>;
  /** A page of the user's resolved tickets, newest first, merged into the store. */
  history(opts?: { before?: string; limit?: number }): Promise<TicketPage>;
  /** Keeps a WAITING ticket alive (the client does so by itself every heartbeatMs). */
  heartbeat(ticketId: string): Promise<void>;
  /** Creates a ticket over REST, for clients without a socket. */
  joinREST(queue: string, opts?: JoinOptions): Promise<Ticket>;

  /**
   * Opens the socket and keeps it open until close(); resolves with the
   * first hello, rejects when closed first or on a terminal close code.
   */
  connect(url?: string, token?: string): Promise<HelloFrame>;
  /** Closes the socket for good and rejects the requests still waiting. */
  close(code?: number, reason?: string): void;
  /** Whether the socket is open now. */
  get connected(): boolean;

  /** Resolves with the WAITING ticket; ALREADY_QUEUED names the waiting one in error.ticketId. */
  join(queue: string, opts?: JoinOptions): Promise<Ticket>;
  /** Resolves with the CANCELLED ticket; ALREADY_MATCHED names the match in error.matchId. */
  cancel(ticketId: string): Promise<Ticket>;
  accept(matchId: string): Promise<Match>;
  decline(matchId: string): Promise<Match>;
  /** The user's tickets and matches (merged into the store). */
  status(): Promise<{ tickets: Ticket[]; matches: Match[] }>;
  /** An application-level round trip in milliseconds. */
  ping(): Promise<number>;

  /** Takes (or keeps) the user's place in an admission queue. */
  enter(queue: string): Promise<Position>;
  admissionPosition(queue: string): Promise<Position>;
  leaveAdmission(queue: string): Promise<void>;
  /** The user's place in queue as last heard, or null. */
  admission(queue: string): Position | null;

  /** Subscribes to a board's window (again after each reconnect); resolves with its Top. */
  subscribeRanking(ranking: string, window: RankingWindow, opts?: { limit?: number }): Promise<RankingView>;
  unsubscribeRanking(ranking: string, window: RankingWindow): Promise<void>;
  /** A subscribed board's Top as last heard, or null. */
  ranking(ranking: string, window: RankingWindow): RankingView | null;

  /** Puts the user online in a provider queue (a provider's token); this socket holds it online. */
  providerOnline(queue: string, capacity: number, attributes?: ProviderAttributesInput): Promise<ProviderView>;
  /** Changes the capacity or the attributes; what is not given stays. */
  providerUpdate(queue: string, changes?: { capacity?: number; attributes?: ProviderAttributesInput }): Promise<ProviderView>;
  providerOffline(queue: string): Promise<ProviderView>;
  /** The user's state in a provider queue as last heard, or null. */
  provider(queue: string): ProviderView | null;
  acceptAssignment(id: string): Promise<Assignment>;
  declineAssignment(id: string): Promise<Assignment>;
  endAssignment(id: string): Promise<Assignment>;

  /**
   * Sends any command with a fresh id; resolves with the reply that
   * carries it in re, rejects with a MatchgateError.
   */
  request<T extends ClientFrameType>(type: T, ...fields: RequestArgs<T>): Promise<CommandReplies[T]>;
}
