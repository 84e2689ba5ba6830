package store

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/analytics"
)

// AnalyticsStore returns db as the analytics package's Store.
func (db *DB) AnalyticsStore() analytics.Store { return analyticsStore{db} }

type analyticsStore struct{ db *DB }

// usageBatch is how many rollups one upsert statement writes (five
// parameters each, far below both engines' limits).
const usageBatch = 500

// AddUsage upserts the rollups in multi-row statements inside one
// transaction. Equal cells are summed first (PostgreSQL refuses to touch a
// row twice in one statement) and written in key order, so concurrent
// flushes of several processes lock rows in the same order and cannot
// deadlock.
func (s analyticsStore) AddUsage(ctx context.Context, counts []analytics.Count) error {
	type key struct {
		app, metric, code string
		hour              int64
	}
	sum := make(map[key]int64, len(counts))
	for _, c := range counts {
		sum[key{c.AppID, c.Metric, c.Code, ms(c.Hour)}] += c.N
	}
	keys := make([]key, 0, len(sum))
	for k := range sum {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.app, b.app), cmp.Compare(a.metric, b.metric), cmp.Compare(a.code, b.code), cmp.Compare(a.hour, b.hour))
	})
	if len(keys) == 0 {
		return nil
	}
	return s.db.tx(ctx, func(tx *wtx) error {
		for len(keys) > 0 {
			part := keys[:min(len(keys), usageBatch)]
			keys = keys[len(part):]
			args := make([]any, 0, 5*len(part))
			for _, k := range part {
				args = append(args, k.app, k.metric, k.code, k.hour, sum[k])
			}
			// VALUES names its columns column1 … column5 on both engines;
			// the casts give PostgreSQL the parameters' types. A rollup of
			// an app deleted since it was counted is dropped, not an error
			// that would fail (and re-queue) the whole flush.
			q := `INSERT INTO app_usage (app_id, metric, code, hour, n)
				SELECT column1, column2, column3, column4, column5 FROM (VALUES ` +
				strings.TrimSuffix(strings.Repeat(`(?, ?, ?, CAST(? AS BIGINT), CAST(? AS BIGINT)), `, len(part)), ", ") + `) AS v
				WHERE EXISTS (SELECT 1 FROM apps WHERE apps.id = v.column1)
				ON CONFLICT (app_id, metric, code, hour) DO UPDATE SET n = app_usage.n + excluded.n`
			if _, err := tx.ExecContext(ctx, s.db.rebind(q), args...); err != nil {
				return translate(err)
			}
		}
		return nil
	})
}

// SampleSessions counts live sessions per app over the partial index
// sessions_app_live, in one statement. A second sample at the same
// millisecond replaces the first.
func (s analyticsStore) SampleSessions(ctx context.Context, at time.Time) error {
	_, err := s.db.exec(ctx, `INSERT INTO session_samples (app_id, at, live)
		SELECT app_id, CAST(? AS BIGINT), COUNT(*) FROM sessions WHERE ended_at IS NULL GROUP BY app_id
		ON CONFLICT (app_id, at) DO UPDATE SET live = excluded.live`, ms(at))
	return translate(err)
}

func (s analyticsStore) LiveSessions(ctx context.Context, appID string) (int64, error) {
	var n int64
	err := s.db.read.QueryRowContext(ctx, s.db.rebind(`SELECT COUNT(*) FROM sessions WHERE app_id = ? AND ended_at IS NULL`),
		appID).Scan(&n)
	return n, translate(err)
}

func (s analyticsStore) SessionSeries(ctx context.Context, appID string, from, to time.Time, step time.Duration) ([]analytics.Point, error) {
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(`SELECT (at - ?) / ? AS b, MAX(live) FROM session_samples
		WHERE app_id = ? AND at >= ? AND at < ? GROUP BY b ORDER BY b`), ms(from), step.Milliseconds(), appID, ms(from), ms(to))
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []analytics.Point{}
	for rows.Next() {
		var b, n int64
		if err := rows.Scan(&b, &n); err != nil {
			return nil, translate(err)
		}
		out = append(out, analytics.Point{At: from.Add(time.Duration(b) * step).UTC(), N: n})
	}
	return out, translate(rows.Err())
}

// metricList returns "(?, ?, …)" for metrics and them as arguments.
func metricList(metrics []string) (string, []any) {
	args := make([]any, len(metrics))
	for i, m := range metrics {
		args[i] = m
	}
	return "(?" + strings.Repeat(", ?", len(metrics)-1) + ")", args
}

// UsageSeries walks the primary key (app_id, metric, code, hour) once per
// metric and code.
func (s analyticsStore) UsageSeries(ctx context.Context, appID string, metrics []string, from, to time.Time,
	step time.Duration) (map[string][]analytics.Point, error) {
	out := map[string][]analytics.Point{}
	if len(metrics) == 0 {
		return out, nil
	}
	in, margs := metricList(metrics)
	args := append([]any{ms(from), step.Milliseconds(), appID}, margs...)
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(`SELECT metric, (hour - ?) / ? AS b, CAST(SUM(n) AS BIGINT) FROM app_usage
		WHERE app_id = ? AND metric IN `+in+` AND hour >= ? AND hour < ? GROUP BY metric, b ORDER BY metric, b`),
		append(args, ms(from), ms(to))...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		var m string
		var b, n int64
		if err := rows.Scan(&m, &b, &n); err != nil {
			return nil, translate(err)
		}
		out[m] = append(out[m], analytics.Point{At: from.Add(time.Duration(b) * step).UTC(), N: n})
	}
	return out, translate(rows.Err())
}

func (s analyticsStore) UsageByCode(ctx context.Context, appID string, metrics []string, from, to time.Time) (map[string]map[string]int64, error) {
	out := map[string]map[string]int64{}
	if len(metrics) == 0 {
		return out, nil
	}
	in, margs := metricList(metrics)
	args := append([]any{appID}, margs...)
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(`SELECT metric, code, CAST(SUM(n) AS BIGINT) FROM app_usage
		WHERE app_id = ? AND metric IN `+in+` AND hour >= ? AND hour < ? GROUP BY metric, code`), append(args, ms(from), ms(to))...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		var m, code string
		var n int64
		if err := rows.Scan(&m, &code, &n); err != nil {
			return nil, translate(err)
		}
		if out[m] == nil {
			out[m] = map[string]int64{}
		}
		out[m][code] = n
	}
	return out, translate(rows.Err())
}

// KeysByStatus reads only the index license_keys_app_status (app_id,
// status, id): one pass over the app's entries, already grouped by status.
func (s analyticsStore) KeysByStatus(ctx context.Context, appID string) (map[string]int64, error) {
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(`SELECT status, COUNT(*) FROM license_keys WHERE app_id = ? GROUP BY status`), appID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return nil, translate(err)
		}
		out[st] = n
	}
	return out, translate(rows.Err())
}

// Versions reads only the index update_checks_versions (app_id,
// checked_at, current).
func (s analyticsStore) Versions(ctx context.Context, appID string, from, to time.Time) ([]analytics.VersionDevices, error) {
	rows, err := s.db.read.QueryContext(ctx, s.db.rebind(`SELECT current, COUNT(*) AS devices FROM update_checks
		WHERE app_id = ? AND checked_at >= ? AND checked_at < ? GROUP BY current ORDER BY devices DESC, current`),
		appID, ms(from), ms(to))
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []analytics.VersionDevices{}
	for rows.Next() {
		var v analytics.VersionDevices
		if err := rows.Scan(&v.Version, &v.Devices); err != nil {
			return nil, translate(err)
		}
		out = append(out, v)
	}
	return out, translate(rows.Err())
}
