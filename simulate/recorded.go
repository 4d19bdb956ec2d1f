package simulate

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Recorded is one line of a recorded stream, as `matchgate export-arrivals`
// writes it from the record (docs/SIMULATE.md, "A recorded stream"): a
// ticket, in join order.
type Recorded struct {
	// At is the join (the ticket's enqueue time).
	At     time.Time `json:"at"`
	User   string    `json:"user"`
	Queue  string    `json:"queue"`
	Region string    `json:"region"`
	Skill  float64   `json:"skill"`
	// Estimated: the skill was the skill service's last known value, not
	// the token's.
	Estimated bool `json:"estimated,omitempty"`
	// Status is how the ticket stood when exported: WAITING, MATCHED,
	// CANCELLED or EXPIRED; CancelReason why it was cancelled.
	Status       string `json:"status"`
	CancelReason string `json:"cancelReason,omitempty"`
	// CancelledAfter is how long after joining the player cancelled, for a
	// ticket the player cancelled.
	CancelledAfter Duration `json:"cancelledAfter,omitempty"`
	// Reply is the player's answer to an accept window when the record
	// tells it: accept (seated in a match they accepted), decline, or
	// silence (cancelled when the window closed unanswered). ReplyAfter is
	// how long after the match formed a decline came; the record keeps no
	// time for an accept.
	Reply      string   `json:"reply,omitempty"`
	ReplyAfter Duration `json:"replyAfter,omitempty"`
}

// Replies of a Recorded.
const (
	ReplyAccept  = "accept"
	ReplyDecline = "decline"
	ReplySilence = "silence"
)

// Duration is a duration written as text in JSON ("1.5s").
type Duration time.Duration

// MarshalText writes d as time.Duration prints it.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads what time.ParseDuration reads.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// loadRecorded reads the scenario's arrivals.file into its list: the
// first record joins at the scenario's start, every other one as long
// after it as it came after the first in the record. Without a start in
// the scenario, the start is the first record's instant, so that the
// report's hours of the day are the recorded ones. A player who joined
// more than once becomes a new player at each join after the first
// ("user~2", …), as every join of a run is a new player's.
func (sc *Scenario) loadRecorded() error {
	if sc.Arrivals.File == "" || sc.recorded {
		return nil
	}
	if len(sc.Arrivals.List) > 0 {
		return errors.New("arrivals: a list or a file, not both")
	}
	path := sc.Arrivals.File
	if !filepath.IsAbs(path) && sc.dir != "" {
		path = filepath.Join(sc.dir, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("arrivals: %w", err)
	}
	defer f.Close()
	list, first, err := readRecorded(f)
	if err != nil {
		return fmt.Errorf("arrivals: %s: %w", path, err)
	}
	if len(list) == 0 {
		return fmt.Errorf("arrivals: %s: no joins", path)
	}
	if sc.Start.IsZero() {
		sc.Start = first
	}
	sc.Arrivals.List = list
	sc.recorded = true
	return nil
}

// readRecorded reads a recorded stream, one JSON object a line (blank
// lines skipped), into joins timed from the first record, which it
// returns too.
func readRecorded(r io.Reader) ([]Join, time.Time, error) {
	var (
		list  []Join
		first time.Time
		times = map[string]int{} // joins of each recorded user so far
		users = map[string]bool{}
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var rec Recorded
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, first, fmt.Errorf("line %d: %w", line, err)
		}
		switch {
		case rec.At.IsZero() || rec.User == "":
			return nil, first, fmt.Errorf("line %d: at and user are required", line)
		case math.IsNaN(rec.Skill) || math.IsInf(rec.Skill, 0):
			return nil, first, fmt.Errorf("line %d: skill must be finite", line)
		}
		if len(list) == 0 {
			first = rec.At.UTC()
		}
		at := rec.At.Sub(first)
		if at < 0 || (len(list) > 0 && at < list[len(list)-1].At) {
			return nil, first, fmt.Errorf("line %d: at %s is before the line above: the stream must be in join order", line, rec.At.Format(time.RFC3339Nano))
		}
		user := rec.User
		times[rec.User]++
		for n := times[rec.User]; users[user]; n++ {
			user = rec.User + "~" + strconv.Itoa(n)
		}
		users[user] = true
		told, err := rec.told()
		if err != nil {
			return nil, first, fmt.Errorf("line %d: %w", line, err)
		}
		list = append(list, Join{At: at, User: user, Skill: rec.Skill, Region: rec.Region, told: told})
	}
	if err := sc.Err(); err != nil {
		return nil, first, err
	}
	return list, first, nil
}

// told is what the record says the player did: a cancel by the player
// after CancelledAfter (no other ticket cancelled while waiting), and the
// answer to an accept window when Reply names it.
func (rec Recorded) told() (*toldBehaviour, error) {
	t := &toldBehaviour{}
	if rec.Status == "CANCELLED" && rec.CancelReason == "user" {
		t.cancelAfter = max(time.Duration(rec.CancelledAfter), time.Millisecond)
	}
	switch rec.Reply {
	case "":
	case ReplyAccept:
		t.replyKnown, t.reply = true, replyAccept
	case ReplyDecline:
		t.replyKnown, t.reply = true, replyDecline
	case ReplySilence:
		t.replyKnown, t.reply = true, replySilence
	default:
		return nil, fmt.Errorf("reply %q: want accept, decline or silence", rec.Reply)
	}
	if rec.ReplyAfter > 0 {
		t.afterKnown, t.replyAfter = true, time.Duration(rec.ReplyAfter)
	}
	return t, nil
}
