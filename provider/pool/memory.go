package pool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/matchgate/matchgate/provider"
)

// Memory is the live pool in process memory: what Redis does, decided alike
// by the callers' nows, for tests and virtual-clock runs. It is safe for
// concurrent use; every call is atomic.
type Memory struct {
	mu     sync.Mutex
	cfg    config
	queues map[string]map[string]*memProvider
}

var _ provider.Live = (*Memory)(nil)

// memProvider is one provider's hash and held set.
type memProvider struct {
	capacity int
	attrs    []byte // JSON, as Redis holds it, so both decode alike
	session  string
	until    int64 // unix ms
	seen     int64 // unix ms, 0: never
	on       bool
	held     map[string]struct{}
}

// NewMemory returns an empty pool.
func NewMemory(opts ...Option) *Memory {
	return &Memory{cfg: configOf(opts), queues: map[string]map[string]*memProvider{}}
}

// queue returns q's providers, creating the map: only Online and Sync
// create providers, the other calls read m.queues[q] (nil when unknown).
func (m *Memory) queue(q string) map[string]*memProvider {
	mq := m.queues[q]
	if mq == nil {
		mq = map[string]*memProvider{}
		m.queues[q] = mq
	}
	return mq
}

func (mp *memProvider) view(queue, user string, now time.Time) (provider.Provider, error) {
	held := make([]string, 0, len(mp.held))
	for id := range mp.held {
		held = append(held, id)
	}
	return build(queue, user, mp.capacity, mp.attrs, mp.until, mp.seen, mp.on, held, now)
}

func (mp *memProvider) onlineAt(now int64) bool { return mp.on && mp.until > now }

// Online puts p.UserID online; see provider.Live.
func (m *Memory) Online(_ context.Context, queue string, p provider.Provider, session string, until time.Time) (_ provider.Provider, err error) {
	defer wrap(&err, "online %s/%s", queue, p.UserID)
	if err := checkUser(queue, p.UserID); err != nil {
		return provider.Provider{}, err
	}
	if p.Capacity < 0 {
		return provider.Provider{}, fmt.Errorf("negative capacity %d", p.Capacity)
	}
	attrs, err := json.Marshal(p.Attributes)
	if err != nil {
		return provider.Provider{}, fmt.Errorf("attributes: %w", err)
	}
	now := m.cfg.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	mq := m.queue(queue)
	mp := mq[p.UserID]
	if mp == nil {
		mp = &memProvider{held: map[string]struct{}{}}
		mq[p.UserID] = mp
	}
	mp.capacity, mp.attrs, mp.session = p.Capacity, attrs, session
	mp.until, mp.seen, mp.on = until.UnixMilli(), now.UnixMilli(), true
	return mp.view(queue, p.UserID, now)
}

// Update changes an online provider's capacity (when ≥ 0) and attributes
// (when not nil); provider.ErrOffline otherwise.
func (m *Memory) Update(_ context.Context, queue, userID string, capacity int, attrs *provider.Attributes, now time.Time) (_ provider.Provider, err error) {
	defer wrap(&err, "update %s/%s", queue, userID)
	if err := checkUser(queue, userID); err != nil {
		return provider.Provider{}, err
	}
	var b []byte
	if attrs != nil {
		if b, err = json.Marshal(attrs); err != nil {
			return provider.Provider{}, fmt.Errorf("attributes: %w", err)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	mp := m.queues[queue][userID]
	if mp == nil || !mp.onlineAt(now.UnixMilli()) {
		return provider.Provider{}, provider.ErrOffline
	}
	if capacity >= 0 {
		mp.capacity = capacity
	}
	if b != nil {
		mp.attrs = b
	}
	return mp.view(queue, userID, now)
}

// Offline takes userID offline if session ("" for any) holds it.
func (m *Memory) Offline(_ context.Context, queue, userID, session string, now time.Time) (_ bool, err error) {
	defer wrap(&err, "offline %s/%s", queue, userID)
	if err := checkUser(queue, userID); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	mp := m.queues[queue][userID]
	if mp == nil || !mp.on || (session != "" && session != mp.session) {
		return false, nil
	}
	mp.on = false
	if at := now.UnixMilli(); mp.until > at {
		mp.seen = at
	}
	return true, nil
}

// Refresh extends "seen until" of the userIDs session holds.
func (m *Memory) Refresh(_ context.Context, queue string, userIDs []string, session string, until time.Time) (err error) {
	defer wrap(&err, "refresh %d in %s", len(userIDs), queue)
	if err := checkQueue(queue); err != nil {
		return err
	}
	if slices.Contains(userIDs, "") {
		return errors.New("empty user id")
	}
	u, seen := until.UnixMilli(), m.cfg.now().UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	mq := m.queues[queue]
	for _, id := range userIDs {
		mp := mq[id]
		if mp == nil || !mp.on || mp.session != session {
			continue
		}
		mp.until = max(mp.until, u)
		mp.seen = max(mp.seen, seen)
	}
	return nil
}

// Hold takes one of userID's slots for assignmentID; see provider.Live.
func (m *Memory) Hold(_ context.Context, queue, userID, assignmentID string, now time.Time) (_ bool, err error) {
	defer wrap(&err, "hold %s/%s", queue, userID)
	if err := checkUser(queue, userID); err != nil {
		return false, err
	}
	if err := checkAssignment(assignmentID); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	mp := m.queues[queue][userID]
	if mp == nil {
		return false, nil
	}
	if _, ok := mp.held[assignmentID]; ok {
		return true, nil
	}
	if !mp.onlineAt(now.UnixMilli()) || len(mp.held) >= mp.capacity {
		return false, nil
	}
	mp.held[assignmentID] = struct{}{}
	return true, nil
}

// Release frees the slot assignmentID holds.
func (m *Memory) Release(_ context.Context, queue, userID, assignmentID string) (err error) {
	defer wrap(&err, "release %s/%s", queue, userID)
	if err := checkUser(queue, userID); err != nil {
		return err
	}
	if err := checkAssignment(assignmentID); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if mp := m.queues[queue][userID]; mp != nil {
		delete(mp.held, assignmentID)
	}
	return nil
}

// Snapshot lists the providers of queue by user id, online judged at now.
func (m *Memory) Snapshot(_ context.Context, queue string, now time.Time) (_ []provider.Provider, err error) {
	defer wrap(&err, "snapshot of %s", queue)
	if err := checkQueue(queue); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	mq := m.queues[queue]
	out := make([]provider.Provider, 0, len(mq))
	for user, mp := range mq {
		p, err := mp.view(queue, user, now)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b provider.Provider) int { return strings.Compare(a.UserID, b.UserID) })
	return out, nil
}

// Get returns one provider, online judged at now.
func (m *Memory) Get(_ context.Context, queue, userID string, now time.Time) (_ provider.Provider, _ bool, err error) {
	defer wrap(&err, "get %s/%s", queue, userID)
	if err := checkUser(queue, userID); err != nil {
		return provider.Provider{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	mp := m.queues[queue][userID]
	if mp == nil {
		return provider.Provider{}, false, nil
	}
	p, err := mp.view(queue, userID, now)
	return p, err == nil, err
}

// Sync sets userID's held slots to exactly ids, creating an offline
// provider of capacity 0 when the pool does not know it.
func (m *Memory) Sync(_ context.Context, queue, userID string, ids []string) (err error) {
	defer wrap(&err, "sync %s/%s", queue, userID)
	if err := checkUser(queue, userID); err != nil {
		return err
	}
	held := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		if err := checkAssignment(id); err != nil {
			return err
		}
		held[id] = struct{}{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	mq := m.queue(queue)
	mp := mq[userID]
	if mp == nil {
		mp = &memProvider{attrs: []byte(emptyAttrs)}
		mq[userID] = mp
	}
	mp.held = held
	return nil
}
