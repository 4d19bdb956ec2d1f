package matcher

import "time"

// JoinRequest asks for a new ticket. Skill comes from the caller's signed
// token when the trusted backend put it there; nil means unknown: the
// Service asks its skill service, and failing that the ticket is marked
// estimated.
type JoinRequest struct {
	UserID string
	// Name is the display name the player's token carries, cleaned by the
	// join (CleanName); "" for none.
	Name       string
	Queue      string
	Region     string
	Skill      *float64
	Activity   *float64
	Attributes map[string]string
	// Priority is the head start the caller's token grants on the
	// wait-order clock (a paid tier, a tournament re-queue); the queue's
	// PriorityCap caps it and the deadline ignores it. Negative is none.
	Priority time.Duration
}

// TicketView is a ticket with its match, the answer of GET /v1/tickets/{id}.
// While the ticket is WAITING, Explain says why no match has formed yet.
type TicketView struct {
	Ticket  Ticket   `json:"ticket"`
	Match   *Match   `json:"match"`
	Explain *Explain `json:"explain,omitempty"`
}

// What an Explain reports as missing.
const (
	MissingPlayers    = "players"        // fewer candidates in the window than seats
	MissingCoherence  = "coherent_group" // enough in the window, but not close enough to each other
	MissingAllocation = "allocation"     // a group was found, no server could be had
	MissingProvider   = "provider"       // no provider online can take the requester now
)

// Explain is why a WAITING ticket has no match yet (ARCHITECTURE.md §6).
type Explain struct {
	// Waited is the time since the join, in seconds.
	Waited float64 `json:"waited"`
	// Window is the ticket's current half-width (skill queues; null for
	// rooms): how far in distance a match may reach from the player now.
	Window *float64 `json:"window"`
	// CandidatesInWindow counts the other waiting players of the ticket's
	// pool within Window (rooms: every other waiting player).
	CandidatesInWindow int `json:"candidatesInWindow"`
	// PlayersNeeded is how many more candidates a full match needs.
	PlayersNeeded int `json:"playersNeeded"`
	// Missing is "players", "coherent_group", "allocation" or (provider
	// queues) "provider"; empty when
	// nothing is: the ticket is being matched right now.
	Missing string `json:"missing"`
	// OfferedTo lists the adjacent regions the player is offered to.
	OfferedTo []string `json:"offeredTo,omitempty"`
	// Overflow is true once the player waits in the overflow pool of a
	// sharded queue.
	Overflow bool `json:"overflow,omitempty"`
	// NoProvider (provider queues) says why no provider can take the
	// requester yet: "no provider online", or the providers online counted
	// by the first reason each cannot ("3 online: 2 without language fr,
	// 1 at capacity"). Relaxed lists the constraints the wait has dropped.
	NoProvider string   `json:"noProvider,omitempty"`
	Relaxed    []string `json:"relaxed,omitempty"`
	// ShedTier (provider queues) is the shed tier the line's length puts
	// scoring at now: 0 scores every term, i drops those of the queue's
	// shed tiers 1..i.
	ShedTier int `json:"shedTier,omitempty"`
	// EstimatedWait is the queue's typical wait in the ticket's region in
	// seconds (the median of recent real waits); null without recent data.
	EstimatedWait *float64 `json:"estimatedWait"`
}

// QueueInfo describes one configured queue for GET /v1/queues.
type QueueInfo struct {
	Name    string         `json:"name"`
	Kind    string         `json:"kind"`
	Players int            `json:"players"`
	Regions []string       `json:"regions"`
	Depth   map[string]int `json:"depth"` // waiting tickets per region
	// Providers counts a provider queue's providers (nil for other kinds).
	Providers *ProviderCounts `json:"providers,omitempty"`
	QueueStats
}

// ProviderCounts are a provider queue's providers by state — online with
// a free slot, busy (online, every slot held), offline — and the slots
// held and offered by those online.
type ProviderCounts struct {
	Online   int `json:"online"`
	Busy     int `json:"busy"`
	Offline  int `json:"offline"`
	Used     int `json:"used"`
	Capacity int `json:"capacity"`
}

// QueueStats summarise a queue's recent real outcomes (kept in Redis, the
// last 1000 tickets and matches per region; see stats.go).
type QueueStats struct {
	// MatchesPerMinute over the last 5 minutes.
	MatchesPerMinute float64 `json:"matchesPerMinute"`
	// Wait percentiles, in seconds, of the tickets resolved in the last
	// hour (matched or expired); null without data.
	Wait *WaitPercentiles `json:"wait"`
	// TimeoutFraction is the share of those tickets resolved by the
	// deadline (a TIMEOUT match or EXPIRED): the product dial of seed 001.
	TimeoutFraction float64 `json:"timeoutFraction"`
	// EstimatedWait is the median wait (Wait.P50); null without data.
	EstimatedWait *float64 `json:"estimatedWait"`
	// Samples is the number of tickets the percentiles are taken over.
	Samples int `json:"samples"`
}

// WaitPercentiles are nearest-rank percentiles of recent waits, in seconds.
type WaitPercentiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
}

// UserState is what a (re)connecting client is told first, bounded: its
// live tickets (waiting, or in a match pending accept or ready), its few
// most recently resolved tickets, and their matches. It is also a page of
// GET /v1/tickets. More reports that older resolved tickets were left out;
// Next is the cursor that pages on to them (GET /v1/tickets?before=Next).
type UserState struct {
	Tickets []Ticket `json:"tickets"`
	Matches []Match  `json:"matches"`
	More    bool     `json:"more,omitempty"`
	Next    string   `json:"next,omitempty"`
}
