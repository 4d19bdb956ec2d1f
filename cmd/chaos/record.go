package main

import (
	"bufio"
	"encoding/json"
	"os"
	"time"
)

// frameRec is one frame a player received, stamped when it was read.
type frameRec struct {
	At      time.Time       `json:"at"`
	Session int             `json:"session"`
	Raw     json.RawMessage `json:"frame"`
	f       inFrame
}

// sentRec is one command a player sent.
type sentRec struct {
	At       time.Time `json:"at"`
	Session  int       `json:"session"`
	ID       string    `json:"id"`
	Type     string    `json:"type"`
	Queue    string    `json:"queue,omitempty"`
	TicketID string    `json:"ticketId,omitempty"`
}

// sessionRec is one socket from hello to its end as the player saw it. A
// player is "connected" from Hello to End.
type sessionRec struct {
	N         int       `json:"n"`
	Gateway   string    `json:"gateway"`
	Node      string    `json:"node"`
	Dialed    time.Time `json:"dialed"`
	Hello     time.Time `json:"hello"`
	End       time.Time `json:"end"`
	EndReason string    `json:"endReason"` // drop, ghost, lost, stop
}

// playerRec is everything one player did and received. Only the player's
// goroutine writes it; the checks read it after every player has stopped.
type playerRec struct {
	User         string       `json:"user"`
	Skill        float64      `json:"skill"`
	Frames       []frameRec   `json:"frames"`
	Sent         []sentRec    `json:"sent"`
	Sessions     []sessionRec `json:"sessions"`
	Unanswered   []sentRec    `json:"unanswered,omitempty"`
	Anomalies    []string     `json:"anomalies,omitempty"`
	Drops        int          `json:"drops"`
	Ghosts       int          `json:"ghosts"`
	Lost         int          `json:"lost"`
	DialFailures int          `json:"dialFailures"`
	GaveUp       bool         `json:"gaveUp,omitempty"`
	GaveUpWhy    string       `json:"gaveUpWhy,omitempty"`
}

// connectedAt reports whether the player had a socket open (hello received,
// not yet ended) at t; end is the end of the run, for sessions still open.
func (r *playerRec) connectedAt(t, end time.Time) (sessionRec, bool) {
	for _, s := range r.Sessions {
		e := s.End
		if e.IsZero() {
			e = end
		}
		if !s.Hello.After(t) && e.After(t) {
			return s, true
		}
	}
	return sessionRec{}, false
}

// coverage is the fraction of [from, to] during which the player was
// connected.
func (r *playerRec) coverage(from, to, end time.Time) float64 {
	if !to.After(from) {
		return 0
	}
	var in time.Duration
	for _, s := range r.Sessions {
		e := s.End
		if e.IsZero() {
			e = end
		}
		a, b := s.Hello, e
		if a.Before(from) {
			a = from
		}
		if b.After(to) {
			b = to
		}
		if b.After(a) {
			in += b.Sub(a)
		}
	}
	return float64(in) / float64(to.Sub(from))
}

// writeFrames dumps every player's record as JSON lines, for forensics.
func writeFrames(path string, recs []*playerRec) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
