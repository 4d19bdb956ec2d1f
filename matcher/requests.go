package matcher

// JoinRequest asks for a new ticket. Skill comes from the caller's signed
// token when the trusted backend put it there; nil means unknown, and the
// ticket is marked estimated.
type JoinRequest struct {
	UserID     string
	Queue      string
	Region     string
	Skill      *float64
	Activity   *float64
	Attributes map[string]string
}

// TicketView is a ticket with its match, the answer of GET /v1/tickets/{id}.
type TicketView struct {
	Ticket Ticket `json:"ticket"`
	Match  *Match `json:"match"`
}

// QueueInfo describes one configured queue for GET /v1/queues.
type QueueInfo struct {
	Name    string         `json:"name"`
	Kind    string         `json:"kind"`
	Players int            `json:"players"`
	Regions []string       `json:"regions"`
	Depth   map[string]int `json:"depth"` // waiting tickets per region
}

// UserState is what a (re)connecting client is told first: its tickets that
// are waiting or recently resolved, and their matches.
type UserState struct {
	Tickets []Ticket `json:"tickets"`
	Matches []Match  `json:"matches"`
}
