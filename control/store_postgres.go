package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PostgresBans keeps bans in the bans table (migration 0009).
type PostgresBans struct{ pool *pgxpool.Pool }

// NewPostgresBans uses pool, whose database is migrated.
func NewPostgresBans(pool *pgxpool.Pool) *PostgresBans { return &PostgresBans{pool: pool} }

// PutBan implements BanStore.
func (s *PostgresBans) PutBan(ctx context.Context, b Ban) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO bans (user_id, reason, expires_at, created_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (user_id) DO UPDATE
		   SET reason = EXCLUDED.reason, expires_at = EXCLUDED.expires_at, created_at = EXCLUDED.created_at`,
		b.UserID, b.Reason, b.Until, b.CreatedAt)
	if err != nil {
		return fmt.Errorf("store ban of %s: %w", b.UserID, err)
	}
	return nil
}

// DeleteBan implements BanStore.
func (s *PostgresBans) DeleteBan(ctx context.Context, userID string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM bans WHERE user_id = $1`, userID)
	if err != nil {
		return false, fmt.Errorf("lift ban of %s: %w", userID, err)
	}
	return tag.RowsAffected() > 0, nil
}

// Bans implements BanStore.
func (s *PostgresBans) Bans(ctx context.Context) ([]Ban, error) {
	rows, err := s.pool.Query(ctx, `SELECT user_id, reason, expires_at, created_at FROM bans ORDER BY user_id`)
	if err != nil {
		return nil, fmt.Errorf("list bans: %w", err)
	}
	bans, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Ban, error) {
		var b Ban
		var until *time.Time
		if err := r.Scan(&b.UserID, &b.Reason, &until, &b.CreatedAt); err != nil {
			return b, err
		}
		if until != nil {
			u := until.UTC()
			b.Until = &u
		}
		b.CreatedAt = b.CreatedAt.UTC()
		return b, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list bans: %w", err)
	}
	return bans, nil
}

// PostgresQueues keeps queue overrides in queue_configs (migrations 0001
// and 0009).
type PostgresQueues struct{ pool *pgxpool.Pool }

// NewPostgresQueues uses pool, whose database is migrated.
func NewPostgresQueues(pool *pgxpool.Pool) *PostgresQueues { return &PostgresQueues{pool: pool} }

// PutQueue implements QueueStore.
func (s *PostgresQueues) PutQueue(ctx context.Context, name string, config json.RawMessage, retired bool) (QueueOverride, error) {
	if retired || len(config) == 0 {
		config = json.RawMessage("null")
	}
	var o QueueOverride
	var raw []byte
	// Writers take turns, so versions are handed out in commit order: a
	// watcher that has seen version v has seen every change up to v.
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('matchgate.queue_configs'))`); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `
		INSERT INTO queue_configs (name, config, retired, version, updated_at)
		VALUES ($1, $2::jsonb, $3, nextval('queue_configs_version'), clock_timestamp())
		ON CONFLICT (name) DO UPDATE
		   SET config = EXCLUDED.config, retired = EXCLUDED.retired,
		       version = EXCLUDED.version, updated_at = EXCLUDED.updated_at
		RETURNING name, config, retired, version, updated_at`,
			name, string(config), retired).Scan(&o.Name, &raw, &o.Retired, &o.Version, &o.UpdatedAt)
	})
	if err != nil {
		return QueueOverride{}, fmt.Errorf("store queue %s: %w", name, err)
	}
	o.Config, o.UpdatedAt = normalizeRaw(raw), o.UpdatedAt.UTC()
	return o, nil
}

// Queues implements QueueStore.
func (s *PostgresQueues) Queues(ctx context.Context) ([]QueueOverride, error) {
	rows, err := s.pool.Query(ctx, `SELECT name, config, retired, version, updated_at FROM queue_configs ORDER BY version, name`)
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (QueueOverride, error) {
		var o QueueOverride
		var raw []byte
		if err := r.Scan(&o.Name, &raw, &o.Retired, &o.Version, &o.UpdatedAt); err != nil {
			return o, err
		}
		o.Config, o.UpdatedAt = normalizeRaw(raw), o.UpdatedAt.UTC()
		return o, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	return out, nil
}

// QueuesVersion implements QueueStore.
func (s *PostgresQueues) QueuesVersion(ctx context.Context) (int64, error) {
	var v int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM queue_configs`).Scan(&v)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("queue config version: %w", err)
	}
	return v, nil
}

// normalizeRaw turns a JSON null (a retired queue) into an absent config.
func normalizeRaw(raw []byte) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return json.RawMessage(raw)
}
