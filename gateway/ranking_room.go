package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/protocol"
	"github.com/matchgate/matchgate/ranking"
)

// The ranking pushes (ARCHITECTURE.md §8). A socket subscribes to a
// board's window; each gateway holds one hub subscription per (board,
// window) while at least one of its sockets is subscribed, and drops it
// after the last leaves. The rankings Service announces on that channel
// each change of the Top N; the gateway then reads the Top once (with the
// largest limit its subscribers asked for, of the current period), encodes
// it once per distinct limit and queues it on each subscribed socket
// without blocking. Announcements that arrive while a read runs cost one
// more read after it, not one each.

// rankingSubscriber is the Subscriber's side for the ranking channels
// (notify.Hub is one).
type rankingSubscriber interface {
	SubscribeRanking(ctx context.Context, board, window string, deliver func([]byte)) (func(), error)
}

// maxRankingSubscriptions bounds one socket's subscriptions: each costs
// the gateway a read per change of its board.
const maxRankingSubscriptions = 8

var (
	errNoRankingPushes = matcher.Errorf(matcher.CodeNotFound, "ranking pushes are not served by this gateway")
	errRankingPushDown = matcher.Errorf(matcher.CodeUnavailable, "ranking pushes are unavailable: retry shortly")
	errTooManyRankings = matcher.Errorf(matcher.CodeBadRequest,
		"at most %d ranking subscriptions on one socket: unsubscribe one first", maxRankingSubscriptions)
	errSocketClosing = errors.New("socket closing")
)

type rankingKey struct{ board, window string }

// rankingRoom holds the gateway's ranking subscriptions.
type rankingRoom struct {
	srv  *Server
	rk   Rankings
	subs rankingSubscriber
	// subscribed counts the sockets' subscriptions.
	subscribed prometheus.Gauge

	mu     sync.Mutex
	topics map[rankingKey]*rankingTopic
	bySock map[*session]map[rankingKey]struct{}
}

// rankingTopic is one (board, window) of the gateway: its subscribers,
// its hub subscription and its loop.
type rankingTopic struct {
	key rankingKey
	// ready is closed once the hub subscription is settled, err its
	// failure; unsubscribe ends it.
	ready       chan struct{}
	err         error
	unsubscribe func()
	// kick wakes the loop: an announcement, or a resend after the hub
	// reconnected. One pending kick stands for any number.
	kick chan struct{}
	stop chan struct{}

	// Under rankingRoom.mu.
	socks   map[*session]int // the limit each asked for; 0 the default
	running bool             // the loop runs and unsubscribe is set
	dead    bool             // dropped: its last subscriber left
	force   bool             // push even a view unchanged since the last push
	sent    map[int][]byte   // the last frame pushed, per limit
}

// newRankingRoom returns nil unless the Rankings and the Subscriber both
// serve the pushes: then subscribe answers NOT_FOUND.
func newRankingRoom(srv *Server, reg prometheus.Registerer) (*rankingRoom, error) {
	subs, ok := srv.cfg.Subscriber.(rankingSubscriber)
	if srv.cfg.Rankings == nil || !ok {
		return nil, nil
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "matchgate_ranking_subscriptions",
		Help: "Ranking subscriptions held by this gateway's sockets.",
	})
	if err := reg.Register(g); err != nil {
		return nil, err
	}
	return &rankingRoom{srv: srv, rk: srv.cfg.Rankings, subs: subs, subscribed: g,
		topics: map[rankingKey]*rankingTopic{}, bySock: map[*session]map[rankingKey]struct{}{}}, nil
}

func (t *rankingTopic) wake() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// decodeRankingFrame decodes subscribe and unsubscribe strictly, as
// decodeFrame does the other commands.
func decodeRankingFrame(data []byte) (protocol.RankingCommand, error) {
	var in protocol.RankingCommand
	if err := decodeStrict(data, &in, false); err != nil {
		var env struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(data, &env) == nil && len(env.ID) <= maxClientIDLen {
			return protocol.RankingCommand{ID: env.ID}, err
		}
		return protocol.RankingCommand{}, err
	}
	if len(in.ID) > maxClientIDLen {
		return protocol.RankingCommand{}, matcher.Errorf(matcher.CodeBadRequest, "id longer than %d bytes", maxClientIDLen)
	}
	if in.Type == protocol.FrameUnsubscribe && in.Limit != nil {
		return in, matcher.Errorf(matcher.CodeBadRequest, "field %q is not part of %s", "limit", quoteField(in.Type))
	}
	return in, nil
}

// rankingTarget checks a ranking command's board and window.
func rankingTarget(in protocol.RankingCommand) (rankingKey, error) {
	switch {
	case in.Ranking == "":
		return rankingKey{}, matcher.Errorf(matcher.CodeBadRequest, "ranking is required")
	case in.Window == "":
		return rankingKey{}, matcher.Errorf(matcher.CodeBadRequest, "window is required")
	}
	if err := rankingBoard(in.Ranking); err != nil {
		return rankingKey{}, err
	}
	if !ranking.Window(in.Window).Valid() {
		return rankingKey{}, matcher.Errorf(matcher.CodeBadRequest, "no such window %s", quoteField(in.Window))
	}
	return rankingKey{board: in.Ranking, window: in.Window}, nil
}

// dispatchRanking runs subscribe or unsubscribe.
func (s *session) dispatchRanking(ctx context.Context, in protocol.RankingCommand) (any, error) {
	r := s.srv.rankings
	if s.srv.cfg.Rankings == nil {
		return nil, errNoRankings
	}
	if r == nil {
		return nil, errNoRankingPushes
	}
	k, err := rankingTarget(in)
	if err != nil {
		return nil, err
	}
	if in.Type == protocol.FrameUnsubscribe {
		r.leave(s, k)
		return protocol.Reply{Type: protocol.FrameUnsubscribed, Re: in.ID}, nil
	}
	limit := 0
	if in.Limit != nil {
		if *in.Limit < 1 {
			return nil, matcher.Errorf(matcher.CodeBadRequest, "limit must be a whole number of at least 1")
		}
		limit = *in.Limit
	}
	if err := s.srv.limit(ctx, limitReadUser, s.p.UserID, s.srv.cfg.Limits.ReadsPerUser); err != nil {
		return nil, err
	}
	again, err := r.join(ctx, s, k, limit)
	if err != nil {
		return nil, err
	}
	// The hub subscription is confirmed: a change from now on is
	// announced to this socket too, so the view read now misses nothing.
	v, err := r.rk.Top(ctx, k.board, k.window, "", limit)
	if err != nil {
		if !again {
			r.leave(s, k)
		}
		return nil, refuseRanking(err, k.board)
	}
	return protocol.RankingFrameOf(protocol.FrameSubscribed, in.ID, v.Board, v.Window, v.Period, v.WeightsVersion,
		cutItems(v.Items, limit)), nil
}

// cutItems is the first limit items (the REST GET's default without one).
func cutItems(items []ranking.Ranked, limit int) []ranking.Ranked {
	if limit == 0 {
		limit = defaultRankingLimit
	}
	return items[:min(limit, len(items))]
}

// join subscribes s to k with limit, and returns once the hub
// subscription is confirmed; again: s was subscribed to k already (its
// limit is now limit).
func (r *rankingRoom) join(ctx context.Context, s *session, k rankingKey, limit int) (again bool, err error) {
	r.mu.Lock()
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if closing {
		// Its teardown ran or is about to: nothing may be left behind.
		r.mu.Unlock()
		return false, errSocketClosing
	}
	mine := r.bySock[s]
	_, again = mine[k]
	if !again && len(mine) >= maxRankingSubscriptions {
		r.mu.Unlock()
		return false, errTooManyRankings
	}
	t := r.topics[k]
	creator := t == nil
	if creator {
		t = &rankingTopic{key: k, ready: make(chan struct{}), kick: make(chan struct{}, 1), stop: make(chan struct{}),
			socks: map[*session]int{}}
		r.topics[k] = t
	}
	if mine == nil {
		mine = map[rankingKey]struct{}{}
		r.bySock[s] = mine
	}
	mine[k] = struct{}{}
	t.socks[s] = limit
	// A new subscriber's view is read by its own command: the next push
	// goes to every subscriber, unchanged or not, so none is left behind
	// what it was last told.
	t.sent = nil
	if !again {
		r.subscribed.Inc()
	}
	r.mu.Unlock()

	if creator {
		unsubscribe, err := r.subs.SubscribeRanking(ctx, k.board, k.window, func([]byte) { t.wake() })
		r.mu.Lock()
		t.unsubscribe, t.err = unsubscribe, err
		dead := t.dead
		switch {
		case err != nil:
			r.dropLocked(t)
		case !dead:
			t.running = true
			r.srv.tasks.Go(func() { r.run(t) })
		}
		r.mu.Unlock()
		close(t.ready)
		if err == nil && dead {
			unsubscribe() // every subscriber left while it was confirmed
		}
	} else {
		select {
		case <-t.ready:
		case <-ctx.Done():
			if !again {
				r.leave(s, k)
			}
			return again, ctx.Err()
		}
	}
	if t.err != nil {
		r.srv.log.Warn("subscribe to a ranking's channel", slog.String("board", k.board), slog.String("window", k.window),
			slog.Any("error", t.err))
		return again, errRankingPushDown
	}
	return again, nil
}

// dropLocked forgets t and every subscription to it. Under r.mu.
func (r *rankingRoom) dropLocked(t *rankingTopic) {
	if r.topics[t.key] == t {
		delete(r.topics, t.key)
	}
	for s := range t.socks {
		if mine := r.bySock[s]; mine != nil {
			if _, ok := mine[t.key]; !ok {
				continue
			}
			delete(mine, t.key)
			if len(mine) == 0 {
				delete(r.bySock, s)
			}
			r.subscribed.Dec()
		}
	}
	clear(t.socks)
	t.dead = true
}

// leave unsubscribes s from k; the last subscriber's leave drops the hub
// subscription.
func (r *rankingRoom) leave(s *session, k rankingKey) {
	r.mu.Lock()
	stop := r.leaveLocked(s, k)
	r.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// leaveLocked is leave under r.mu; it returns what ends the topic's hub
// subscription and loop when s was its last subscriber (nil otherwise, or
// while the subscription is still confirmed: join ends it then).
func (r *rankingRoom) leaveLocked(s *session, k rankingKey) func() {
	mine := r.bySock[s]
	if _, ok := mine[k]; !ok {
		return nil
	}
	delete(mine, k)
	if len(mine) == 0 {
		delete(r.bySock, s)
	}
	r.subscribed.Dec()
	t := r.topics[k]
	if t == nil {
		return nil
	}
	delete(t.socks, s)
	if len(t.socks) > 0 {
		return nil
	}
	delete(r.topics, k)
	t.dead = true
	if !t.running {
		return nil
	}
	t.running = false
	return func() {
		close(t.stop)
		t.unsubscribe()
	}
}

// closed drops every subscription of a socket that ended.
func (r *rankingRoom) closed(s *session) {
	if r == nil {
		return
	}
	var stops []func()
	r.mu.Lock()
	for k := range r.bySock[s] {
		if stop := r.leaveLocked(s, k); stop != nil {
			stops = append(stops, stop)
		}
	}
	r.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}

// run is a topic's loop: one read and push per wake, until its last
// subscriber leaves or the server stops.
func (r *rankingRoom) run(t *rankingTopic) {
	for {
		select {
		case <-t.stop:
			return
		case <-r.srv.roomCtx.Done():
			return
		case <-t.kick:
			r.refresh(t)
		}
	}
}

// refresh reads the topic's current view once and pushes it to each
// subscriber, encoded once per distinct limit; a frame equal to the last
// pushed for its limit is not pushed again (an announcement of the
// previous period's last events leaves the current one as it was),
// unless the hub reconnected.
func (r *rankingRoom) refresh(t *rankingTopic) {
	type target struct {
		s     *session
		limit int
	}
	r.mu.Lock()
	targets := make([]target, 0, len(t.socks))
	read := -1
	for s, l := range t.socks {
		targets = append(targets, target{s, l})
		switch {
		case l == 0:
			read = 0 // the board's N, cut to the default
		case read != 0:
			read = max(read, l)
		}
	}
	force := t.force
	t.force = false
	r.mu.Unlock()
	if len(targets) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(r.srv.roomCtx, r.srv.cfg.CommandTimeout)
	v, err := r.rk.Top(ctx, t.key.board, t.key.window, "", read)
	cancel()
	if err != nil {
		// The next announcement reads again.
		r.srv.log.Warn("read a ranking for its subscribers", slog.String("board", t.key.board),
			slog.String("window", t.key.window), slog.Any("error", err))
		if force {
			r.mu.Lock()
			t.force = true
			r.mu.Unlock()
		}
		return
	}
	frames := map[int][]byte{}
	for _, tg := range targets {
		if _, ok := frames[tg.limit]; ok {
			continue
		}
		b, err := json.Marshal(protocol.RankingFrameOf(protocol.FrameRankingUpdate, "", v.Board, v.Window, v.Period,
			v.WeightsVersion, cutItems(v.Items, tg.limit)))
		if err != nil {
			r.srv.log.Error("encode a ranking push", slog.Any("error", err))
			return
		}
		frames[tg.limit] = b
	}
	r.mu.Lock()
	if t.sent == nil {
		t.sent = map[int][]byte{}
	}
	for l, b := range frames {
		if !force && bytes.Equal(t.sent[l], b) {
			frames[l] = nil
			continue
		}
		t.sent[l] = b
	}
	r.mu.Unlock()
	for _, tg := range targets {
		if b := frames[tg.limit]; b != nil {
			tg.s.enqueue(outFrame{kind: protocol.FrameRankingUpdate, data: b})
		}
	}
}

// ResyncRankings pushes every subscribed ranking's current view again.
// Call it when the pub/sub connection came back after a failure: the
// announcements published meanwhile were lost to it.
func (s *Server) ResyncRankings() {
	r := s.rankings
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.topics {
		if t.running {
			t.force = true
			t.wake()
		}
	}
}
