package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

// AdminConfig configures Admin.
type AdminConfig struct {
	// Bans stores bans. Required.
	Bans BanStore
	// List is this process's ban list, updated at once (the control channel
	// updates it again, and every other process's). Default: none.
	List *BanList
	// Queues stores queue overrides. Required.
	Queues QueueStore
	// Base is the queue file's configuration, normalized: what overrides
	// are validated against. Required.
	Base matcher.Config
	// Bus tells every process. Required.
	Bus *Bus
	// Now stamps bans. Default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Admin carries out the admin API's requests. Errors meant for the caller
// are *matcher.Error (BAD_REQUEST, NOT_FOUND); anything else is internal.
type Admin struct {
	cfg AdminConfig
}

// NewAdmin builds an Admin; it starts nothing.
func NewAdmin(cfg AdminConfig) (*Admin, error) {
	if cfg.Bans == nil || cfg.Queues == nil || cfg.Bus == nil {
		return nil, errors.New("control: AdminConfig needs Bans, Queues and Bus")
	}
	if len(cfg.Base.Queues) == 0 {
		return nil, errors.New("control: AdminConfig.Base has no queues")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Admin{cfg: cfg}, nil
}

// Ban stores a ban (replacing any earlier one of the user) and tells every
// gateway, which closes the user's sockets.
func (a *Admin) Ban(ctx context.Context, b Ban) (Ban, error) {
	b.CreatedAt = a.cfg.Now().UTC().Truncate(time.Microsecond)
	if b.Until != nil {
		u := b.Until.UTC().Truncate(time.Microsecond)
		if !u.After(b.CreatedAt) {
			return Ban{}, matcher.Errorf(matcher.CodeBadRequest, "until must be in the future")
		}
		b.Until = &u
	}
	if err := b.Validate(); err != nil {
		return Ban{}, matcher.Errorf(matcher.CodeBadRequest, "%s", err.Error())
	}
	if err := a.cfg.Bans.PutBan(ctx, b); err != nil {
		return Ban{}, err
	}
	if a.cfg.List != nil {
		a.cfg.List.Apply(b)
	}
	a.publish(ctx, Message{Op: OpBan, User: b.UserID, Ban: &b})
	return b, nil
}

// Unban lifts a user's ban; NOT_FOUND when there was none.
func (a *Admin) Unban(ctx context.Context, userID string) error {
	if !ValidUserID(userID) {
		return matcher.Errorf(matcher.CodeNotFound, "no such ban")
	}
	found, err := a.cfg.Bans.DeleteBan(ctx, userID)
	if err != nil {
		return err
	}
	if a.cfg.List != nil {
		a.cfg.List.Lift(userID)
	}
	a.publish(ctx, Message{Op: OpUnban, User: userID})
	if !found {
		return matcher.Errorf(matcher.CodeNotFound, "no such ban")
	}
	return nil
}

// Bans lists the bans in force.
func (a *Admin) Bans(ctx context.Context) ([]Ban, error) {
	all, err := a.cfg.Bans.Bans(ctx)
	if err != nil {
		return nil, err
	}
	now := a.cfg.Now()
	out := all[:0]
	for _, b := range all {
		if b.Active(now) {
			out = append(out, b)
		}
	}
	return out, nil
}

// Disconnect closes every socket of userID on every gateway.
func (a *Admin) Disconnect(ctx context.Context, userID string) error {
	if !ValidUserID(userID) {
		return matcher.Errorf(matcher.CodeBadRequest, "user id must be 1..%d bytes of printable UTF-8", MaxUserIDLen)
	}
	return a.cfg.Bus.Publish(ctx, Message{Op: OpDisconnect, User: userID})
}

// Drain tells the gateway named node to drain.
func (a *Admin) Drain(ctx context.Context, node string) error {
	if !ValidUserID(node) { // same shape: printable, bounded
		return matcher.Errorf(matcher.CodeBadRequest, "node name must be 1..%d bytes of printable UTF-8", MaxUserIDLen)
	}
	return a.cfg.Bus.Publish(ctx, Message{Op: OpDrain, Node: node})
}

// QueuesView is the admin's view of the queues: the overrides stored and
// the names of the queues in force with them.
type QueuesView struct {
	Overrides []QueueOverride `json:"overrides"`
	Effective []string        `json:"effective"`
}

// Queues describes the stored overrides and the queues they give.
func (a *Admin) Queues(ctx context.Context) (QueuesView, error) {
	os, err := a.cfg.Queues.Queues(ctx)
	if err != nil {
		return QueuesView{}, err
	}
	v := QueuesView{Overrides: os, Effective: []string{}}
	if v.Overrides == nil {
		v.Overrides = []QueueOverride{}
	}
	c, err := Effective(a.cfg.Base, os)
	if err != nil {
		return QueuesView{}, fmt.Errorf("stored queue configuration is invalid: %w", err)
	}
	for _, q := range c.Queues {
		v.Effective = append(v.Effective, q.Name)
	}
	return v, nil
}

// PutQueue creates or changes a queue: raw is the queue in the queue file's
// shape, as JSON. The whole configuration it would give is validated first.
func (a *Admin) PutQueue(ctx context.Context, name string, raw json.RawMessage) (QueueOverride, error) {
	if _, err := DecodeQueue(name, raw); err != nil {
		return QueueOverride{}, matcher.Errorf(matcher.CodeBadRequest, "%s", err.Error())
	}
	return a.put(ctx, QueueOverride{Name: name, Config: raw})
}

// RetireQueue retires a queue in force; NOT_FOUND when there is none.
func (a *Admin) RetireQueue(ctx context.Context, name string) (QueueOverride, error) {
	return a.put(ctx, QueueOverride{Name: name, Retired: true})
}

func (a *Admin) put(ctx context.Context, o QueueOverride) (QueueOverride, error) {
	os, err := a.cfg.Queues.Queues(ctx)
	if err != nil {
		return QueueOverride{}, err
	}
	current, err := Effective(a.cfg.Base, os)
	if err != nil {
		return QueueOverride{}, fmt.Errorf("stored queue configuration is invalid: %w", err)
	}
	if o.Retired && !hasQueue(current, o.Name) {
		return QueueOverride{}, matcher.Errorf(matcher.CodeNotFound, "no queue named %s in force", o.Name)
	}
	o.Version = maxVersion(os) + 1
	next, err := Effective(a.cfg.Base, append(os, o))
	if err != nil {
		return QueueOverride{}, matcher.Errorf(matcher.CodeBadRequest, "%s", err.Error())
	}
	if err := kindChange(a.cfg.Base, current, next, o.Name); err != nil {
		return QueueOverride{}, err
	}
	stored, err := a.cfg.Queues.PutQueue(ctx, o.Name, o.Config, o.Retired)
	if err != nil {
		return QueueOverride{}, err
	}
	a.publish(ctx, Message{Op: OpQueues})
	return stored, nil
}

// kindChange refuses to turn a matched queue (skill, room) into an
// admission queue or back, in force or as the queue file defines it: the
// waiters of one kind are kept where the other never looks (tickets in the
// pool, places in the admission record), so they would be stranded. A
// queue under another name is the way to change kind.
func kindChange(base, current, next matcher.Config, name string) error {
	after, ok := findQueue(next, name)
	if !ok {
		return nil
	}
	before, ok := findQueue(current, name)
	if !ok {
		if before, ok = findQueue(base, name); !ok {
			return nil
		}
	}
	if before.Matched() == after.Matched() {
		return nil
	}
	return matcher.Errorf(matcher.CodeBadRequest,
		"queue %s: kind %s cannot become %s: its waiters would be stranded (a matched queue's tickets and an admission queue's places are kept apart); use another name",
		name, before.Kind, after.Kind)
}

func findQueue(c matcher.Config, name string) (matcher.QueueConfig, bool) {
	for _, q := range c.Queues {
		if q.Name == name {
			return q, true
		}
	}
	return matcher.QueueConfig{}, false
}

func hasQueue(c matcher.Config, name string) bool {
	for _, q := range c.Queues {
		if q.Name == name {
			return true
		}
	}
	return false
}

// publish tells every process; a failure only delays the change until the
// next periodic reload, so it is logged rather than returned.
func (a *Admin) publish(ctx context.Context, m Message) {
	if err := a.cfg.Bus.Publish(ctx, m); err != nil {
		a.cfg.Logger.Warn("control message not published; processes catch up at their next reload", "op", m.Op, "err", err)
	}
}
