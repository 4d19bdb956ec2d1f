package pool

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

// offerFields is the number of strings offers.lua returns per offer.
const offerFields = 3

// Offer writes offers of entries, which wait in the partition home, into the
// partition to (another region of the same queue): each lives until expiry
// by the caller's clock (Offers reads those expiring at or after its now),
// and its hash a few seconds longer, which only frees the memory. The
// entries stay where they are; see offer.lua. It returns the number
// written.
func (p *Pool) Offer(ctx context.Context, to, home string, entries []matcher.Entry, now, expiry time.Time) (n int, err error) {
	defer wrap(&err, "offer %d tickets of %s to %s", len(entries), home, to)
	if err := checkOffer(to, home, now, expiry); err != nil || len(entries) == 0 {
		return 0, err
	}
	ttl := expiry.Sub(now) + expirySlack
	keys := make([]string, 0, 1+len(entries))
	keys = append(keys, p.Key(to, "offers"))
	args := make([]any, 0, 3+4*len(entries))
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
		args = append(args, e.TicketID, member(e), heartbeatArg(e), home)
	}
	return offerScript.Run(ctx, p.rdb, keys, args...).Int()
}

// Offers returns up to n live offers the partition has received (expiring
// at or after now), soonest expiry first; each entry's Home names the
// partition it waits in.
func (p *Pool) Offers(ctx context.Context, partition string, now time.Time, n int) (es []matcher.Entry, err error) {
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
		e, err := parseMember(str(vals[i]))
		if err != nil {
			return nil, err
		}
		if e.Heartbeat, err = parseMs(str(vals[i+1])); err != nil {
			return nil, fmt.Errorf("offer of %s: heartbeat: %w", e.TicketID, err)
		}
		e.Home = str(vals[i+2])
		es = append(es, e)
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
