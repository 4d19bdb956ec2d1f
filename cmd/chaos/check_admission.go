package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// Violation kinds of the admission queue (docs/CHAOS.md, "What it
// checks").
const (
	vAdmEntryMissing     = "admission-entry-missing"           // a waiter told of a place the record does not hold
	vAdmPlaceLost        = "admission-place-lost"              // WAITING in the record, neither in the line nor in processing
	vAdmStillWaiting     = "admission-still-waiting"           // WAITING at the end although in the line: the admitter did not admit it
	vAdmTokenTwoPlaces   = "admission-token-on-two-places"     // one token value on two places
	vAdmTokenNotRecorded = "admission-token-not-recorded"      // a token a waiter was told that no place holds: issued twice
	vAdmTokenOtherUser   = "admission-token-other-user"        // a token told to (or claimed for) another user than its place's
	vAdmConsumedTwice    = "admission-consumed-twice"          // two consume 200s for one token
	vAdmClaimedTwice     = "admission-claimed-twice"           // more claim 200s than releases plus one
	vAdmConsumeDisagrees = "admission-consume-disagrees"       // a consume 200 for a token the record does not hold CONSUMED
	vAdmUnrequested      = "admission-unrequested"             // CONSUMED without a consume sent, LEFT without a leave sent
	vAdmOutOfOrder       = "admission-out-of-order"            // admitted after a later entry with no fault to explain it
	vAdmAbandonedPresent = "admission-abandoned-while-present" // a place ended under a waiter who kept asking for it
)

// admPlace is one row of admission_places.
type admPlace struct {
	Seq        int64
	User       string
	Status     string
	EnteredAt  time.Time
	Token      string
	AdmittedAt time.Time
}

func loadAdmission(ctx context.Context, pg *pgxpool.Pool) ([]admPlace, error) {
	rows, err := pg.Query(ctx, `SELECT seq, user_id, status, entered_at, coalesce(token, ''), admitted_at
		FROM admission_places WHERE queue = $1 ORDER BY seq`, gateQueue)
	if err != nil {
		return nil, fmt.Errorf("read admission_places: %w", err)
	}
	defer rows.Close()
	var out []admPlace
	for rows.Next() {
		var p admPlace
		var at *time.Time
		if err := rows.Scan(&p.Seq, &p.User, &p.Status, &p.EnteredAt, &p.Token, &at); err != nil {
			return nil, fmt.Errorf("read admission_places: %w", err)
		}
		if at != nil {
			p.AdmittedAt = *at
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// admWaiting counts the WAITING places of the gate queue (the settle).
func admWaiting(ctx context.Context, pg *pgxpool.Pool) (int, error) {
	var n int
	err := pg.QueryRow(ctx, `SELECT count(*) FROM admission_places WHERE queue = $1 AND status = 'WAITING'`, gateQueue).Scan(&n)
	return n, err
}

// admLineView says where Redis holds a waiter of the gate queue: in the
// line (its rank), in processing, or neither (the keys of
// admission/line/redis.go: <prefix>:{adm:<queue>}:line and :proc).
func admLineView(ctx context.Context, rdb redis.UniversalClient, prefix, user string) (inLine, inProc bool, detail string, err error) {
	base := prefix + ":{adm:" + gateQueue + "}:"
	rank, rerr := rdb.ZRank(ctx, base+"line", user).Result()
	switch {
	case rerr == nil:
		inLine = true
		detail = fmt.Sprintf("in the line at rank %d", rank)
	case !errors.Is(rerr, redis.Nil):
		return false, false, "", rerr
	}
	entry, perr := rdb.HGet(ctx, base+"proc", user).Result()
	switch {
	case perr == nil:
		inProc = true
		detail += fmt.Sprintf(" in processing (%q)", entry)
	case !errors.Is(perr, redis.Nil):
		return false, false, "", perr
	}
	if !inLine && !inProc {
		detail = "neither in the line nor in processing"
	}
	return inLine, inProc, detail, nil
}

// admStats is the admission part of the report.
type admStats struct {
	Waiters     int            `json:"waiters"`
	Entries     int64          `json:"entriesAnswered"`
	Places      int            `json:"places"`
	ByStatus    map[string]int `json:"byStatus"`
	Admitted    int            `json:"admitted"`
	Leaves      int            `json:"leavesSent"`
	WalkedAway  int            `json:"walkedAway"`
	TokensTold  map[string]int `json:"tokensToldBy"`
	ReadyPushes int64          `json:"readyPushes"`
	ReadyPolls  int64          `json:"readyPolls"`
	// The downstream: tokens it was handed, 200s by call, refusals by
	// "<call> <status> <code>".
	Handed   int            `json:"tokensHanded"`
	Claims   int            `json:"claims"`
	Releases int            `json:"releases"`
	Consumes int            `json:"consumes"`
	Refusals map[string]int `json:"refusals"`
	Kills    int            `json:"admitterKills"`
	// Ended counts the places waiters saw end without leaving them
	// (abandoned), by rest or ws.
	Ended     map[string]int `json:"endedUnderWaiters"`
	Inversion struct {
		// Out of Seq order, each after a fault that explains it (a place
		// returned from a dead admitter's processing, or added to the line
		// by a rebuild).
		Excused int `json:"excused"`
	} `json:"order"`
	Note string `json:"note,omitempty"`
}

// admCheck is the admission queue's checks, against the record and what
// the waiters and the downstream saw. faultsAt are the kills of the lease
// holder, gateway kills and wipes: the moments a place may be returned to
// the line or rebuilt into it out of order.
type admCheck struct {
	places   []admPlace
	waiters  []*waiterRec
	ds       map[string]*dsRec
	faultsAt []time.Time
	skew     time.Duration
	// abandonAfter is the gate queue's: a place is abandoned only after so
	// long without a socket or a poll.
	abandonAfter time.Duration
	view         func(user string) (inLine, inProc bool, detail string, err error)
	f            *findings
	st           admStats
}

func (a *admCheck) run() {
	a.st.ByStatus, a.st.TokensTold, a.st.Refusals = map[string]int{}, map[string]int{}, map[string]int{}
	a.st.Ended = map[string]int{}
	a.st.Places = len(a.places)
	byToken := map[string]*admPlace{}
	byUser := map[string][]*admPlace{}
	for i := range a.places {
		p := &a.places[i]
		a.st.ByStatus[p.Status]++
		byUser[p.User] = append(byUser[p.User], p)
		if p.Token == "" {
			continue
		}
		a.st.Admitted++
		if q, ok := byToken[p.Token]; ok {
			a.f.addf(vAdmTokenTwoPlaces, "", "", p.User, "token %s on places %d (%s) and %d (%s)", p.Token, q.Seq, q.User, p.Seq, p.User)
			continue
		}
		byToken[p.Token] = p
	}
	// Nobody lost: a WAITING place at the end is in the line or in
	// processing, and the settle gave the admitter time to admit it.
	for _, p := range a.places {
		if p.Status != "WAITING" {
			continue
		}
		inLine, inProc, detail, err := a.view(p.User)
		switch {
		case err != nil:
			a.f.addf(vAdmStillWaiting, "", "", p.User, "place %d WAITING at the end; Redis unreadable: %v", p.Seq, err)
		case !inLine && !inProc:
			a.f.addf(vAdmPlaceLost, "", "", p.User, "place %d (entered %s) WAITING at the end, %s", p.Seq, p.EnteredAt.Format(time.RFC3339Nano), detail)
		default:
			a.f.addf(vAdmStillWaiting, "", "", p.User, "place %d (entered %s) WAITING at the end, %s", p.Seq, p.EnteredAt.Format(time.RFC3339Nano), detail)
		}
	}
	// What the waiters were told.
	for _, w := range a.waiters {
		w.mu.Lock()
		entries, leaves, away, tokens := w.Entries, w.Leaves, w.WalkedAway, slices.Clone(w.Tokens)
		ended := slices.Clone(w.Ended)
		w.mu.Unlock()
		for _, e := range ended {
			a.st.Ended[e.Via]++
			// Judged only when the place held then ended ABANDONED (not a
			// token that expired before the waiter heard of it).
			var held *admPlace
			for _, p := range byUser[w.User] {
				if !p.EnteredAt.After(e.Seen) {
					held = p
				}
			}
			if held != nil && held.Status == "ABANDONED" {
				a.abandoned(w.User, e)
			}
		}
		a.st.Leaves += leaves
		if away {
			a.st.WalkedAway++
		}
		ps := byUser[w.User]
		if entries > 0 && len(ps) == 0 {
			a.f.addf(vAdmEntryMissing, "", "", w.User, "%d entries answered with a place, none in the record", entries)
		}
		left := 0
		for _, p := range ps {
			if p.Status == "LEFT" {
				left++
			}
		}
		if left > leaves {
			a.f.addf(vAdmUnrequested, "", "", w.User, "%d places LEFT, %d leaves sent", left, leaves)
		}
		for _, t := range tokens {
			a.st.TokensTold[t.Via]++
			p, ok := byToken[t.Token]
			switch {
			case !ok:
				a.f.addf(vAdmTokenNotRecorded, "", "", w.User, "told token %s by %s at %s; no place holds it", t.Token, t.Via, t.At.Format(time.RFC3339Nano))
			case p.User != w.User:
				a.f.addf(vAdmTokenOtherUser, "", "", w.User, "told token %s by %s: the token of %s's place %d", t.Token, t.Via, p.User, p.Seq)
			}
		}
	}
	// What the downstream did.
	a.st.Handed = len(a.ds)
	for _, r := range a.ds {
		a.st.Claims += r.Claims
		a.st.Releases += r.Releases
		a.st.Consumes += r.Consumes
		for k, n := range r.Codes {
			a.st.Refusals[k] += n
		}
		p := byToken[r.Token]
		if r.Consumes > 1 {
			a.f.addf(vAdmConsumedTwice, "", "", r.User, "token %s: %d consume answers 200", r.Token, r.Consumes)
		}
		if r.Claims > r.Releases+1 {
			a.f.addf(vAdmClaimedTwice, "", "", r.User, "token %s: %d claims answered 200, %d releases", r.Token, r.Claims, r.Releases)
		}
		if p == nil {
			continue // told to a waiter: reported above
		}
		for u := range r.Users {
			if u != p.User {
				a.f.addf(vAdmTokenOtherUser, "", "", r.User, "token %s answered for user %q, its place %d is %s's", r.Token, u, p.Seq, p.User)
			}
		}
		if r.Consumes > 0 && p.Status != "CONSUMED" {
			a.f.addf(vAdmConsumeDisagrees, "", "", p.User, "token %s consumed (200), place %d is %s", r.Token, p.Seq, p.Status)
		}
	}
	for _, p := range byToken {
		if p.Status == "CONSUMED" {
			if r, ok := a.ds[p.Token]; !ok || r.Sent == 0 {
				a.f.addf(vAdmUnrequested, "", "", p.User, "place %d CONSUMED, its token %s never sent to the downstream", p.Seq, p.Token)
			}
		}
	}
	a.order()
}

// abandoned judges a place that ended under a waiter still asking for it.
// Over REST, the server saw the waiter when it read the request sent at
// e.Seen, and abandons only abandonAfter after that, so the end cannot be
// known sooner. Over a socket, the gateway tells the line every second
// that the socket is open: a place that was WAITING on a socket open for
// 3 s cannot have been abandoned in that socket's life.
func (a *admCheck) abandoned(user string, e endSeen) {
	tol := time.Second + 2*a.skew
	switch e.Via {
	case "rest":
		if gap := e.At.Sub(e.Seen); gap < a.abandonAfter-tol {
			a.f.addf(vAdmAbandonedPresent, "", "", user, "polling: WAITING for the request sent at %s, NOT_ENTERED at %s, %s later (abandonAfter %s)",
				e.Seen.Format(time.RFC3339Nano), e.At.Format(time.RFC3339Nano), gap.Round(time.Millisecond), a.abandonAfter)
		}
	case "ws":
		if open := e.Seen.Sub(e.SocketFrom); open >= 3*time.Second+tol {
			a.f.addf(vAdmAbandonedPresent, "", "", user, "socket open since %s, WAITING at %s, NOT_ENTERED at %s",
				e.SocketFrom.Format(time.RFC3339Nano), e.Seen.Format(time.RFC3339Nano), e.At.Format(time.RFC3339Nano))
		}
	}
}

// order checks that the admitter admitted in Seq order. X is out of order
// when a place Y with a greater Seq was admitted in an earlier pass while X
// was already recorded (a second before, so its entry had reached the
// line). That is excused by a fault after X's entry and within orderExcuse
// before its admission: a waiter returned from a dead admitter's
// processing, or put back by the rebuild after a gateway died between the
// record and the line, or after the wipe.
func (a *admCheck) order() {
	var adm []*admPlace
	for i := range a.places {
		if !a.places[i].AdmittedAt.IsZero() {
			adm = append(adm, &a.places[i])
		}
	}
	slices.SortFunc(adm, func(x, y *admPlace) int {
		if c := x.AdmittedAt.Compare(y.AdmittedAt); c != 0 {
			return c
		}
		return int(x.Seq - y.Seq)
	})
	// Two passes of one admitter are at least a tick apart; admitters of
	// different processes may disagree by the skew.
	tol := 2*a.skew + 50*time.Millisecond
	for i, x := range adm {
		var by *admPlace
		for _, y := range adm[:i] {
			if y.Seq > x.Seq && y.AdmittedAt.Before(x.AdmittedAt.Add(-tol)) && x.EnteredAt.Before(y.AdmittedAt.Add(-time.Second-tol)) {
				by = y
				break
			}
		}
		if by == nil {
			continue
		}
		if a.excused(x) {
			a.st.Inversion.Excused++
			continue
		}
		a.f.addf(vAdmOutOfOrder, "", "", x.User, "place %d (entered %s) admitted at %s, after place %d admitted at %s",
			x.Seq, x.EnteredAt.Format(time.RFC3339Nano), x.AdmittedAt.Format(time.RFC3339Nano), by.Seq, by.AdmittedAt.Format(time.RFC3339Nano))
	}
}

// orderExcuse bounds how long after a fault a place may come back out of
// order: the lease's expiry (4 s), the processing grace (5 s) and the
// next sweep (1 s), with room for a slow machine.
const orderExcuse = 20 * time.Second

// excused reports whether a fault fell after x was recorded and shortly
// before it was admitted: a returned waiter was taken before its admitter
// died, a rebuilt one entered before its gateway died or the wipe.
func (a *admCheck) excused(x *admPlace) bool {
	at := x.AdmittedAt
	for _, f := range a.faultsAt {
		if f.After(x.EnteredAt.Add(-a.skew)) && !f.After(at.Add(a.skew)) && at.Sub(f) <= orderExcuse+a.skew {
			return true
		}
	}
	return false
}
