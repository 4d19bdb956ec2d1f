package pool

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

// The argument checks both pools make, so that Pool and Memory refuse the
// same calls with the same errors.

// checkScans checks the partition and scans of a ScanMany.
func checkScans(partition string, scans []Scan) error {
	if err := checkPartition(partition); err != nil {
		return err
	}
	for _, s := range scans {
		if s.mode == "nearest" && (math.IsNaN(s.skill) || math.IsInf(s.skill, 0)) {
			return fmt.Errorf("nearest: skill %v not finite", s.skill)
		}
	}
	return nil
}

// scanOne runs one scan by itself through a pool's ScanMany.
func scanOne(ctx context.Context, many func(context.Context, string, []Scan) ([][]matcher.Entry, error), partition string, s Scan) ([]matcher.Entry, error) {
	if err := checkPartition(partition); err != nil {
		return nil, fmt.Errorf("scan %s of %s: %w", s.mode, partition, err)
	}
	if s.n <= 0 {
		return nil, nil
	}
	out, err := many(ctx, partition, []Scan{s})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// checkHeartbeat checks the pools and ticket of a HeartbeatAny.
func checkHeartbeat(partitions []string, ticketID string) error {
	if err := checkSiblings(partitions); err != nil {
		return err
	}
	if ticketID == "" {
		return errors.New("empty ticket id")
	}
	return nil
}

// checkOffer checks the pools and expiry of an Offer.
func checkOffer(to, home string, now, expiry time.Time) error {
	if err := checkPartition(to); err != nil {
		return err
	}
	if err := checkPartition(home); err != nil {
		return err
	}
	if !expiry.After(now) {
		return errors.New("expiry not after now")
	}
	return nil
}

// checkPromote checks the two pools of a Promote.
func checkPromote(from, to string) error {
	if err := checkSiblings([]string{from, to}); err != nil {
		return err
	}
	if from == to {
		return errors.New("same pool")
	}
	return nil
}
