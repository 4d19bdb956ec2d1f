// Wrong uses of the client that its declarations must reject. tsc reports
// an expect-error directive whose next line compiles, so a declaration too
// loose to catch the mistake fails the check.
// TestRejectedUsesFail also compiles this file without the directives and
// requires an error on exactly the lines after them.

import { ERROR_CODES, MatchgateClient, MatchgateError, Store } from '@matchgate/client';
import type { ClientFrame, Match, Position, ServerFrame, StateEvent, Ticket } from '@matchgate/client';

const mg = new MatchgateClient();

export async function wrong(): Promise<void> {
  // @ts-expect-error an event the client never emits
  mg.on('match.fond', () => {});
  // @ts-expect-error match.found carries a match, not a ticket
  mg.on('match.found', (f) => f.ticket);
  // @ts-expect-error join needs a queue
  await mg.join();
  // @ts-expect-error a queue is named by a string
  await mg.join(42);
  // @ts-expect-error an option join does not have
  await mg.join('duel', { regoin: 'eu' });
  // @ts-expect-error a board has no such window
  await mg.subscribeRanking('trending', 'month');
  // @ts-expect-error providerOnline needs a capacity
  await mg.providerOnline('advice');
  // @ts-expect-error accept resolves with a match
  const t: Ticket = await mg.accept('m1');
  // @ts-expect-error hello is no reply: it has no re
  console.log((await mg.connect()).re, t);
  // @ts-expect-error a command the server does not know
  await mg.request('teleport');
  // @ts-expect-error cancel needs a ticketId
  await mg.request('cancel');
  // @ts-expect-error join's fields need a queue
  await mg.request('join', { region: 'eu' });
  // @ts-expect-error ping's reply carries no ticket
  console.log((await mg.request('ping')).ticket);
  // @ts-expect-error the client's state is its own
  mg.state = 'open';
  // @ts-expect-error so is its store
  mg.store = new Store();
  // @ts-expect-error a state event carries its attempt and node
  mg.emit('state', { state: 'open' });
}

export function narrowing(p: Position, f: ServerFrame, e: StateEvent, m: Match): void {
  // @ts-expect-error only a READY place has a token
  console.log(p.token);
  if (f.type === 'hello') {
    // @ts-expect-error hello carries lists, not one ticket
    console.log(f.ticket);
  }
  if (e.state === 'closed') {
    // @ts-expect-error only reconnecting has a delay
    console.log(e.delayMs);
  }
  // @ts-expect-error the server may be null until the match is READY
  console.log(m.server.address);
}

export function exhaustive(f: ServerFrame): string {
  switch (f.type) {
    case 'hello': case 'status': case 'joined': case 'cancelled': case 'match.update': case 'pong':
    case 'error': case 'ticket.update': case 'match.found': case 'match.ready': case 'match.dissolved':
    case 'entered': case 'position': case 'admission.position': case 'admission.ready':
    case 'subscribed': case 'unsubscribed': case 'ranking.update':
    case 'provider': case 'assignment': case 'assignment.offered': case 'assignment.update':
      return f.type;
    default: {
      // @ts-expect-error left is not handled above
      const rest: never = f;
      return rest;
    }
  }
}

export function values(): void {
  // @ts-expect-error NOT_FOUND is 404
  const status: 400 = ERROR_CODES.NOT_FOUND;
  // @ts-expect-error not an error code
  const err = new MatchgateError('NOPE', 'no such code');
  // @ts-expect-error a join frame names its queue
  const frame: ClientFrame = { type: 'join', id: 'r1' };
  // @ts-expect-error no such ticket status
  const ticketStatus: Ticket['status'] = 'PENDING';
  console.log(status, err, frame, ticketStatus);
}
