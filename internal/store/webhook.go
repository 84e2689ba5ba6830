package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/webhook"
)

// WebhookStore returns db as the webhook package's Store.
func (db *DB) WebhookStore() webhook.Store { return webhookStore{db} }

type webhookStore struct{ db *DB }

type webhookTx struct{ journalTx }

func (s webhookStore) InTx(ctx context.Context, fn func(webhook.Tx) error) error {
	return s.db.tx(ctx, func(tx *wtx) error { return fn(webhookTx{journalTx{s.db, tx}}) })
}

// Analyze refreshes PostgreSQL's statistics of webhook_deliveries, waiting
// at most 100 ms for the table's lock (autovacuum may hold it); SQLite
// plans without statistics (no sqlite_stat1 is ever written), so there it
// does nothing.
func (s webhookStore) Analyze(ctx context.Context) error {
	if s.db.engine != Postgres {
		return nil
	}
	return s.db.tx(ctx, func(tx *wtx) error {
		if _, err := tx.ExecContext(ctx, `SET LOCAL lock_timeout = '100ms'`); err != nil {
			return translate(err)
		}
		_, err := tx.ExecContext(ctx, `ANALYZE webhook_deliveries`)
		return translate(err)
	})
}

// skipLocked is the suffix that lets several processes claim rows without
// waiting on each other (PostgreSQL); SQLite's single writer needs none.
func (db *DB) skipLocked(of string) string {
	if db.engine == Postgres {
		return " FOR UPDATE" + of + " SKIP LOCKED"
	}
	return ""
}

const destCols = `id, COALESCE(app_id, ''), url, secret, events, description, enabled, failures, paused_at, created_at, updated_at`

// scanDest reads a destination, opening its sealed signing secret.
func (db *DB) scanDest(row interface{ Scan(...any) error }) (*webhook.Destination, error) {
	var d webhook.Destination
	var events string
	var paused sql.NullInt64
	var created, updated int64
	if err := row.Scan(&d.ID, &d.AppID, &d.URL, &d.Secret, &events, &d.Description, &d.Enabled, &d.Failures, &paused,
		&created, &updated); err != nil {
		return nil, translate(err)
	}
	var err error
	if d.Secret, err = db.openString(purposeWebhookSecret, strconv.FormatInt(d.ID, 10), d.Secret); err != nil {
		return nil, err
	}
	if events != "" {
		d.Events = strings.Split(events, ",")
	}
	d.PausedAt, d.CreatedAt, d.UpdatedAt = fromNullMS(paused), fromMS(created), fromMS(updated)
	return &d, nil
}

func (db *DB) dests(rows *sql.Rows, err error) ([]webhook.Destination, error) {
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []webhook.Destination{}
	for rows.Next() {
		d, err := db.scanDest(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *d)
	}
	return out, translate(rows.Err())
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (s webhookStore) Destinations(ctx context.Context, appID string) ([]webhook.Destination, error) {
	if appID == "" {
		return s.db.dests(s.db.read.QueryContext(ctx, `SELECT `+destCols+` FROM webhook_destinations ORDER BY id`))
	}
	return s.db.dests(s.db.read.QueryContext(ctx, s.db.rebind(`SELECT `+destCols+` FROM webhook_destinations
		WHERE app_id = ? OR app_id IS NULL ORDER BY id`), appID))
}

func (s webhookStore) Destination(ctx context.Context, id int64) (*webhook.Destination, error) {
	return s.db.scanDest(s.db.read.QueryRowContext(ctx, s.db.rebind(`SELECT `+destCols+` FROM webhook_destinations WHERE id = ?`), id))
}

const deliveryCols = `d.id, d.destination_id, d.event_id, COALESCE(d.app_id, ''), d.event, d.body, d.status, d.attempts,
	d.next_attempt_at, d.locked_until, d.created_at, d.updated_at, COALESCE(d.subject, ''), d.sequence`

func scanDelivery(row interface{ Scan(...any) error }, extra ...any) (*webhook.Delivery, error) {
	var d webhook.Delivery
	var body string
	var next, locked, created, updated int64
	dst := append([]any{&d.ID, &d.DestinationID, &d.EventID, &d.AppID, &d.Event, &body, &d.Status, &d.Attempts, &next, &locked,
		&created, &updated, &d.Subject, &d.Sequence}, extra...)
	if err := row.Scan(dst...); err != nil {
		return nil, translate(err)
	}
	d.Body = []byte(body)
	d.NextAttemptAt, d.CreatedAt, d.UpdatedAt = fromMS(next), fromMS(created), fromMS(updated)
	if locked > 0 {
		d.LockedUntil = fromMS(locked)
	}
	return &d, nil
}

func (s webhookStore) Deliveries(ctx context.Context, f webhook.DeliveryFilter) ([]webhook.Delivery, error) {
	q := `SELECT ` + deliveryCols + ` FROM webhook_deliveries d JOIN webhook_destinations w ON w.id = d.destination_id WHERE 1 = 1`
	var args []any
	if f.DestinationID > 0 {
		q += ` AND d.destination_id = ?`
		args = append(args, f.DestinationID)
	} else if f.AppID != "" {
		q += ` AND (w.app_id = ? OR (w.app_id IS NULL AND d.app_id = ?))`
		args = append(args, f.AppID, f.AppID)
	}
	if f.Status != "" {
		q += ` AND d.status = ?`
		args = append(args, f.Status)
	}
	q += ` ORDER BY d.created_at DESC, d.id DESC LIMIT ?`
	args = append(args, f.Limit)
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(q), args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []webhook.Delivery{}
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *d)
	}
	return out, translate(rows.Err())
}

func (s webhookStore) Delivery(ctx context.Context, id string) (*webhook.Delivery, error) {
	return scanDelivery(s.db.read.QueryRowContext(ctx, s.db.rebind(`SELECT `+deliveryCols+` FROM webhook_deliveries d WHERE d.id = ?`), id))
}

func (s webhookStore) Attempts(ctx context.Context, deliveryID string) ([]webhook.Attempt, error) {
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(`SELECT attempt, at, status_code, duration_ms, response, error
		FROM webhook_attempts WHERE delivery_id = ? ORDER BY id`), deliveryID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []webhook.Attempt{}
	for rows.Next() {
		var a webhook.Attempt
		var at, dur int64
		if err := rows.Scan(&a.Attempt, &at, &a.StatusCode, &dur, &a.Response, &a.Error); err != nil {
			return nil, translate(err)
		}
		a.At, a.Duration = fromMS(at), time.Duration(dur)*time.Millisecond
		out = append(out, a)
	}
	return out, translate(rows.Err())
}

// InsertDestination inserts d with an empty secret to learn its id, then
// stores the secret sealed to that id, in the same transaction.
func (t webhookTx) InsertDestination(ctx context.Context, d *webhook.Destination) error {
	if err := translate(t.tx.QueryRowContext(ctx, t.db.rebind(`INSERT INTO webhook_destinations (app_id, url, secret, events, description,
		enabled, failures, paused_at, created_at, updated_at) VALUES (?, ?, '', ?, ?, ?, ?, ?, ?, ?) RETURNING id`),
		nullable(d.AppID), d.URL, strings.Join(d.Events, ","), d.Description, d.Enabled, d.Failures, optMS(d.PausedAt),
		ms(d.CreatedAt), ms(d.UpdatedAt)).Scan(&d.ID)); err != nil {
		return err
	}
	secret, err := t.db.sealString(purposeWebhookSecret, strconv.FormatInt(d.ID, 10), d.Secret)
	if err != nil {
		return err
	}
	_, err = t.tx.ExecContext(ctx, t.db.rebind(`UPDATE webhook_destinations SET secret = ? WHERE id = ?`), secret, d.ID)
	return translate(err)
}

func (t webhookTx) DestinationForUpdate(ctx context.Context, id int64) (*webhook.Destination, error) {
	return t.db.scanDest(t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT `+destCols+` FROM webhook_destinations WHERE id = ?`+t.db.forUpdate()), id))
}

func (t webhookTx) UpdateDestination(ctx context.Context, d *webhook.Destination) error {
	secret, err := t.db.sealString(purposeWebhookSecret, strconv.FormatInt(d.ID, 10), d.Secret)
	if err != nil {
		return err
	}
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE webhook_destinations SET url = ?, secret = ?, events = ?, description = ?,
		enabled = ?, failures = ?, paused_at = ?, updated_at = ? WHERE id = ?`),
		d.URL, secret, strings.Join(d.Events, ","), d.Description, d.Enabled, d.Failures, optMS(d.PausedAt), ms(d.UpdatedAt), d.ID)
	return affected(res, err)
}

func (t webhookTx) DeleteDestination(ctx context.Context, id int64) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`DELETE FROM webhook_destinations WHERE id = ?`), id)
	return affected(res, err)
}

func (t webhookTx) UndispatchedEvents(ctx context.Context, limit int) ([]event.Event, error) {
	return scanEvents(t.tx.QueryContext(ctx, t.db.rebind(`SELECT `+eventCols+` FROM events
		WHERE dispatched_at IS NULL ORDER BY id LIMIT ?`+t.db.skipLocked("")), limit))
}

func (t webhookTx) HasUndispatched(ctx context.Context) (bool, error) {
	var one int
	err := t.tx.QueryRowContext(ctx, `SELECT 1 FROM events WHERE dispatched_at IS NULL LIMIT 1`).Scan(&one)
	if err == sql.ErrNoRows {
		return false, nil
	}
	return err == nil, translate(err)
}

func (t webhookTx) MarkDispatched(ctx context.Context, ids []int64, now time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	in, args := inList(ids)
	_, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE events SET dispatched_at = ? WHERE id IN `+in), append([]any{ms(now)}, args...)...)
	return translate(err)
}

func (t webhookTx) EnabledDestinations(ctx context.Context) ([]webhook.Destination, error) {
	return t.db.dests(t.tx.QueryContext(ctx, t.db.rebind(`SELECT `+destCols+` FROM webhook_destinations WHERE enabled = ? ORDER BY id`+
		t.db.forUpdate()), true))
}

func (t webhookTx) AdvanceSequence(ctx context.Context, destinationID int64, n int) (int64, error) {
	var last int64
	err := t.tx.QueryRowContext(ctx, t.db.rebind(`UPDATE webhook_destinations SET sequence = sequence + ? WHERE id = ? RETURNING sequence`),
		n, destinationID).Scan(&last)
	return last, translate(err)
}

func (t webhookTx) InsertDelivery(ctx context.Context, d *webhook.Delivery) error {
	return t.InsertDeliveries(ctx, []*webhook.Delivery{d})
}

// rowsPerStatement bounds the rows of one multi-row statement (14 columns
// × 500 stays far below both engines' limits on parameters).
const rowsPerStatement = 500

// InsertDeliveries inserts deliveries rowsPerStatement to a statement,
// skipping any whose (event, destination) already has one.
func (t webhookTx) InsertDeliveries(ctx context.Context, ds []*webhook.Delivery) error {
	for len(ds) > 0 {
		n := min(len(ds), rowsPerStatement)
		var b strings.Builder
		b.WriteString(`INSERT INTO webhook_deliveries (id, destination_id, event_id, app_id, event, body, status,
		attempts, next_attempt_at, locked_until, created_at, updated_at, subject, sequence) VALUES `)
		args := make([]any, 0, 14*n)
		for i, d := range ds[:n] {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
			args = append(args, d.ID, d.DestinationID, d.EventID, nullable(d.AppID), d.Event, string(d.Body), d.Status, d.Attempts,
				ms(d.NextAttemptAt), lockedMS(d.LockedUntil), ms(d.CreatedAt), ms(d.UpdatedAt), nullable(d.Subject), d.Sequence)
		}
		b.WriteString(` ON CONFLICT (event_id, destination_id) DO NOTHING`)
		if _, err := t.tx.ExecContext(ctx, t.db.rebind(b.String()), args...); err != nil {
			return translate(err)
		}
		ds = ds[n:]
	}
	return nil
}

// marks returns "(?, ?, …)" for n values.
func marks(n int) string { return "(?" + strings.Repeat(", ?", n-1) + ")" }

// stringArgs returns ids as arguments.
func stringArgs(ids []string) []any {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return args
}

// LeaseDeliveries counts an attempt of each delivery and holds it until
// until, rowsPerStatement to a statement.
func (t webhookTx) LeaseDeliveries(ctx context.Context, ids []string, until, now time.Time) error {
	for len(ids) > 0 {
		n := min(len(ids), rowsPerStatement)
		_, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE webhook_deliveries SET attempts = attempts + 1, locked_until = ?, updated_at = ?
			WHERE id IN `+marks(n)), append([]any{ms(until), ms(now)}, stringArgs(ids[:n])...)...)
		if err != nil {
			return translate(err)
		}
		ids = ids[n:]
	}
	return nil
}

// DeliveriesForUpdate returns those of the deliveries that exist, in id
// order, locked in that order.
func (t webhookTx) DeliveriesForUpdate(ctx context.Context, ids []string) ([]webhook.Delivery, error) {
	ids = slices.Sorted(slices.Values(ids))
	out := make([]webhook.Delivery, 0, len(ids))
	for len(ids) > 0 {
		n := min(len(ids), rowsPerStatement)
		rows, err := t.tx.QueryContext(ctx, t.db.rebind(`SELECT `+deliveryCols+` FROM webhook_deliveries d WHERE d.id IN `+marks(n)+
			` ORDER BY d.id`+t.db.forUpdate()), stringArgs(ids[:n])...)
		if err != nil {
			return nil, translate(err)
		}
		for rows.Next() {
			d, err := scanDelivery(rows)
			if err != nil {
				rows.Close()
				return nil, err
			}
			out = append(out, *d)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, translate(err)
		}
		ids = ids[n:]
	}
	return out, nil
}

// UpdateDeliveries writes the status, attempts, next attempt, lease and
// update time of each delivery, rowsPerStatement to a statement (an UPDATE
// … FROM a VALUES list, which both engines have); a delivery that does not
// exist is apperr.ErrNotFound.
func (t webhookTx) UpdateDeliveries(ctx context.Context, ds []*webhook.Delivery) error {
	for len(ds) > 0 {
		n := min(len(ds), rowsPerStatement)
		var b strings.Builder
		b.WriteString(`WITH v (id, status, attempts, next_attempt_at, locked_until, updated_at) AS (VALUES `)
		args := make([]any, 0, 6*n)
		for i, d := range ds[:n] {
			if i > 0 {
				b.WriteString(", ")
			}
			// Typed, so PostgreSQL does not take the parameters for text.
			b.WriteString("(CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS INTEGER), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT))")
			args = append(args, d.ID, d.Status, d.Attempts, ms(d.NextAttemptAt), lockedMS(d.LockedUntil), ms(d.UpdatedAt))
		}
		b.WriteString(`) UPDATE webhook_deliveries SET status = v.status, attempts = v.attempts, next_attempt_at = v.next_attempt_at,
			locked_until = v.locked_until, updated_at = v.updated_at FROM v WHERE webhook_deliveries.id = v.id`)
		res, err := t.tx.ExecContext(ctx, t.db.rebind(b.String()), args...)
		if err != nil {
			return translate(err)
		}
		if got, err := res.RowsAffected(); err != nil {
			return translate(err)
		} else if got != int64(n) {
			return apperr.ErrNotFound
		}
		ds = ds[n:]
	}
	return nil
}

// DestinationsForUpdate returns those of the destinations that exist, in
// id order, locked in that order.
func (t webhookTx) DestinationsForUpdate(ctx context.Context, ids []int64) ([]webhook.Destination, error) {
	if len(ids) == 0 {
		return []webhook.Destination{}, nil
	}
	in, args := inList(slices.Sorted(slices.Values(ids)))
	return t.db.dests(t.tx.QueryContext(ctx, t.db.rebind(`SELECT `+destCols+` FROM webhook_destinations WHERE id IN `+in+
		` ORDER BY id`+t.db.forUpdate()), args...))
}

func lockedMS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return ms(t)
}

// DueDeliveries claims only the first pending delivery of each subject at
// each destination: a later one (larger event_id) waits while an earlier
// one is pending — due, leased or waiting to retry — and goes once that
// one succeeded or failed (webhook_deliveries_subject_pending finds the
// first pending event of the subject). A claimed delivery stays pending
// under its lease, so a second process's claim skips its row and still
// sees it holding the subject back.
//
// The query walks pending deliveries in due order and tests each row with
// correlated subqueries (its destination switched on and not paused; it is
// the first pending one of its subject), stopping at limit. Joins and NOT
// EXISTS let PostgreSQL's planner misjudge how many rows pass (it took the
// NOT EXISTS to drop nearly all of them) and test and sort every pending
// row instead: 150–250 ms a claim with 20 000 pending, against ~5 ms for
// this shape (docs/performance.md, "Webhooks (issue 22)"). The subject test
// is "event_id <= the first pending one", not "=", for the same reason: the
// planner's default guess for an inequality keeps the ordered walk.
func (t webhookTx) DueDeliveries(ctx context.Context, now time.Time, limit int) ([]webhook.Delivery, error) {
	rows, err := t.tx.QueryContext(ctx, t.db.rebind(`SELECT `+deliveryCols+`,
		(SELECT w.url FROM webhook_destinations w WHERE w.id = d.destination_id),
		(SELECT w.secret FROM webhook_destinations w WHERE w.id = d.destination_id)
		FROM webhook_deliveries d
		WHERE d.status = ? AND d.next_attempt_at <= ? AND d.locked_until <= ?
		AND (SELECT w.enabled AND w.paused_at IS NULL FROM webhook_destinations w WHERE w.id = d.destination_id)
		AND (d.subject IS NULL OR d.event_id <= (SELECT e.event_id FROM webhook_deliveries e
			WHERE e.destination_id = d.destination_id AND e.subject = d.subject AND e.subject IS NOT NULL AND e.status = 'pending'
			ORDER BY e.event_id LIMIT 1))
		ORDER BY d.next_attempt_at LIMIT ?`+t.db.skipLocked(" OF d")), webhook.Pending, ms(now), ms(now), limit)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []webhook.Delivery
	for rows.Next() {
		var url, secret string
		d, err := scanDelivery(rows, &url, &secret)
		if err != nil {
			return nil, err
		}
		if secret, err = t.db.openString(purposeWebhookSecret, strconv.FormatInt(d.DestinationID, 10), secret); err != nil {
			return nil, err
		}
		d.URL, d.Secret = url, secret
		out = append(out, *d)
	}
	return out, translate(rows.Err())
}

func (t webhookTx) DeliveryForUpdate(ctx context.Context, id string) (*webhook.Delivery, error) {
	return scanDelivery(t.tx.QueryRowContext(ctx, t.db.rebind(`SELECT `+deliveryCols+` FROM webhook_deliveries d WHERE d.id = ?`+
		t.db.forUpdate()), id))
}

func (t webhookTx) UpdateDelivery(ctx context.Context, d *webhook.Delivery) error {
	res, err := t.tx.ExecContext(ctx, t.db.rebind(`UPDATE webhook_deliveries SET status = ?, attempts = ?, next_attempt_at = ?,
		locked_until = ?, updated_at = ? WHERE id = ?`),
		d.Status, d.Attempts, ms(d.NextAttemptAt), lockedMS(d.LockedUntil), ms(d.UpdatedAt), d.ID)
	return affected(res, err)
}

func (t webhookTx) AddAttempt(ctx context.Context, deliveryID string, a webhook.Attempt) error {
	return t.AddAttempts(ctx, []webhook.DeliveryAttempt{{DeliveryID: deliveryID, Attempt: a}})
}

// AddAttempts logs attempts, in order, rowsPerStatement to a statement.
func (t webhookTx) AddAttempts(ctx context.Context, as []webhook.DeliveryAttempt) error {
	for len(as) > 0 {
		n := min(len(as), rowsPerStatement)
		var b strings.Builder
		b.WriteString(`INSERT INTO webhook_attempts (delivery_id, attempt, at, status_code, duration_ms, response, error) VALUES `)
		args := make([]any, 0, 7*n)
		for i, a := range as[:n] {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?, ?, ?, ?, ?)")
			args = append(args, a.DeliveryID, a.Attempt.Attempt, ms(a.Attempt.At), a.Attempt.StatusCode, a.Attempt.Duration.Milliseconds(),
				storableText(a.Attempt.Response), storableText(a.Attempt.Error))
		}
		if _, err := t.tx.ExecContext(ctx, t.db.rebind(b.String()), args...); err != nil {
			return translate(err)
		}
		as = as[n:]
	}
	return nil
}

func (t webhookTx) RequeueFailed(ctx context.Context, appID string, destinationID int64, since, now time.Time) (int, error) {
	q := `UPDATE webhook_deliveries SET status = ?, next_attempt_at = ?, locked_until = 0, updated_at = ?
		WHERE status = ? AND created_at >= ?`
	args := []any{webhook.Pending, ms(now), ms(now), webhook.Failed, ms(since)}
	if destinationID > 0 {
		q += ` AND destination_id = ?`
		args = append(args, destinationID)
	} else if appID != "" {
		// The same deliveries the app's log lists (Deliveries): its own
		// destinations', and its events at destinations for every app.
		q += ` AND (destination_id IN (SELECT id FROM webhook_destinations WHERE app_id = ?)
			OR (destination_id IN (SELECT id FROM webhook_destinations WHERE app_id IS NULL) AND app_id = ?))`
		args = append(args, appID, appID)
	}
	res, err := t.tx.ExecContext(ctx, t.db.rebind(q), args...)
	if err != nil {
		return 0, translate(err)
	}
	n, err := res.RowsAffected()
	return int(n), translate(err)
}

// AddEventID writes one outbox row and returns its id.
func (t webhookTx) AddEventID(ctx context.Context, e event.Event) (int64, error) {
	data, err := json.Marshal(e.Data)
	if err != nil {
		return 0, err
	}
	var id int64
	err = t.tx.QueryRowContext(ctx, t.db.rebind(`INSERT INTO events (app_id, type, data, created_at, subject) VALUES (?, ?, ?, ?, ?) RETURNING id`),
		nullable(e.AppID), e.Type, string(data), ms(e.CreatedAt), nullable(e.Subject)).Scan(&id)
	if err == nil {
		t.db.noteEvent(t.tx)
	}
	return id, translate(err)
}

// storableText drops NUL and invalid UTF-8, which PostgreSQL text refuses,
// from text a remote party chose (a receiver's answer, an error quoting it).
func storableText(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
}
