// Package pgtime holds times as PostgreSQL's timestamptz does, so that a
// record kept in PostgreSQL and its memory twin return identical values.
package pgtime

import "time"

// Stamp returns t as PostgreSQL stores it: UTC, microseconds. The zero
// time stays zero: a time not set, NULL in PostgreSQL.
func Stamp(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Microsecond)
}

// OrZero is a nullable timestamptz read back: UTC, zero for NULL.
func OrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// OrNull is a time to write, stamped: NULL for the zero time.
func OrNull(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = Stamp(t)
	return &t
}
