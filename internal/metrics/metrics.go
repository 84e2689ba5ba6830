// Package metrics holds keyward's Prometheus metrics: one registry per
// server (no global state), the collectors the HTTP layer, the services and
// the background jobs update, and the handler that serves them in the
// Prometheus text format.
package metrics

import (
	"database/sql"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is the registry of one keyward server and its collectors. A nil
// *Metrics records nothing, so callers need not check.
type Metrics struct {
	reg *prometheus.Registry

	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	logins    *prometheus.CounterVec
	kills     *prometheus.CounterVec
	jobRuns   *prometheus.HistogramVec
	jobFails  *prometheus.CounterVec
	blobFails *prometheus.CounterVec
	webhooks  *prometheus.CounterVec
	upstream  *prometheus.CounterVec
	seats     prometheus.Counter
	files     *prometheus.CounterVec

	// series holds the request counter and latency observer Request
	// resolved for each requestKey, so a repeated request (every
	// heartbeat) skips the vectors' label hashing and locked lookups.
	// Its keys are bounded as the series are: route patterns, known
	// methods, status codes, wire error codes. Nothing deletes a series.
	series sync.Map // requestKey → *requestSeries
}

// requestKey names the series of one kind of answered request.
type requestKey struct {
	route, method, code string
	status              int
}

// requestSeries is the counter and observer of one requestKey.
type requestSeries struct {
	count prometheus.Counter
	took  prometheus.Observer
}

// New returns the metrics of one server, with the Go runtime and process
// collectors (go_*, process_*) besides keyward's own (keyward_*).
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "keyward_http_requests_total",
			Help: "HTTP requests by route pattern, method, status and error_code (empty on success)."},
			[]string{"route", "method", "status", "error_code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "keyward_http_request_duration_seconds",
			Help: "Time to answer HTTP requests, by route pattern.", Buckets: prometheus.DefBuckets}, []string{"route"}),
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "keyward_logins_total",
			Help: "License key logins by outcome: ok, or the refusal's error code."}, []string{"outcome"}),
		kills: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "keyward_killswitch_total",
			Help: "Heartbeats answered with a kill code (the session ended), by code."}, []string{"code"}),
		jobRuns: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "keyward_job_duration_seconds",
			Help: "Time of background job runs, by job.", Buckets: prometheus.DefBuckets}, []string{"job"}),
		jobFails: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "keyward_job_failures_total",
			Help: "Background job runs that failed, by job."}, []string{"job"}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "keyward_webhook_attempts_total",
			Help: "Webhook delivery attempts by outcome: succeeded, retry (to be sent again) or failed (no retry left)."}, []string{"outcome"}),
		blobFails: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "keyward_blob_errors_total",
			Help: "Failed blob store operations, by operation."}, []string{"op"}),
		upstream: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "keyward_upstream_lookups_total",
			Help: "Lookups of unknown keys at an app's upstream (lazy migration), by outcome: imported, not_found, error or invalid."},
			[]string{"outcome"}),
		seats: prometheus.NewCounter(prometheus.CounterOpts{Name: "keyward_seat_denials_total",
			Help: "Logins to floating keys refused because every seat was held (DEVICE_LIMIT)."}),
		files: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "keyward_license_files_issued_total",
			Help: "License files issued, by source: online (auth/license-file.php), offline (air-gapped, customer portal) or admin."},
			[]string{"source"}),
	}
	reg.MustRegister(m.requests, m.latency, m.logins, m.kills, m.jobRuns, m.jobFails, m.blobFails, m.webhooks, m.upstream, m.seats, m.files)
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Register adds a collector (for example a gauge read at scrape time).
func (m *Metrics) Register(c prometheus.Collector) {
	if m != nil {
		m.reg.MustRegister(c)
	}
}

// Request counts one answered HTTP request and its duration.
func (m *Metrics) Request(route, method string, status int, code string, d time.Duration) {
	if m == nil {
		return
	}
	k := requestKey{route: route, method: method, code: code, status: status}
	v, ok := m.series.Load(k)
	if !ok {
		v, _ = m.series.LoadOrStore(k, &requestSeries{
			count: m.requests.WithLabelValues(route, method, statusLabel(status), code),
			took:  m.latency.WithLabelValues(route),
		})
	}
	s := v.(*requestSeries)
	s.count.Inc()
	s.took.Observe(d.Seconds())
}

// statusLabels are the decimal forms of the HTTP status codes, made once:
// strconv.Itoa makes a new string for every number above 99, one
// allocation per request (issue 21: a heartbeat's allocations).
var statusLabels = func() (t [600]string) {
	for i := range t {
		t[i] = strconv.Itoa(i)
	}
	return t
}()

func statusLabel(status int) string {
	if status >= 0 && status < len(statusLabels) {
		return statusLabels[status]
	}
	return strconv.Itoa(status)
}

// Login counts a license key login: outcome is "ok" or the error code.
func (m *Metrics) Login(outcome string) {
	if m != nil {
		m.logins.WithLabelValues(outcome).Inc()
	}
}

// Kill counts a heartbeat answered with a kill code.
func (m *Metrics) Kill(code string) {
	if m != nil {
		m.kills.WithLabelValues(code).Inc()
	}
}

// Job records one run of a background job.
func (m *Metrics) Job(name string, d time.Duration, err error) {
	if m == nil {
		return
	}
	m.jobRuns.WithLabelValues(name).Observe(d.Seconds())
	if err != nil {
		m.jobFails.WithLabelValues(name).Inc()
	}
}

// UpstreamLookup counts a lookup of an unknown key at an app's upstream by
// outcome (license.UpstreamImported, …).
func (m *Metrics) UpstreamLookup(outcome string) {
	if m != nil {
		m.upstream.WithLabelValues(outcome).Inc()
	}
}

// SeatDenied counts a login refused because all seats of a floating key
// were held.
func (m *Metrics) SeatDenied() {
	if m != nil {
		m.seats.Inc()
	}
}

// LicenseFileIssued counts a license file issued from source (online,
// offline or admin).
func (m *Metrics) LicenseFileIssued(source string) {
	if m != nil {
		m.files.WithLabelValues(source).Inc()
	}
}

// WebhookAttempt counts a recorded webhook delivery attempt.
func (m *Metrics) WebhookAttempt(outcome string) {
	if m != nil {
		m.webhooks.WithLabelValues(outcome).Inc()
	}
}

// BlobError counts a failed blob store operation.
func (m *Metrics) BlobError(op string) {
	if m != nil {
		m.blobFails.WithLabelValues(op).Inc()
	}
}

// DBPools adds the connection pool statistics (sql.DB.Stats) of the named
// pools as keyward_go_sql_* with a db_name label.
func (m *Metrics) DBPools(pools map[string]*sql.DB) {
	if m == nil {
		return
	}
	wrapped := prometheus.WrapRegistererWithPrefix("keyward_", m.reg)
	for name, db := range pools {
		wrapped.MustRegister(collectors.NewDBStatsCollector(db, name))
	}
}
