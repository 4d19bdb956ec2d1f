package record

import (
	"fmt"
	"time"

	"github.com/matchgate/matchgate/admission"
)

// Both implementations pass every input through the functions of this file
// before touching storage, so that they accept and refuse the same values
// and return identical places.

// enterAttempts bounds the tries of one entry when the live place that
// refused it ends before it is read.
const enterAttempts = 3

// expired reports whether a token expiring at expiresAt is past its life at
// now. Claim, Consume and Release judge by the caller's now, so that what
// they answer does not depend on whether Expire has run yet.
func expired(expiresAt, now time.Time) bool { return !now.Before(expiresAt) }

func checkEnter(queue, userID string, now time.Time) error {
	switch {
	case queue == "":
		return fmt.Errorf("enter %s: no queue", userID)
	case userID == "":
		return fmt.Errorf("enter %s: no user", queue)
	case now.IsZero():
		return fmt.Errorf("enter %s of %s: no entry time", queue, userID)
	}
	return nil
}

// checkAdmit refuses an admission the record could not apply as one: each
// admit names a place once and brings a token of its own.
func checkAdmit(queue string, epoch int64, admits []admission.Admit, now time.Time, ttl time.Duration) error {
	switch {
	case epoch <= 0:
		return fmt.Errorf("admit to %s: epoch %d must be positive", queue, epoch)
	case ttl <= 0:
		return fmt.Errorf("admit to %s: token life %v must be positive", queue, ttl)
	case now.IsZero():
		return fmt.Errorf("admit to %s: no admission time", queue)
	}
	seqs := make(map[int64]bool, len(admits))
	tokens := make(map[string]bool, len(admits))
	for _, a := range admits {
		switch {
		case a.Token == "":
			return fmt.Errorf("admit %s (seq %d) to %s: no token", a.UserID, a.Seq, queue)
		case seqs[a.Seq]:
			return fmt.Errorf("admit to %s: seq %d admitted twice", queue, a.Seq)
		case tokens[a.Token]:
			return fmt.Errorf("admit to %s: one token for two places", queue)
		}
		seqs[a.Seq], tokens[a.Token] = true, true
	}
	return nil
}

func checkEpoch(queue string, epoch int64) error {
	if epoch <= 0 {
		return fmt.Errorf("set admitter epoch of %s: epoch %d must be positive", queue, epoch)
	}
	return nil
}

func checkLimit(what string, limit int) error {
	if limit <= 0 {
		return fmt.Errorf("%s: limit %d must be positive", what, limit)
	}
	return nil
}
