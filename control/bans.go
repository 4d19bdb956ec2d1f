package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// Ban keeps a user out: refused at connect (403) and at join (FORBIDDEN),
// and every open socket closed.
type Ban struct {
	UserID string `json:"userId"`
	// Reason is for operators; it is never shown to the banned user.
	Reason string `json:"reason"`
	// Until is when the ban lapses; nil means until it is lifted.
	Until     *time.Time `json:"until"`
	CreatedAt time.Time  `json:"createdAt"`
}

// Active reports whether the ban holds at now.
func (b Ban) Active(now time.Time) bool { return b.Until == nil || now.Before(*b.Until) }

// Limits of a ban's fields.
const (
	MaxUserIDLen    = 128
	MaxReasonLength = 256
)

// ValidUserID reports whether s may be a user id: 1..128 bytes of valid
// UTF-8 without control characters (the gateway refuses tokens whose
// subject is anything else).
func ValidUserID(s string) bool {
	if s == "" || len(s) > MaxUserIDLen || !utf8.ValidString(s) {
		return false
	}
	return strings.IndexFunc(s, unicode.IsControl) < 0
}

// Validate checks a ban before it is stored.
func (b Ban) Validate() error {
	if !ValidUserID(b.UserID) {
		return fmt.Errorf("user id must be 1..%d bytes of printable UTF-8", MaxUserIDLen)
	}
	if utf8.RuneCountInString(b.Reason) > MaxReasonLength || !utf8.ValidString(b.Reason) ||
		strings.ContainsFunc(b.Reason, func(r rune) bool { return unicode.IsControl(r) && r != '\n' }) {
		return fmt.Errorf("reason must be at most %d characters of printable UTF-8", MaxReasonLength)
	}
	return nil
}

// BanStore keeps bans durably.
type BanStore interface {
	// PutBan creates or replaces the ban of b.UserID.
	PutBan(ctx context.Context, b Ban) error
	// DeleteBan lifts a ban; it reports whether there was one.
	DeleteBan(ctx context.Context, userID string) (bool, error)
	// Bans lists every stored ban, lapsed ones included, by user id.
	Bans(ctx context.Context) ([]Ban, error)
}

// BanListConfig configures a BanList.
type BanListConfig struct {
	// Store is reloaded from. Required.
	Store BanStore
	// Interval between reloads (a safety net: changes arrive through the
	// control channel). Default 30s.
	Interval time.Duration
	// Now is the clock that decides whether a ban has lapsed. Default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// BanList is one process's copy of the bans, checked without I/O.
//
// A join racing a ban on another gateway could pass the gateway's check
// before the ban reached it, and record its ticket after the ban's own
// sweep of the user's tickets. Two steps close that window, both without
// I/O on the join's path: the Service checks the list again once the
// ticket is recorded (and cancels it if the user is banned by then), and
// every process runs OnBan (a sweep of the user's waiting tickets) once a
// ban is in its list. Either the join's second check comes after the ban
// entered the list, and sees it, or the ticket was recorded before, and
// the sweep that follows finds it.
type BanList struct {
	cfg BanListConfig

	mu   sync.RWMutex
	bans map[string]Ban

	onBan atomic.Pointer[func(Ban)]
}

// OnBan sets fn to be called, in the caller's goroutine, each time a ban
// enters the list (Apply, or a Reload that finds a new one), after it is
// in force there. fn should not block for long.
func (l *BanList) OnBan(fn func(Ban)) { l.onBan.Store(&fn) }

func (l *BanList) banned(bans []Ban) {
	fn := l.onBan.Load()
	if fn == nil {
		return
	}
	for _, b := range bans {
		(*fn)(b)
	}
}

// NewBanList builds an empty list; Reload (or Run) fills it.
func NewBanList(cfg BanListConfig) (*BanList, error) {
	if cfg.Store == nil {
		return nil, errors.New("control: BanListConfig.Store is required")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &BanList{cfg: cfg, bans: map[string]Ban{}}, nil
}

// Banned reports whether userID is banned now.
func (l *BanList) Banned(userID string) bool {
	l.mu.RLock()
	b, ok := l.bans[userID]
	l.mu.RUnlock()
	return ok && b.Active(l.cfg.Now())
}

// Reload replaces the list with the store's bans.
func (l *BanList) Reload(ctx context.Context) error {
	bans, err := l.cfg.Store.Bans(ctx)
	if err != nil {
		return fmt.Errorf("reload bans: %w", err)
	}
	m := make(map[string]Ban, len(bans))
	now := l.cfg.Now()
	for _, b := range bans {
		if b.Active(now) {
			m[b.UserID] = b
		}
	}
	l.mu.Lock()
	old := l.bans
	l.bans = m
	l.mu.Unlock()
	var added []Ban
	for u, b := range m {
		if _, ok := old[u]; !ok {
			added = append(added, b)
		}
	}
	sortBans(added)
	l.banned(added)
	return nil
}

// Apply records a ban heard of on the control channel.
func (l *BanList) Apply(b Ban) {
	l.mu.Lock()
	l.bans[b.UserID] = b
	l.mu.Unlock()
	if b.Active(l.cfg.Now()) {
		l.banned([]Ban{b})
	}
}

// Lift removes a ban heard of on the control channel.
func (l *BanList) Lift(userID string) {
	l.mu.Lock()
	delete(l.bans, userID)
	l.mu.Unlock()
}

// Len is the number of bans in the list, lapsed ones included until the
// next reload.
func (l *BanList) Len() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.bans)
}

// Run reloads the list every Interval until ctx ends. A failed reload keeps
// the previous list.
func (l *BanList) Run(ctx context.Context) error {
	t := time.NewTicker(l.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := l.Reload(ctx); err != nil && ctx.Err() == nil {
			l.cfg.Logger.Warn("ban list reload failed; keeping the previous list", "err", err)
		}
	}
}

// sortBans orders bans by user id.
func sortBans(bans []Ban) {
	sort.Slice(bans, func(i, j int) bool { return bans[i].UserID < bans[j].UserID })
}
