package protocol

import (
	"encoding/json"
	"maps"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/provider"
)

// A provider queue on the wire (README "Protocol"): a provider's state in
// a queue (ProviderView), its assignments (AssignmentView), a queue's
// presence (PresenceBody), and the frames a provider is pushed for the
// matches that offer it a requester (ProviderFrame). These are not hot
// paths: encoding/json writes them.

// ProviderView is a provider in one provider queue: online or not, its
// capacity and the slots its assignments hold, its attributes, when it
// was last known connected, and its live assignments (when known).
type ProviderView struct {
	Queue       string              `json:"queue"`
	UserID      string              `json:"userId"`
	Online      bool                `json:"online"`
	Capacity    int                 `json:"capacity"`
	Used        int                 `json:"used"`
	Attributes  provider.Attributes `json:"attributes"`
	LastSeen    wireTime            `json:"lastSeen"`
	Assignments []AssignmentView    `json:"assignments,omitempty"`
}

// RequesterView names the requester of an assignment: its user and the
// ticket it waited with.
type RequesterView struct {
	UserID   string `json:"userId"`
	TicketID string `json:"ticketId"`
}

// AssignmentView is an assignment of a requester to a provider's slot:
// OFFERED (until acceptBy; null when the queue assigns at once), ACCEPTED,
// or ended DECLINED, EXPIRED or ENDED. Score and its parts are the
// provider's fit; acceptedAt, endedAt and endReason are present once they
// happened.
type AssignmentView struct {
	ID         string             `json:"id"`
	Queue      string             `json:"queue"`
	Status     provider.Status    `json:"status"`
	Requester  RequesterView      `json:"requester"`
	Score      float64            `json:"score"`
	Parts      map[string]float64 `json:"parts,omitempty"`
	OfferedAt  wireTime           `json:"offeredAt"`
	AcceptBy   wireTime           `json:"acceptBy"`
	AcceptedAt *wireTime          `json:"acceptedAt,omitempty"`
	EndedAt    *wireTime          `json:"endedAt,omitempty"`
	EndReason  string             `json:"endReason,omitempty"`
	Version    int64              `json:"version"`
}

// PresenceBody is the body of GET /v1/presence/providers: a provider
// queue's providers online (with a free slot), busy (online, every slot
// held) and offline, and the slots the online ones hold and offer.
type PresenceBody struct {
	Queue    string         `json:"queue"`
	Online   []ProviderView `json:"online"`
	Busy     []ProviderView `json:"busy"`
	Offline  []ProviderView `json:"offline"`
	Used     int            `json:"used"`
	Capacity int            `json:"capacity"`
}

func optionalTime(t time.Time) *wireTime {
	if t.IsZero() {
		return nil
	}
	w := wireTime(t)
	return &w
}

// attributesOf copies a's lists, so a view never shares them with the
// domain value it was made from.
func attributesOf(a provider.Attributes) provider.Attributes {
	return provider.Attributes{
		Languages:    clip(a.Languages),
		Specialties:  clip(a.Specialties),
		SessionTypes: clip(a.SessionTypes),
		Rating:       a.Rating,
	}
}

func clip(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return append([]string(nil), s...)
}

// ProviderOf is p in its wire shape with its live assignments (nil: none
// listed).
func ProviderOf(p provider.Provider, live []provider.Assignment) ProviderView {
	v := ProviderView{
		Queue: p.Queue, UserID: p.UserID, Online: p.Online, Capacity: p.Capacity, Used: p.Used,
		Attributes: attributesOf(p.Attributes), LastSeen: wireTime(p.LastSeen),
	}
	for _, a := range live {
		v.Assignments = append(v.Assignments, AssignmentOf(a))
	}
	return v
}

// ProviderStateOf is a provider's state in one queue (hello, and GET
// /v1/providers/me/{queue}); a provider the live pool does not know is
// offline with no capacity in st.Queue.
func ProviderStateOf(userID string, st provider.State) ProviderView {
	p := st.Provider
	if !st.Known {
		p = provider.Provider{}
	}
	if p.Queue == "" {
		p.Queue = st.Queue
	}
	if p.UserID == "" {
		p.UserID = userID
	}
	return ProviderOf(p, st.Assignments)
}

// PresenceOf is a queue's presence in its wire shape; the lists are never
// null.
func PresenceOf(p provider.Presence) PresenceBody {
	list := func(ps []provider.Provider) []ProviderView {
		out := make([]ProviderView, 0, len(ps))
		for _, x := range ps {
			out = append(out, ProviderOf(x, nil))
		}
		return out
	}
	return PresenceBody{Queue: p.Queue, Online: list(p.Online), Busy: list(p.Busy), Offline: list(p.Offline),
		Used: p.Used, Capacity: p.Capacity}
}

// AssignmentOf is a in its wire shape.
func AssignmentOf(a provider.Assignment) AssignmentView {
	return AssignmentView{
		ID: a.ID, Queue: a.Queue, Status: a.Status,
		Requester: RequesterView{UserID: a.Requester, TicketID: a.TicketID},
		Score:     a.Score, Parts: maps.Clone(a.Parts),
		OfferedAt: wireTime(a.OfferedAt), AcceptBy: wireTime(a.AcceptBy),
		AcceptedAt: optionalTime(a.AcceptedAt), EndedAt: optionalTime(a.EndedAt),
		EndReason: a.EndReason, Version: a.Version,
	}
}

// AssignmentOfMatch is a provider match as the provider's assignment: the
// match id is the assignment's, its requester the one player; a pending
// match is OFFERED, a ready one ACCEPTED, a dissolved one DECLINED, or
// EXPIRED when reason is matcher.ReasonAcceptTimeout; the score and its
// parts are the match's provider seat's.
func AssignmentOfMatch(m matcher.Match, reason string) AssignmentView {
	v := AssignmentView{ID: m.ID, Queue: m.Queue, OfferedAt: wireTime(m.CreatedAt), Version: m.Version}
	if m.Provider != nil {
		v.Score, v.Parts = m.Provider.Score, maps.Clone(m.Provider.Parts)
	}
	if len(m.Players) > 0 {
		v.Requester = RequesterView{UserID: m.Players[0].UserID, TicketID: m.Players[0].TicketID}
	}
	if m.AcceptBy != nil {
		v.AcceptBy = wireTime(*m.AcceptBy)
	}
	switch m.State {
	case matcher.MatchPendingAccept:
		v.Status = provider.StatusOffered
	case matcher.MatchReady:
		v.Status = provider.StatusAccepted
	case matcher.MatchDissolved:
		v.Status, v.EndReason = provider.StatusDeclined, matcher.ReasonDeclined
		if reason == matcher.ReasonAcceptTimeout {
			v.Status, v.EndReason = provider.StatusExpired, "expired"
		}
	default:
		v.Status = provider.Status(m.State)
	}
	return v
}

// ProviderFrame is the frame the provider of a provider match is pushed
// for e: a found match is assignment.offered (OFFERED, or ACCEPTED when
// the queue assigns at once), a ready one assignment.update ACCEPTED, a
// dissolved one assignment.update DECLINED or EXPIRED; nil for any other
// event, and for a match without a provider seat.
func ProviderFrame(e matcher.Event) []byte {
	if e.Match.Provider == nil {
		return nil
	}
	var typ string
	switch e.Kind {
	case matcher.EventMatchFound:
		typ = FrameAssignmentOffered
	case matcher.EventMatchReady, matcher.EventMatchDissolved:
		typ = FrameAssignmentUpdate
	default:
		return nil
	}
	a := AssignmentOfMatch(e.Match, e.Reason)
	b, err := json.Marshal(ProviderReply{Type: typ, Assignment: &a})
	if err != nil {
		// Only a non-finite score could fail, and scores are finite.
		return nil
	}
	return b
}
