package admission

import (
	"context"
	"fmt"
	"time"

	"github.com/matchgate/matchgate/internal/group"
)

// The line's share of an entry — the line's size for the prediction before
// the record takes the place, the place added and its rank read after — is
// batched over the entries in flight in this process, as the record's group
// commit batches their inserts: a surge pays a round trip or two per batch,
// not three an entry. An idle queue's entry is not delayed (package group).
const (
	maxLineBatches = 2
	maxLineBatch   = 512
	lineTimeout    = 5 * time.Second
)

type sizeReq struct{ queue string }

type sizeRes struct {
	n   int64
	err error
}

type addReq struct {
	queue string
	place Place
	now   time.Time
}

type addRes struct {
	rank Rank
	err  error
}

// lineBatches holds the two groups; built by NewService.
type lineBatches struct {
	sizes *group.Group[sizeReq, sizeRes]
	adds  *group.Group[addReq, addRes]
}

func newLineBatches(l Line) *lineBatches {
	return &lineBatches{
		sizes: group.New(maxLineBatches, maxLineBatch, lineTimeout, func(ctx context.Context, reqs []sizeReq) []sizeRes {
			return sizeBatch(ctx, l, reqs)
		}),
		adds: group.New(maxLineBatches, maxLineBatch, lineTimeout, func(ctx context.Context, reqs []addReq) []addRes {
			return addBatch(ctx, l, reqs)
		}),
	}
}

// sizeBatch reads each queue's size once for the batch.
func sizeBatch(ctx context.Context, l Line, reqs []sizeReq) []sizeRes {
	read := map[string]sizeRes{}
	out := make([]sizeRes, len(reqs))
	for i, r := range reqs {
		res, ok := read[r.queue]
		if !ok {
			res.n, res.err = l.Size(ctx, r.queue)
			read[r.queue] = res
		}
		out[i] = res
	}
	return out
}

// addBatch adds each queue's places in one call, then reads their ranks in
// one more, each seen at the latest instant of the batch (its entries'
// instants are within one batch of each other).
func addBatch(ctx context.Context, l Line, reqs []addReq) []addRes {
	out := make([]addRes, len(reqs))
	byQueue := map[string][]int{}
	var order []string
	for i, r := range reqs {
		if _, ok := byQueue[r.queue]; !ok {
			order = append(order, r.queue)
		}
		byQueue[r.queue] = append(byQueue[r.queue], i)
	}
	for _, q := range order {
		idx := byQueue[q]
		places, users := make([]Place, len(idx)), make([]string, len(idx))
		var now time.Time
		for j, i := range idx {
			places[j], users[j] = reqs[i].place, reqs[i].place.UserID
			if reqs[i].now.After(now) {
				now = reqs[i].now
			}
		}
		err := l.Add(ctx, q, places, now)
		var ranks []Rank
		if err == nil {
			ranks, _, err = l.Ranks(ctx, q, users)
		}
		if err == nil && len(ranks) != len(users) {
			err = fmt.Errorf("ranks in %s: %d ranks for %d users", q, len(ranks), len(users))
		}
		for j, i := range idx {
			if err != nil {
				out[i].err = err
				continue
			}
			out[i].rank = ranks[j]
		}
	}
	return out
}

// size is the line's length, read in a batch.
func (b *lineBatches) size(ctx context.Context, queue string) (int64, error) {
	r := b.sizes.Do(ctx, sizeReq{queue: queue})
	return r.n, r.err
}

// add puts p into the line, unless present, and returns its rank, in a
// batch.
func (b *lineBatches) add(ctx context.Context, queue string, p Place, now time.Time) (Rank, error) {
	r := b.adds.Do(ctx, addReq{queue: queue, place: p, now: now})
	return r.rank, r.err
}
