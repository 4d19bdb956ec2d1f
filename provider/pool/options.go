package pool

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Option tunes a pool at construction.
type Option func(*config)

type config struct {
	now func() time.Time
}

// WithClock sets the clock that Online and Refresh, which take no now,
// stamp a provider's last seen with (default time.Now): pass the clock of
// decisions. A nil clock keeps the default.
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now != nil {
			c.now = now
		}
	}
}

func configOf(opts []Option) config {
	c := config{now: time.Now}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// chunk bounds the user ids one Refresh script call gets, so that no call
// holds Redis for long; a larger Refresh runs as several calls.
const chunk = 1000

func checkQueue(queue string) error {
	// A brace would move the hash tag and split the queue's keys across
	// slots.
	if queue == "" || strings.ContainsAny(queue, "{}") {
		return fmt.Errorf("invalid queue %q", queue)
	}
	return nil
}

func checkUser(queue, user string) error {
	if err := checkQueue(queue); err != nil {
		return err
	}
	if user == "" {
		return errors.New("empty user id")
	}
	return nil
}

func checkAssignment(id string) error {
	if id == "" {
		return errors.New("empty assignment id")
	}
	return nil
}

// wrap adds the operation's context to a non-nil error.
func wrap(err *error, format string, args ...any) {
	if *err != nil {
		*err = fmt.Errorf("provider pool: "+format+": %w", append(args, *err)...)
	}
}

// fromMs is the instant of a stored unix ms, in UTC; 0 is the zero time.
func fromMs(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
