package client

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/matchgate/matchgate/protocol"
)

// The commands, one method each (docs/asyncapi.yaml, receiveCommands).
// Each sends its frame with a fresh id and returns what the reply carries,
// once the reply is merged into the state the client holds; a refusal is
// an *Error. A command made while the client is reconnecting waits for
// the socket, within Options.RequestTimeout or ctx's deadline.

// JoinOptions are a join's optional members: the region ("" is the
// queue's only one) and the ticket's attributes.
type JoinOptions struct {
	Region     string
	Attributes map[string]string
}

// Join queues the user in queue and returns the WAITING ticket.
// ALREADY_QUEUED carries the waiting ticket's id in Error.TicketID.
func (c *Client) Join(ctx context.Context, queue string, opts JoinOptions) (Ticket, error) {
	f, err := c.command(ctx, protocol.Command{Type: protocol.FrameJoin, Queue: queue, Region: opts.Region, Attributes: opts.Attributes})
	return ticketOf(f), err
}

// Cancel cancels a WAITING ticket and returns it CANCELLED.
// ALREADY_MATCHED carries the match that won in Error.MatchID.
func (c *Client) Cancel(ctx context.Context, ticketID string) (Ticket, error) {
	f, err := c.command(ctx, protocol.Command{Type: protocol.FrameCancel, TicketID: ticketID})
	return ticketOf(f), err
}

// Accept accepts a PENDING_ACCEPT match and returns it: READY once every
// player has accepted (match.ready is pushed too), PENDING_ACCEPT before.
func (c *Client) Accept(ctx context.Context, matchID string) (Match, error) {
	f, err := c.command(ctx, protocol.Command{Type: protocol.FrameAccept, MatchID: matchID})
	return matchOf(f), err
}

// Decline declines a PENDING_ACCEPT match and returns it DISSOLVED.
func (c *Client) Decline(ctx context.Context, matchID string) (Match, error) {
	f, err := c.command(ctx, protocol.Command{Type: protocol.FrameDecline, MatchID: matchID})
	return matchOf(f), err
}

// Status asks for the user's live tickets, its most recently resolved ones
// and their matches (merged into the state held).
func (c *Client) Status(ctx context.Context) ([]Ticket, []Match, error) {
	f, err := c.command(ctx, protocol.Command{Type: protocol.FrameStatus})
	return f.Tickets, f.Matches, err
}

// Ping is an application-level round trip.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.command(ctx, protocol.Command{Type: protocol.FramePing})
	return err
}

// Enter takes the user's place in an admission queue (or returns the
// place it holds already).
func (c *Client) Enter(ctx context.Context, queue string) (Position, error) {
	f, err := c.command(ctx, protocol.Command{Type: protocol.FrameEnter, Queue: queue})
	return positionOf(f), err
}

// Position asks for the user's place in an admission queue.
func (c *Client) Position(ctx context.Context, queue string) (Position, error) {
	f, err := c.command(ctx, protocol.Command{Type: protocol.FramePosition, Queue: queue})
	return positionOf(f), err
}

// Leave gives the user's place in an admission queue up.
func (c *Client) Leave(ctx context.Context, queue string) error {
	_, err := c.command(ctx, protocol.Command{Type: protocol.FrameLeave, Queue: queue})
	return err
}

// Subscribe subscribes to a board's window ("hour", "day", "week") and
// returns its Top of the current period; every change of it is pushed as
// a RankingEvent. limit ≤ 0 is the server's default. The subscription is
// made again after each reconnect.
func (c *Client) Subscribe(ctx context.Context, ranking, window string, limit int) (Ranking, error) {
	k := rankKey{ranking, window}
	s := &rankSub{busy: true}
	if limit > 0 {
		s.limit = &limit
	}
	c.mu.Lock()
	c.subs[k] = s
	c.mu.Unlock()
	r, err := c.subscribe(ctx, k, s.limit)
	c.mu.Lock()
	s.busy = false
	// Refused by the server: no subscription. Lost with the socket: it is
	// made again after the reconnect.
	var e *Error
	if errors.As(err, &e) && c.subs[k] == s {
		delete(c.subs, k)
	}
	c.mu.Unlock()
	return r, err
}

func (c *Client) subscribe(ctx context.Context, k rankKey, limit *int) (Ranking, error) {
	f, err := c.request(ctx, protocol.FrameSubscribe, "", func(id string) any {
		return protocol.RankingCommand{Type: protocol.FrameSubscribe, ID: id, Ranking: k.ranking, Window: k.window, Limit: limit}
	})
	return rankingOf(f), err
}

// Unsubscribe ends a subscription.
func (c *Client) Unsubscribe(ctx context.Context, ranking, window string) error {
	c.mu.Lock()
	delete(c.subs, rankKey{ranking, window})
	c.mu.Unlock()
	_, err := c.request(ctx, protocol.FrameUnsubscribe, "", func(id string) any {
		return protocol.RankingCommand{Type: protocol.FrameUnsubscribe, ID: id, Ranking: ranking, Window: window}
	})
	return err
}

// ProviderOnline puts the user (a provider token's) online in a provider
// queue with capacity slots and what it offers. This socket holds it
// online: it goes offline when the socket is gone for good.
func (c *Client) ProviderOnline(ctx context.Context, queue string, capacity int, attrs *Attributes) (Provider, error) {
	f, err := c.providerCommand(ctx, protocol.ProviderCommand{Type: protocol.FrameProviderOnline, Queue: queue, Capacity: &capacity, Attributes: attrs})
	return providerOf(f), err
}

// ProviderUpdate changes a provider's capacity or attributes in queue; nil
// leaves one as it is.
func (c *Client) ProviderUpdate(ctx context.Context, queue string, capacity *int, attrs *Attributes) (Provider, error) {
	f, err := c.providerCommand(ctx, protocol.ProviderCommand{Type: protocol.FrameProviderUpdate, Queue: queue, Capacity: capacity, Attributes: attrs})
	return providerOf(f), err
}

// ProviderOffline takes the user offline in queue: its running
// assignments go on, its open offers are withdrawn.
func (c *Client) ProviderOffline(ctx context.Context, queue string) (Provider, error) {
	f, err := c.providerCommand(ctx, protocol.ProviderCommand{Type: protocol.FrameProviderOffline, Queue: queue})
	return providerOf(f), err
}

// AcceptAssignment accepts an OFFERED assignment.
func (c *Client) AcceptAssignment(ctx context.Context, assignmentID string) (Assignment, error) {
	return c.assignmentCommand(ctx, protocol.FrameAssignmentAccept, assignmentID)
}

// DeclineAssignment declines an OFFERED assignment.
func (c *Client) DeclineAssignment(ctx context.Context, assignmentID string) (Assignment, error) {
	return c.assignmentCommand(ctx, protocol.FrameAssignmentDecline, assignmentID)
}

// EndAssignment ends an ACCEPTED assignment, freeing its slot.
func (c *Client) EndAssignment(ctx context.Context, assignmentID string) (Assignment, error) {
	return c.assignmentCommand(ctx, protocol.FrameAssignmentEnd, assignmentID)
}

func (c *Client) assignmentCommand(ctx context.Context, typ, id string) (Assignment, error) {
	f, err := c.providerCommand(ctx, protocol.ProviderCommand{Type: typ, AssignmentID: id})
	if f.Assignment == nil {
		return Assignment{}, err
	}
	return *f.Assignment, err
}

func (c *Client) command(ctx context.Context, cmd protocol.Command) (frame, error) {
	return c.request(ctx, cmd.Type, cmd.Queue, func(id string) any {
		cmd.ID = id
		return cmd
	})
}

func (c *Client) providerCommand(ctx context.Context, cmd protocol.ProviderCommand) (frame, error) {
	return c.request(ctx, cmd.Type, cmd.Queue, func(id string) any {
		cmd.ID = id
		return cmd
	})
}

func ticketOf(f frame) Ticket {
	if f.Ticket == nil {
		return Ticket{}
	}
	return *f.Ticket
}

func matchOf(f frame) Match {
	if f.Match == nil {
		return Match{}
	}
	return *f.Match
}

func positionOf(f frame) Position {
	if f.Position == nil {
		return Position{}
	}
	return *f.Position
}

func providerOf(f frame) Provider {
	if f.Provider == nil {
		return Provider{}
	}
	return *f.Provider
}

// The state the client holds: the newest version of each ticket, match
// and assignment it has heard of, its place in each admission queue and a
// provider's state in each provider queue. Each accessor returns copies.

// Hello is the last hello read.
func (c *Client) Hello() Hello {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hello
}

// Connected reports whether a socket is open now.
func (c *Client) Connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.link != nil
}

// Ticket is the newest state of a ticket heard of.
func (c *Client) Ticket(id string) (Ticket, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.st.tickets[id]
	return t, ok
}

// Match is the newest state of a match heard of.
func (c *Client) Match(id string) (Match, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.st.matches[id]
	return m, ok
}

// MatchForTicket is the match a ticket is seated in, by the ticket's
// matchId or (when the match arrived first) the match's players; a
// ticket seated in several (a dissolved match, then another) gets the
// newest.
func (c *Client) MatchForTicket(ticketID string) (Match, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.st.tickets[ticketID]; ok && t.MatchID != "" {
		if m, ok := c.st.matches[t.MatchID]; ok {
			return m, true
		}
	}
	var best Match
	found := false
	for _, m := range c.st.matches {
		if slices.ContainsFunc(m.Players, func(p protocol.ClientSeat) bool { return p.TicketID == ticketID }) &&
			(!found || m.CreatedAt.After(best.CreatedAt)) {
			best, found = m, true
		}
	}
	return best, found
}

// Tickets lists the tickets heard of, oldest first.
func (c *Client) Tickets() []Ticket {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Ticket, 0, len(c.st.tickets))
	for _, t := range c.st.tickets {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b Ticket) int {
		if n := a.EnqueuedAt.Compare(b.EnqueuedAt); n != 0 {
			return n
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// Waiting lists the WAITING tickets, oldest first.
func (c *Client) Waiting() []Ticket {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.waiting()
}

// Matches lists the matches heard of, oldest first.
func (c *Client) Matches() []Match {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Match, 0, len(c.st.matches))
	for _, m := range c.st.matches {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Match) int {
		if n := a.CreatedAt.Compare(b.CreatedAt); n != 0 {
			return n
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// Admission is the user's place in an admission queue as last heard: a
// reply, a push or hello. A place has no version on the wire, so a
// WAITING place heard in a reply or a push does not replace a READY one
// whose token is alive (the place only moves forward); an Enter and hello
// always do.
func (c *Client) Admission(queue string) (Position, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.st.admissions[queue]
	return p, ok
}

// Provider is the user's state in a provider queue as last heard.
func (c *Client) Provider(queue string) (Provider, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.st.providers[queue]
	return p, ok
}

// Assignment is the newest state of an assignment heard of.
func (c *Client) Assignment(id string) (Assignment, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.st.assignments[id]
	return a, ok
}

// LiveAssignments lists the OFFERED and ACCEPTED assignments in queue ("":
// every queue), oldest offer first.
func (c *Client) LiveAssignments(queue string) []Assignment {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Assignment
	for _, a := range c.st.assignments {
		if (a.Status == "OFFERED" || a.Status == "ACCEPTED") && (queue == "" || a.Queue == queue) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b Assignment) int { return a.OfferedAt.Compare(b.OfferedAt) })
	return out
}
