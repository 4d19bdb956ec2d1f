package gateway

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/protocol"
)

// The waiting room's pushes (ARCHITECTURE.md §10). Each gateway keeps the
// waiters that hold a socket on it, per admission queue, with the rank
// each had when last read exactly and the queue's passed counter at that
// read. After every admission batch the admitter publishes the counter on
// the queue's channel; the room moves every waiter's rank on by what passed
// since (rank0 - (passed - passed0): everyone taken was ahead) and pushes
// admission.position to those whose rank moved by a meaningful step, with
// no Redis call per waiter. Leaves ahead are not counted, so an estimate
// is never better than the truth; every roomRefreshEvery the room reads the
// exact ranks of all its waiters in batches, pushes them (the "at least
// every few seconds") and drops those no longer waiting, pushing what
// they now hold (READY with the token, when its admission.ready was lost).
// Every roomTouchEvery it tells the line its waiters are present, so that a
// waiter with a socket is never abandoned.

// admissionRoom is what the room asks of the admission Service beyond
// Admissions.
type admissionRoom interface {
	// Touch records the users as present in queue.
	Touch(ctx context.Context, queue string, userIDs []string) error
	// Ranks returns the users' exact positions (index-aligned; Status ""
	// when not waiting) and the queue's passed counter read with them.
	Ranks(ctx context.Context, queue string, userIDs []string) ([]admission.Position, int64, error)
	// Estimate is the position of a waiter at rank of total, with the ETA
	// of the queue's measured rate.
	Estimate(ctx context.Context, queue string, rank, total int64) admission.Position
	// Places returns the user's live places, for hello.
	Places(ctx context.Context, userID string) ([]admission.QueuePlace, error)
}

// queueSubscriber is the Subscriber's side for admission queues' channels
// (notify.Hub is one).
type queueSubscriber interface {
	SubscribeQueue(ctx context.Context, queue string, deliver func([]byte)) (func(), error)
}

// Variables for tests only. roomTouchEvery is well within
// admission.MinAbandonAfter.
var (
	roomRefreshEvery = 5 * time.Second
	roomTouchEvery   = 3 * time.Second
)

// roomBatch bounds one Ranks or Touch call.
const roomBatch = 1000

type room struct {
	srv  *Server
	adm  admissionRoom
	subs queueSubscriber

	mu     sync.Mutex
	queues map[string]*roomQueue
}

// newRoom returns nil unless the Admissions and the Subscriber both serve
// the room: then enter, position and leave work, and clients poll.
func newRoom(srv *Server) *room {
	adm, ok := srv.cfg.Admissions.(admissionRoom)
	if !ok {
		return nil
	}
	subs, ok := srv.cfg.Subscriber.(queueSubscriber)
	if !ok {
		return nil
	}
	return &room{srv: srv, adm: adm, subs: subs, queues: map[string]*roomQueue{}}
}

type roomQueue struct {
	name string
	// kick wakes the loop: a new counter heard, or waiters to read.
	kick chan struct{}

	mu    sync.Mutex
	heard int64 // the newest counter heard on the channel
	// paced is the counter and instant of the last advance, perSec the
	// smoothed waiters passed a second between them.
	paced   int64
	pacedAt time.Time
	perSec  float64
	waiters map[string]*roomWaiter
	// unsynced are the waiters watched since the loop last read them: a
	// wake reads only these, not the whole queue.
	unsynced map[string]struct{}
	// settles takes the waiters a read found no longer waiting to the
	// loop's settler, which reads each one's place from the record: a read
	// a user, done in the loop, held every push behind it (admitted users
	// come to each refresh by the rate's hundreds). Set by run.
	settles chan []string
}

type roomWaiter struct {
	sessions []*session
	// synced once rank0, total0 and passed0 were read together.
	synced                 bool
	rank0, total0, passed0 int64
	// sent is the rank last pushed, -1 none; sentAt when.
	sent   int64
	sentAt time.Time
}

// queue returns the room's queue, starting its loop on first use.
func (r *room) queue(name string) *roomQueue {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.queues[name]
	if q == nil {
		q = &roomQueue{name: name, kick: make(chan struct{}, 1), waiters: map[string]*roomWaiter{}, unsynced: map[string]struct{}{}}
		r.queues[name] = q
		r.srv.tasks.Go(func() { r.run(r.srv.roomCtx, q) })
	}
	return q
}

func (q *roomQueue) wake() {
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// watch keeps s's user as a waiter of queue; the loop reads the exact rank
// at its next wake.
func (r *room) watch(s *session, queue string) {
	if r == nil {
		return
	}
	q := r.queue(queue)
	q.mu.Lock()
	w := q.waiters[s.p.UserID]
	if w == nil {
		w = &roomWaiter{sent: -1}
		q.waiters[s.p.UserID] = w
	}
	if !slices.Contains(w.sessions, s) {
		w.sessions = append(w.sessions, s)
	}
	w.synced = false
	q.unsynced[s.p.UserID] = struct{}{}
	q.mu.Unlock()
	q.wake()
}

// forget drops the user's place in queue (left, or no longer waiting).
func (r *room) forget(userID, queue string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	q := r.queues[queue]
	r.mu.Unlock()
	if q == nil {
		return
	}
	q.mu.Lock()
	delete(q.waiters, userID)
	q.mu.Unlock()
}

// closed drops a socket that ended from every queue it waited in.
func (r *room) closed(s *session) {
	if r == nil {
		return
	}
	r.mu.Lock()
	qs := make([]*roomQueue, 0, len(r.queues))
	for _, q := range r.queues {
		qs = append(qs, q)
	}
	r.mu.Unlock()
	for _, q := range qs {
		q.mu.Lock()
		if w := q.waiters[s.p.UserID]; w != nil {
			w.sessions = slices.DeleteFunc(w.sessions, func(x *session) bool { return x == s })
			if len(w.sessions) == 0 {
				delete(q.waiters, s.p.UserID)
			}
		}
		q.mu.Unlock()
	}
}

// run is a queue's loop, until ctx ends: the channel's counter, the
// refresh and the touch.
func (r *room) run(ctx context.Context, q *roomQueue) {
	log := r.srv.log.With(slog.String("admission_queue", q.name))
	var unsubscribe func()
	defer func() {
		if unsubscribe != nil {
			unsubscribe()
		}
	}()
	subscribe := func() {
		sctx, cancel := context.WithTimeout(ctx, r.srv.cfg.CommandTimeout)
		defer cancel()
		u, err := r.subs.SubscribeQueue(sctx, q.name, func(b []byte) {
			n, err := strconv.ParseInt(string(b), 10, 64)
			if err != nil {
				return
			}
			q.mu.Lock()
			q.heard = max(q.heard, n)
			q.mu.Unlock()
			q.wake()
		})
		if err != nil {
			log.Warn("subscribe to the admission queue's channel; pushes wait for the refresh", "err", err)
			return
		}
		unsubscribe = u
	}
	subscribe()
	q.settles = make(chan []string, 4)
	var settler sync.WaitGroup
	settler.Go(func() {
		for users := range q.settles {
			r.settle(ctx, q, users)
		}
	})
	defer func() {
		close(q.settles)
		settler.Wait()
	}()
	refresh := time.NewTicker(roomRefreshEvery)
	defer refresh.Stop()
	touch := time.NewTicker(roomTouchEvery)
	defer touch.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.kick:
			r.sync(ctx, q, false)
			r.advance(ctx, q)
		case <-refresh.C:
			if unsubscribe == nil {
				subscribe()
			}
			r.sync(ctx, q, true)
		case <-touch.C:
			r.touch(ctx, q)
		}
	}
}

// users lists the queue's waiters: all of them, or those watched since
// the last call (a failed read of them is made good by the refresh).
func (q *roomQueue) users(all bool) []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	if all {
		return slices.Collect(maps.Keys(q.waiters))
	}
	out := slices.Collect(maps.Keys(q.unsynced))
	clear(q.unsynced)
	return out
}

func (r *room) touch(ctx context.Context, q *roomQueue) {
	users := q.users(true)
	for lo := 0; lo < len(users); lo += roomBatch {
		cctx, cancel := context.WithTimeout(ctx, r.srv.cfg.CommandTimeout)
		err := r.adm.Touch(cctx, q.name, users[lo:min(lo+roomBatch, len(users))])
		cancel()
		if err != nil {
			r.srv.log.Warn("record the waiters' presence", slog.String("admission_queue", q.name), slog.Any("error", err))
			return
		}
	}
}

// sync reads exact ranks (of every waiter, or of those not synced yet),
// pushes them, and drops the waiters no longer waiting after pushing what
// they hold now.
func (r *room) sync(ctx context.Context, q *roomQueue, all bool) {
	users := q.users(all)
	now := r.srv.cfg.Now()
	var gone []string
	defer func() {
		if len(gone) == 0 {
			return
		}
		select {
		case q.settles <- gone:
		default:
			// The settler is behind: they stay watched, and a later read
			// hands them over again.
		}
	}()
	for lo := 0; lo < len(users); lo += roomBatch {
		batch := users[lo:min(lo+roomBatch, len(users))]
		cctx, cancel := context.WithTimeout(ctx, r.srv.cfg.CommandTimeout)
		ps, passed, err := r.adm.Ranks(cctx, q.name, batch)
		cancel()
		if err != nil {
			r.srv.log.Warn("read the waiters' ranks", slog.String("admission_queue", q.name), slog.Any("error", err))
			return
		}
		for i, u := range batch {
			p := ps[i]
			if p.Status != admission.StatusWaiting {
				// No estimate is pushed to them meanwhile: advance skips
				// the unsynced.
				q.mu.Lock()
				if w := q.waiters[u]; w != nil {
					w.synced = false
				}
				q.mu.Unlock()
				gone = append(gone, u)
				continue
			}
			q.mu.Lock()
			w := q.waiters[u]
			var to []*session
			// Pushed when it says something: a first read, a rank worse
			// than told or a step better, or nothing told since about the
			// last refresh.
			if w != nil && (!w.synced || told(w.sent, p.Rank) || now.Sub(w.sentAt) >= roomRefreshEvery/2) {
				w.sent, w.sentAt = p.Rank, now
				to = append(to, w.sessions...)
			}
			if w != nil {
				w.synced, w.rank0, w.total0, w.passed0 = true, p.Rank, p.Total, passed
			}
			q.mu.Unlock()
			r.push(to, q.name, p)
		}
	}
}

// settle pushes to each user no longer waiting what they hold now (READY
// with the token, or NOT_ENTERED) and drops them.
func (r *room) settle(ctx context.Context, q *roomQueue, users []string) {
	for _, u := range users {
		cctx, cancel := context.WithTimeout(ctx, r.srv.cfg.CommandTimeout)
		p, err := r.srv.cfg.Admissions.Position(cctx, q.name, u)
		cancel()
		if err != nil {
			r.srv.log.Warn("read a former waiter's place", slog.String("admission_queue", q.name), slog.Any("error", err))
			continue
		}
		if p.Status == admission.StatusWaiting {
			// Waiting in the record, not yet in the line: read again next time.
			continue
		}
		q.mu.Lock()
		var to []*session
		if w := q.waiters[u]; w != nil {
			to = w.sessions
			delete(q.waiters, u)
		}
		q.mu.Unlock()
		r.push(to, q.name, p)
	}
}

// advance moves every synced waiter's rank on by the passed counter heard
// and pushes the moves worth telling: a rank never grows between reads, so
// the step is at least one place, one hundredth of the rank, and a second
// of the queue's pace (up to a tenth of the rank). The last spreads a busy
// queue's pushes: each waiter far enough back is told about once a second,
// and a batch pushes to the fraction of the sockets whose step it
// completes rather than to nearly every socket. A
// rank estimated at zero is not pushed: the waiter may be taken already,
// and the admission.ready push or the next read tells.
func (r *room) advance(ctx context.Context, q *roomQueue) {
	type move struct {
		to          []*session
		rank, total int64
	}
	var moves []move
	q.mu.Lock()
	heard := q.heard
	now := r.srv.cfg.Now()
	q.pace(heard, now)
	pace := int64(q.perSec)
	for _, w := range q.waiters {
		if !w.synced || heard <= w.passed0 {
			continue
		}
		d := heard - w.passed0
		rank := w.rank0 - d
		if rank < 1 || w.sent-rank < max(1, w.sent/100, min(pace, w.sent/10)) {
			continue
		}
		w.sent, w.sentAt = rank, now
		moves = append(moves, move{to: append([]*session(nil), w.sessions...), rank: rank, total: max(rank+1, w.total0-d)})
	}
	q.mu.Unlock()
	for _, m := range moves {
		r.push(m.to, q.name, r.adm.Estimate(ctx, q.name, m.rank, m.total))
	}
}

func (r *room) push(to []*session, queue string, p admission.Position) {
	if len(to) == 0 {
		return
	}
	frame := protocol.AppendAdmissionPosition(nil, queue, protocol.PositionOf(p))
	for _, s := range to {
		s.enqueue(outFrame{kind: protocol.FrameAdmissionPosition, data: frame})
	}
}

// helloPlaces are the user's live admission places for hello; the
// socket watches the waiting ones.
func (r *room) helloPlaces(ctx context.Context, s *session) []protocol.WireQueuePosition {
	if r == nil {
		return nil
	}
	places, err := r.adm.Places(ctx, s.p.UserID)
	if err != nil {
		// The client asks position when it needs to; hello is not held up.
		r.srv.log.Warn("read admission places for hello", slog.String("user", s.p.UserID), slog.Any("error", err))
		return nil
	}
	var out []protocol.WireQueuePosition
	for _, pl := range places {
		out = append(out, protocol.WireQueuePosition{Queue: pl.Queue, Position: protocol.PositionOf(pl.Position)})
		if pl.Position.Status == admission.StatusWaiting {
			r.watch(s, pl.Queue)
		}
	}
	return out
}

// watchPlace keeps the socket's user as a waiter of queue while pos is
// WAITING, and forgets it otherwise.
func (s *session) watchPlace(queue string, pos protocol.WirePosition) {
	if pos.Status == protocol.PositionWaiting {
		s.srv.room.watch(s, queue)
	} else {
		s.srv.room.forget(s.p.UserID, queue)
	}
}

// The admission Service serves the room.
var _ admissionRoom = (*admission.Service)(nil)

// pace folds the counter's move since the last advance into perSec.
func (q *roomQueue) pace(heard int64, now time.Time) {
	if !q.pacedAt.IsZero() && heard > q.paced {
		if dt := now.Sub(q.pacedAt).Seconds(); dt > 0 {
			q.perSec = 0.7*q.perSec + 0.3*float64(heard-q.paced)/dt
		}
	}
	if q.pacedAt.IsZero() || heard > q.paced {
		q.paced, q.pacedAt = heard, now
	}
}

// told reports whether an exact rank is worth pushing over sent, the rank
// last told: worse than it, or better by a step.
func told(sent, rank int64) bool {
	return rank > sent || sent-rank >= max(1, sent/100)
}
