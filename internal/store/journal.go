package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/journal"
)

// addEvent writes one outbox row inside the caller's transaction.
func addEvent(ctx context.Context, db *DB, q queryer, e event.Event) error {
	return addEvents(ctx, db, q, []event.Event{e})
}

// addEvents writes several outbox rows in one statement inside the
// caller's transaction.
func addEvents(ctx context.Context, db *DB, q queryer, evs []event.Event) error {
	if len(evs) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString(`INSERT INTO events (app_id, type, data, created_at, subject) VALUES `)
	args := make([]any, 0, 5*len(evs))
	for i, e := range evs {
		data := e.Encoded
		if data == nil {
			var err error
			if data, err = json.Marshal(e.Data); err != nil {
				return fmt.Errorf("event %s data: %w", e.Type, err)
			}
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?)")
		args = append(args, nullable(e.AppID), e.Type, string(data), ms(e.CreatedAt), nullable(e.Subject))
	}
	if _, err := q.ExecContext(ctx, db.rebind(b.String()), args...); err != nil {
		return translate(err)
	}
	db.noteEvent(q)
	return nil
}

// OnEvents sets fn to be called after each commit of a transaction that
// wrote events (the webhook dispatcher's wake-up); fn must not block.
func (db *DB) OnEvents(fn func()) { db.onEvents.Store(&fn) }

// noteEvent remembers that the write transaction q wrote an event.
func (db *DB) noteEvent(q queryer) {
	if t, ok := q.(*wtx); ok {
		t.events = true
	}
}

// eventsCommitted tells the OnEvents hook that a commit wrote events.
func (db *DB) eventsCommitted() {
	if fn := db.onEvents.Load(); fn != nil {
		(*fn)()
	}
}

// addAudit appends one audit entry inside the caller's transaction.
func addAudit(ctx context.Context, db *DB, q queryer, e audit.Entry) error {
	details := []byte("{}")
	if len(e.Details) > 0 {
		var err error
		if details, err = json.Marshal(e.Details); err != nil {
			return fmt.Errorf("audit %s details: %w", e.Action, err)
		}
	}
	_, err := q.ExecContext(ctx, db.rebind(`INSERT INTO audit_log (at, actor_kind, actor_id, actor_name, actor_token, ip, action, app_id, target, details)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`), ms(e.At), e.Actor.Kind, e.Actor.ID, e.Actor.Name, e.Actor.Token, e.Actor.IP, e.Action, nullable(e.AppID), e.Target, string(details))
	return translate(err)
}

// Events returns outbox rows after id, oldest first (for tests and the
// webhook dispatcher).
func (db *DB) Events(ctx context.Context, afterID int64, limit int) ([]event.Event, error) {
	return scanEvents(db.read.QueryContext(ctx, db.rebind(`SELECT `+eventCols+` FROM events
		WHERE id > ? ORDER BY id LIMIT ?`), afterID, limit))
}

// eventCols are the outbox columns scanEvents reads.
const eventCols = `id, COALESCE(app_id, ''), type, data, created_at, COALESCE(subject, '')`

// scanEvents reads outbox rows (eventCols).
func scanEvents(rows *sql.Rows, err error) ([]event.Event, error) {
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []event.Event
	for rows.Next() {
		var e event.Event
		var data string
		var at int64
		if err := rows.Scan(&e.ID, &e.AppID, &e.Type, &data, &at, &e.Subject); err != nil {
			return nil, translate(err)
		}
		if err := json.Unmarshal([]byte(data), &e.Data); err != nil {
			return nil, err
		}
		e.CreatedAt = fromMS(at)
		out = append(out, e)
	}
	return out, translate(rows.Err())
}

// AuditFilter selects audit entries; empty fields do not filter.
type AuditFilter struct {
	AppID   string
	Action  string // an action, or a prefix ending in "." ("key." = every key action)
	ActorID string
	Target  string
	Since   time.Time // at or after
	Until   time.Time // before
	Before  int64     // cursor: entries with a smaller ID
	Limit   int
}

// Audit returns audit entries, newest first.
func (db *DB) Audit(ctx context.Context, f AuditFilter) ([]audit.Entry, error) {
	q := `SELECT id, at, actor_kind, actor_id, actor_name, actor_token, ip, action, COALESCE(app_id, ''), target, details FROM audit_log WHERE 1 = 1`
	var args []any
	if f.AppID != "" {
		q += ` AND app_id = ?`
		args = append(args, f.AppID)
	}
	if strings.HasSuffix(f.Action, ".") {
		q += ` AND action >= ? AND action < ?`
		args = append(args, f.Action, f.Action[:len(f.Action)-1]+"/") // "/" sorts right after "."
	} else if f.Action != "" {
		q += ` AND action = ?`
		args = append(args, f.Action)
	}
	if f.ActorID != "" {
		q += ` AND actor_id = ?`
		args = append(args, f.ActorID)
	}
	if f.Target != "" {
		q += ` AND target = ?`
		args = append(args, f.Target)
	}
	if !f.Since.IsZero() {
		q += ` AND at >= ?`
		args = append(args, ms(f.Since))
	}
	if !f.Until.IsZero() {
		q += ` AND at < ?`
		args = append(args, ms(f.Until))
	}
	if f.Before > 0 {
		q += ` AND id < ?`
		args = append(args, f.Before)
	}
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 100
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, f.Limit)
	rows, err := db.read.QueryContext(ctx, db.rebind(q), args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []audit.Entry
	for rows.Next() {
		var e audit.Entry
		var at int64
		var details string
		if err := rows.Scan(&e.ID, &at, &e.Actor.Kind, &e.Actor.ID, &e.Actor.Name, &e.Actor.Token, &e.Actor.IP, &e.Action, &e.AppID, &e.Target, &details); err != nil {
			return nil, err
		}
		e.At = fromMS(at)
		if err := json.Unmarshal([]byte(details), &e.Details); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, translate(rows.Err())
}

// journalTx is the journal (audit entry and outbox event) of one write
// transaction; every domain Tx of the store embeds it.
type journalTx struct {
	db *DB
	tx *wtx
}

var _ journal.Journal = journalTx{}

// AddEvent writes one outbox row in the transaction.
func (t journalTx) AddEvent(ctx context.Context, e event.Event) error {
	return addEvent(ctx, t.db, t.tx, e)
}

// AddAudit appends one audit entry in the transaction.
func (t journalTx) AddAudit(ctx context.Context, e audit.Entry) error {
	return addAudit(ctx, t.db, t.tx, e)
}
