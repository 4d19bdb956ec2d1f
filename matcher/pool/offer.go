package pool

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// offerFields is the number of strings offers.lua returns per offer.
const offerFields = 9

// Offer writes offers of entries, which wait in the partition home, into the
// partition to (another region of the same queue): each lives until expiry,
// and its hash a little longer (ttl). The entries stay where they are; see
// offer.lua. It returns the number written.
func (p *Pool) Offer(ctx context.Context, to, home string, entries []Entry, now, expiry time.Time) (n int, err error) {
	defer wrap(&err, "offer %d tickets of %s to %s", len(entries), home, to)
	if err := checkPartition(to); err != nil {
		return 0, err
	}
	if err := checkPartition(home); err != nil {
		return 0, err
	}
	if len(entries) == 0 {
		return 0, nil
	}
	if !expiry.After(now) {
		return 0, errors.New("expiry not after now")
	}
	ttl := expiry.Sub(now) + time.Second
	keys := make([]string, 0, 1+len(entries))
	keys = append(keys, p.Key(to, "offers"))
	args := make([]any, 0, 3+9*len(entries))
	args = append(args, msTime(now), msTime(expiry), ms(ttl))
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		if err := checkEntry(e); err != nil {
			return 0, err
		}
		if seen[e.TicketID] {
			return 0, fmt.Errorf("ticket %s listed twice", e.TicketID)
		}
		seen[e.TicketID] = true
		keys = append(keys, p.Key(to, "o:"+e.TicketID))
		args = append(args, entryArgs(e)...)
		args = append(args, home)
	}
	return offerScript.Run(ctx, p.rdb, keys, args...).Int()
}

// Offers returns up to n live offers the partition has received (expiring
// at or after now), soonest expiry first; each entry's Home names the
// partition it waits in.
func (p *Pool) Offers(ctx context.Context, partition string, now time.Time, n int) (es []Entry, err error) {
	defer wrap(&err, "offers of %s", partition)
	if err := checkPartition(partition); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	keys := []string{p.Key(partition, "offers"), p.Key(partition, "o:")}
	vals, err := offersScript.Run(ctx, p.rdb, keys, msTime(now), strconv.Itoa(n)).Slice()
	if err != nil {
		return nil, err
	}
	if len(vals)%offerFields != 0 {
		return nil, fmt.Errorf("reply of %d values is not a multiple of %d", len(vals), offerFields)
	}
	for i := 0; i < len(vals); i += offerFields {
		got, err := parseEntries(vals[i : i+entryFields])
		if err != nil {
			return nil, err
		}
		got[0].Home = str(vals[i+entryFields])
		es = append(es, got[0])
	}
	return es, nil
}

// WithdrawOffers removes offers from the partition: the players were found
// gone from home, or were matched.
func (p *Pool) WithdrawOffers(ctx context.Context, partition string, ticketIDs ...string) error {
	if err := checkPartition(partition); err != nil {
		return fmt.Errorf("withdraw offers from %s: %w", partition, err)
	}
	if len(ticketIDs) == 0 {
		return nil
	}
	pipe := p.rdb.TxPipeline()
	members := make([]any, len(ticketIDs))
	for i, id := range ticketIDs {
		members[i] = id
		pipe.Del(ctx, p.Key(partition, "o:"+id))
	}
	pipe.ZRem(ctx, p.Key(partition, "offers"), members...)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("withdraw offers from %s: %w", partition, err)
	}
	return nil
}

// parseEntries reads entries of 8 fields each: id, user, skill, enq ms,
// deadline ms, estimated, activity, heartbeat ms ("" for absent).
func parseEntries(vals []any) ([]Entry, error) {
	if len(vals)%entryFields != 0 {
		return nil, fmt.Errorf("reply of %d values is not a multiple of %d", len(vals), entryFields)
	}
	out := make([]Entry, 0, len(vals)/entryFields)
	for i := 0; i < len(vals); i += entryFields {
		f := vals[i : i+entryFields]
		e := Entry{TicketID: str(f[0]), UserID: str(f[1]), Estimated: str(f[5]) == "1"}
		var errs []error
		var err error
		e.Skill, err = parseFloat(str(f[2]))
		errs = append(errs, err)
		e.Enqueue, err = parseMs(str(f[3]))
		errs = append(errs, err)
		e.Deadline, err = parseMs(str(f[4]))
		errs = append(errs, err)
		e.Activity, err = parseFloat(str(f[6]))
		errs = append(errs, err)
		e.Heartbeat, err = parseMs(str(f[7]))
		errs = append(errs, err)
		if err := errors.Join(errs...); err != nil {
			return nil, fmt.Errorf("ticket %s: %w", e.TicketID, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// entryFields is the number of strings per entry of parseEntries.
const entryFields = 8
