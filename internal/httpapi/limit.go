package httpapi

import (
	"math"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/ratelimit"
)

// Request limits. Every request draws a token from its client IP's bucket
// before any other work: a route registered limitedBy(heartbeatBucket) (the
// heartbeat) from a bucket of its own (sized for thousands of clients behind
// one address), requests with a valid admin token from the admin bucket,
// everything else from the general one. A
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

// bucket names the per-IP bucket a route draws from.
type bucket int

const (
	generalBucket   bucket = iota // the general one (or admin, for a signed admin)
	heartbeatBucket               // the heartbeat's own
)

// limitedBy makes the route draw from bucket b.
func limitedBy(b bucket) routeOption {
	return func(a *API, path string) { a.buckets[path] = b }
}

// limit answers 429 with Retry-After when the caller's IP bucket is empty.
// The bucket is the one the request's route was registered with. The
// client address found here is kept for the handlers (one parse per
// request).
func (a *API) limit(next http.Handler) http.Handler {
	buckets := a.buckets
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l := a.limits.ip
		switch {
		case buckets[r.URL.Path] == heartbeatBucket:
			l = a.limits.beat
		case strings.HasPrefix(r.URL.Path, "/api/admin/") && a.adminSigned(r):
			l = a.limits.admin
		}
		ip := a.clientIP(r)
		if f, ok := r.Context().Value(flightKey{}).(*flight); ok {
			f.ip = ip
		}
		if ok, wait := l.Allow(limitKey(ip)); !ok {
			a.writeError(w, r, rateLimited(wait))
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

// adminSigned reports whether r carries a current admin token (signature
// and expiry only; the admin API still verifies the admin exists).
func (a *API) adminSigned(r *http.Request) bool {
	tok := bearerToken(r)
	return tok != "" && a.admins.Signed(tok)
}

// beatBudget takes one heartbeat from the session's budget.
func (a *API) beatBudget(appID, sessionToken string) error {
	if ok, wait := a.limits.session.Allow(appID + "/" + sessionToken); !ok {
		return rateLimited(wait)
	}
	return nil
}

// rateLimited is the 429 refusal, RATE_LIMITED with retry_after in whole
// seconds (at least 1).
func rateLimited(wait time.Duration) error {
	e := apperr.New(apperr.RateLimited, license.CodeRateLimited, "Rate limit exceeded. Try again later.")
	e.RetryAfter = max(1, int(math.Ceil(wait.Seconds())))
	return e.With("detail", "Rate limit exceeded. Try again later.")
}
