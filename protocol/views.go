package protocol

import "github.com/matchgate/matchgate/matcher"

// TicketView is the body of GET /v1/tickets/{id}: the ticket, its match
// once it has one, and while it waits why no match has formed yet.
type TicketView struct {
	Ticket  WireTicket       `json:"ticket"`
	Match   *WireMatch       `json:"match"`
	Explain *matcher.Explain `json:"explain,omitempty"`
}

// TicketViewOf is v in its wire shape.
func TicketViewOf(v matcher.TicketView) TicketView {
	w := TicketView{Ticket: TicketOf(v.Ticket), Explain: v.Explain}
	if v.Match != nil {
		m := MatchOf(*v.Match)
		w.Match = &m
	}
	return w
}

// TicketsOf is ts in their wire shape; never nil, so that the wire says [].
func TicketsOf(ts []matcher.Ticket) []WireTicket {
	w := make([]WireTicket, len(ts))
	for i, t := range ts {
		w[i] = TicketOf(t)
	}
	return w
}

// MatchesOf is ms in their wire shape; never nil.
func MatchesOf(ms []matcher.Match) []WireMatch {
	w := make([]WireMatch, len(ms))
	for i, m := range ms {
		w[i] = MatchOf(m)
	}
	return w
}

// History is the body of GET /v1/tickets: a page of the user's resolved
// tickets and their matches (and hello's and status's lists likewise).
type History struct {
	Tickets []WireTicket `json:"tickets"`
	Matches []WireMatch  `json:"matches"`
	More    bool         `json:"more,omitempty"`
	Next    string       `json:"next,omitempty"`
}

// HistoryOf is st in its wire shape.
func HistoryOf(st matcher.UserState) History {
	return History{Tickets: TicketsOf(st.Tickets), Matches: MatchesOf(st.Matches), More: st.More, Next: st.Next}
}
