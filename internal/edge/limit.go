package edge

import (
	"math"
	"net/http"
	"net/netip"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/ratelimit"
)

// Request limits. Every request draws a token from its client IP's bucket
// before any other work: a route registered with LimitHeartbeat (the
// heartbeat) from a bucket of its own (sized for thousands of clients behind
// one address), requests with a valid admin token to a LimitAdmin route
// from the admin bucket, everything else from the general one. A
// heartbeat then also draws from its session's budget, which a client at
// its interval never empties but a flood on one session does. Buckets live
// in this process's memory: behind a load balancer each process limits
// what it sees.

// sessionBeats is each session's heartbeat budget: ten at once, then one a
// second. The shortest heartbeat interval an app can set is 5 s.
var sessionBeats = ratelimit.Rate{PerSecond: 1, Burst: 10}

type limiters struct {
	ip, admin, beat, session *ratelimit.Limiter
}

func newLimiters(cfg Config, now func() time.Time) limiters {
	l := limiters{
		ip:    ratelimit.New(cfg.Rate, now, 0),
		admin: ratelimit.New(cfg.AdminRate, now, 0),
		beat:  ratelimit.New(cfg.HeartbeatRate, now, 0),
	}
	if cfg.HeartbeatRate.PerSecond > 0 {
		l.session = ratelimit.New(sessionBeats, now, 200_000)
	}
	return l
}

// Limit names the per-IP bucket a route draws from.
type Limit int

// The buckets.
const (
	LimitGeneral   Limit = iota // the general one
	LimitHeartbeat              // the heartbeat's own
	LimitAdmin                  // the admin one for a request with a signed admin token, else the general one
)

// limit answers 429 with Retry-After when the caller's IP bucket is empty.
// The bucket is the one the request's route was registered with (limits,
// by path). The client address found here is kept for the handlers (one
// parse per request).
func (e *Edge) limit(limits map[string]Limit, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l := e.limits.ip
		switch limits[r.URL.Path] {
		case LimitHeartbeat:
			l = e.limits.beat
		case LimitAdmin:
			if e.adminSigned(r) {
				l = e.limits.admin
			}
		}
		ip := e.ClientIP(r)
		if f, ok := r.Context().Value(flightKey{}).(*flight); ok {
			f.ip = ip
		}
		if ok, wait := l.Allow(limitKey(ip)); !ok {
			e.Error(w, r, RateLimited(wait))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// limitKey is the bucket of a client address: the address itself for IPv4,
// its /64 network for IPv6, since one host commonly holds a whole /64.
func limitKey(ip string) string {
	addr, err := netip.ParseAddr(ip)
	if err != nil || !addr.Is6() || addr.Is4In6() {
		return ip
	}
	p, err := addr.Prefix(64)
	if err != nil {
		return ip
	}
	return p.String()
}

// BeatBudget takes one heartbeat from the session's budget (none without a
// heartbeat rate).
func (e *Edge) BeatBudget(appID string, sessionToken []byte) error {
	if !e.limits.session.Enabled() {
		return nil
	}
	if ok, wait := e.limits.session.Allow(appID + "/" + string(sessionToken)); !ok {
		return RateLimited(wait)
	}
	return nil
}

// RateLimited is the 429 refusal, RATE_LIMITED with retry_after in whole
// seconds (at least 1).
func RateLimited(wait time.Duration) error {
	e := apperr.New(apperr.RateLimited, license.CodeRateLimited, "Rate limit exceeded. Try again later.")
	e.RetryAfter = max(1, int(math.Ceil(wait.Seconds())))
	return e.With("detail", "Rate limit exceeded. Try again later.")
}
