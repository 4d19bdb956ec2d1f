package matcher

import (
	"time"
)

// TicketStatus is the life cycle of one waiting player:
// WAITING → MATCHED | CANCELLED | EXPIRED. Only WAITING is not terminal.
type TicketStatus string

const (
	StatusWaiting   TicketStatus = "WAITING"
	StatusMatched   TicketStatus = "MATCHED"
	StatusCancelled TicketStatus = "CANCELLED"
	StatusExpired   TicketStatus = "EXPIRED"
)

// Cancel reasons recorded on a CANCELLED ticket.
const (
	ReasonUser          = "user"
	ReasonHeartbeat     = "heartbeat"
	ReasonDeclined      = "declined"
	ReasonAcceptTimeout = "accept_timeout"
	// ReasonSuperseded ends a ticket that would have gone back to WAITING
	// when its match dissolved, but whose player had meanwhile joined
	// another queue (one WAITING ticket per user).
	ReasonSuperseded = "superseded"
	// ReasonBanned ends a ticket whose player was banned while joining.
	ReasonBanned = "banned"
)

// Ticket is one waiting player in one queue. Deadline is stamped once at join
// and never moves; Version grows with every change so that clients can keep the
// newest of a push, a hello and a GET.
type Ticket struct {
	ID     string `json:"id"`
	UserID string `json:"userId"`
	// Name is the player's display name (CleanName's), "" for none: for
	// display only, never part of the identity.
	Name         string            `json:"name,omitempty"`
	Queue        string            `json:"queue"`
	Region       string            `json:"region"`
	Status       TicketStatus      `json:"status"`
	Skill        float64           `json:"skill"`
	Estimated    bool              `json:"estimated"`
	Activity     float64           `json:"-"`
	Attributes   map[string]string `json:"attributes,omitempty"`
	EnqueuedAt   time.Time         `json:"enqueuedAt"`
	HeadStart    time.Duration     `json:"-"`
	Deadline     time.Time         `json:"deadline"`
	MatchID      string            `json:"matchId,omitempty"`
	CancelReason string            `json:"cancelReason,omitempty"`
	UpdatedAt    time.Time         `json:"updatedAt"`
	Version      int64             `json:"version"`
	// Relaxed is set only on the ticket of a provider queue's push when
	// the wait drops a constraint: the constraints dropped so far. The
	// record never holds it.
	Relaxed []string `json:"-"`
}

// Partition names the (queue, region) a ticket waits in. A sharded queue
// splits it further: see QueueConfig.PoolOf for the pool itself.
func (t Ticket) Partition() Partition { return Partition{Queue: t.Queue, Region: t.Region} }

// EffectiveEnqueue is the wait-order clock: enqueue time minus the priority
// head start. The deadline is computed from EnqueuedAt, never from this.
func (t Ticket) EffectiveEnqueue() time.Time { return t.EnqueuedAt.Add(-t.HeadStart) }

// Match states.
const (
	MatchPendingAccept = "PENDING_ACCEPT"
	MatchReady         = "READY"
	MatchDissolved     = "DISSOLVED"
)

// How a match was formed.
const (
	FormedFilled   = "FILLED"
	FormedFallback = "FALLBACK"
	FormedTimeout  = "TIMEOUT"
)

// Player is one seat of a match.
type Player struct {
	TicketID string `json:"ticketId"`
	UserID   string `json:"userId"`
	// Name is the display name of the player's ticket, "" for none.
	Name  string  `json:"name,omitempty"`
	Skill float64 `json:"skill"`
}

// ProviderSeat is the provider a provider queue's match gives the requester
// to: the user with capacity, the score that chose them, and each term's
// contribution to it ({"specialty": 0.4, …}). The provider is not seated:
// the match's only player is the requester.
type ProviderSeat struct {
	UserID string             `json:"userId"`
	Score  float64            `json:"score"`
	Parts  map[string]float64 `json:"parts,omitempty"`
}

// Server is where the players of a READY match meet.
type Server struct {
	Address string `json:"address"`
	Session string `json:"session"`
}

// Match is a formed group of players.
type Match struct {
	ID       string   `json:"id"`
	Queue    string   `json:"queue"`
	Region   string   `json:"region"`
	State    string   `json:"state"`
	FormedBy string   `json:"formedBy"`
	Players  []Player `json:"players"`
	// Provider is set only on a provider queue's match, whose one player
	// (the requester) is given to it; nil for every other match.
	Provider *ProviderSeat `json:"provider,omitempty"`
	Bots     int           `json:"bots"`
	Spread   float64       `json:"spread"`
	// Server is where the players meet. The record always has it (the
	// allocation happens before the commit); the wire shows it only once
	// the match is READY, so nobody connects before everyone accepted.
	Server   *Server    `json:"server"`
	AcceptBy *time.Time `json:"acceptBy"`
	// Accepted lists the users who accepted, in the order they did; nil
	// when nobody has (or the queue has no accept step).
	Accepted  []string  `json:"accepted"`
	CreatedAt time.Time `json:"createdAt"`
	Version   int64     `json:"version"`
	// Shard is the sub-pool of a sharded queue whose lease fenced the
	// commit ("" for an unsharded queue). It only names the lease the
	// commit is checked against and is not part of the record.
	Shard string `json:"-"`
}

// Seated reports whether userID has a seat in the match.
func (m Match) Seated(userID string) bool {
	for _, p := range m.Players {
		if p.UserID == userID {
			return true
		}
	}
	return false
}

// Acceptor reports whether userID is one who answers the match's accept
// window: the provider of a provider match (its requester asked for it and
// has nothing to accept), else any seated player.
func (m Match) Acceptor(userID string) bool {
	if m.Provider != nil {
		return userID != "" && userID == m.Provider.UserID
	}
	return m.Seated(userID)
}

// HasAccepted reports whether userID has accepted the match.
func (m Match) HasAccepted(userID string) bool {
	for _, u := range m.Accepted {
		if u == userID {
			return true
		}
	}
	return false
}

// UserIDs lists the users seated in the match.
func (m Match) UserIDs() []string {
	ids := make([]string, len(m.Players))
	for i, p := range m.Players {
		ids[i] = p.UserID
	}
	return ids
}

// Told lists the users a match's events go to: its players and, for a
// provider queue's match, the provider (pushed the assignment rather than
// the match: see notify).
func (m Match) Told() []string {
	ids := m.UserIDs()
	if m.Provider != nil {
		ids = append(ids, m.Provider.UserID)
	}
	return ids
}

// TicketIDs lists the tickets seated in the match.
func (m Match) TicketIDs() []string {
	ids := make([]string, len(m.Players))
	for i, p := range m.Players {
		ids[i] = p.TicketID
	}
	return ids
}

// Partition is one independently matched pool: a queue in a region, and for
// a sharded queue one of its sub-pools ("s0", "s1", … or the overflow pool
// "ov"). Every sub-pool of a (queue, region) shares one Redis hash tag.
type Partition struct {
	Queue  string
	Region string
	Shard  string
}

// String is "queue:region", or "queue:region/shard" for a sub-pool: the
// name of its keys, its lease and its fencing epoch.
func (p Partition) String() string {
	if p.Shard == "" {
		return p.Queue + ":" + p.Region
	}
	return p.Queue + ":" + p.Region + "/" + p.Shard
}

// Base is the (queue, region) of a sub-pool.
func (p Partition) Base() Partition { return Partition{Queue: p.Queue, Region: p.Region} }

// OverflowShard names the overflow pool of a sharded queue.
const OverflowShard = "ov"

// EventKind is what an Event reports.
type EventKind uint8

const (
	// EventTicketUpdated: a ticket's new state, for its owner.
	EventTicketUpdated EventKind = iota + 1
	// EventMatchFound: a match formed, for every player (and the provider
	// of a provider queue's match, as every match event).
	EventMatchFound
	// EventMatchReady: everyone accepted; the match carries its server.
	EventMatchReady
	// EventMatchDissolved: the match will not be played (Reason says
	// why); each player's EventTicketUpdated follows.
	EventMatchDissolved
)

// Event is a domain event, for some users: written by the ledger as data in
// the same transaction as the state change it reports (the outbox), carried
// by the outbox and published at least once. It is rendered into a frame
// only at the edge (the notify package, with the protocol's appenders).
type Event struct {
	ID     int64
	Kind   EventKind
	Users  []string
	Ticket Ticket // EventTicketUpdated
	Match  Match  // the match events
	// Reason of EventMatchDissolved: ReasonDeclined or ReasonAcceptTimeout.
	Reason    string
	CreatedAt time.Time
}

// TicketUpdatedEvent is the event announcing t's new state to its owner.
func TicketUpdatedEvent(t Ticket) Event {
	return Event{Kind: EventTicketUpdated, Users: []string{t.UserID}, Ticket: t}
}

// MatchFoundEvent is the event announcing a formed match to every player.
func MatchFoundEvent(m Match) Event {
	return Event{Kind: EventMatchFound, Users: m.Told(), Match: m}
}

// MatchReadyEvent is the event telling every player that everyone accepted.
func MatchReadyEvent(m Match) Event {
	return Event{Kind: EventMatchReady, Users: m.Told(), Match: m}
}

// MatchDissolvedEvent is the event telling every player that m will not be
// played, and why.
func MatchDissolvedEvent(m Match, reason string) Event {
	return Event{Kind: EventMatchDissolved, Users: m.Told(), Match: m, Reason: reason}
}
