// Package edge is what every HTTP surface of keyward shares: the Edge
// (logger, clock, limiters, replay cache, reply signer, metrics, in-flight
// table), the middleware, the client transports (envelope, plain, mirrored,
// sealed GET), the tolerant field parser, JSON writing, the one error writer
// (the only mapping from apperr kinds to HTTP statuses) and the route table
// type the surfaces register on one http.ServeMux. It imports no domain
// service: the app lookup and the refusal observer are interfaces the
// assembly (httpapi) satisfies.
package edge

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/keyward/keyward/internal/envelope"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/metrics"
	"github.com/keyward/keyward/internal/ratelimit"
	"github.com/keyward/keyward/internal/reqid"
	"github.com/keyward/keyward/internal/signing"
)

// ReplayStore is the shared record of answered envelopes, so that a replay
// reaching another keyward process still gets the first reply.
type ReplayStore interface {
	ClaimReplay(ctx context.Context, appID, mac string, expires time.Time) (bool, []byte, error)
	CompleteReplay(ctx context.Context, appID, mac string, reply []byte) error
	ReleaseReplay(ctx context.Context, appID, mac string) error
	ReplayReply(ctx context.Context, appID, mac string) ([]byte, error)
}

// Apps resolves a client's X-App-Secret to its app and the app's envelope
// Box (cached and shared: read only); apperr.ErrNotFound when no app has it.
type Apps interface {
	ClientApp(ctx context.Context, secret string) (*license.App, *envelope.Box, error)
}

// Refusals is told of client refusals worth watching (abuse detection):
// INVALID_KEY answers and envelopes that fail verification, with the
// caller's address. It never fails a request.
type Refusals interface {
	InvalidKey(ctx context.Context, app *license.App, ip string)
	BadEnvelope(ctx context.Context, app *license.App, ip string)
}

// Config holds the edge's options.
type Config struct {
	// TrustProxy takes the client address from X-Forwarded-For and the
	// scheme from X-Forwarded-Proto.
	TrustProxy bool
	// ReplayMemory caps the in-memory replay cache (entries); default 2 000 000.
	ReplayMemory int
	// Per-IP request limits (see limit.go); a zero rate is no limit.
	Rate, AdminRate, HeartbeatRate ratelimit.Rate
}

// Options are what New builds an Edge from.
type Options struct {
	Log     *slog.Logger
	Now     func() time.Time
	Config  Config
	Metrics *metrics.Metrics // nil: nothing recorded
	Replays ReplayStore
	Apps    Apps
	// Refusals may be nil (nothing observed).
	Refusals Refusals
	// AdminSigned reports whether a request carries a current admin token
	// (signature and expiry only): such requests to LimitAdmin routes draw
	// from the admin bucket. Nil: never.
	AdminSigned func(r *http.Request) bool
}

// Edge is the shared state and behaviour of every surface.
type Edge struct {
	// flights are the requests being served (inflight.go).
	flights     flights
	log         *slog.Logger
	now         func() time.Time
	cfg         Config
	metrics     *metrics.Metrics
	replays     ReplayStore
	cache       *replayCache
	limits      limiters
	apps        Apps
	refusals    Refusals
	adminSigned func(r *http.Request) bool
	// signer holds the reply-signing keys (nil: replies are not signed).
	signer atomic.Pointer[signing.Set]
	// licenseKeys holds the license-file keys (nil: none).
	licenseKeys atomic.Pointer[signing.LicenseKeys]
}

// New returns an Edge.
func New(o Options) *Edge {
	if o.Config.ReplayMemory <= 0 {
		o.Config.ReplayMemory = 2_000_000
	}
	if o.Refusals == nil {
		o.Refusals = noRefusals{}
	}
	if o.AdminSigned == nil {
		o.AdminSigned = func(*http.Request) bool { return false }
	}
	return &Edge{log: o.Log, now: o.Now, cfg: o.Config, metrics: o.Metrics, replays: o.Replays, apps: o.Apps, refusals: o.Refusals,
		adminSigned: o.AdminSigned, cache: newReplayCache(o.Config.ReplayMemory), limits: newLimiters(o.Config, o.Now)}
}

type noRefusals struct{}

func (noRefusals) InvalidKey(context.Context, *license.App, string)  {}
func (noRefusals) BadEnvelope(context.Context, *license.App, string) {}

// SetSigning sets the keys replies are signed with (nil turns signing off).
func (e *Edge) SetSigning(set *signing.Set) { e.signer.Store(set) }

// Signing returns the keys replies are signed with (nil: none).
func (e *Edge) Signing() *signing.Set { return e.signer.Load() }

// SetLicenseKeys sets the Ed25519 keys license files are signed with (nil:
// none; offline license files cannot be issued).
func (e *Edge) SetLicenseKeys(set *signing.LicenseKeys) { e.licenseKeys.Store(set) }

// LicenseKeys returns the license-file keys: Active signs, every key is
// published (nil: none).
func (e *Edge) LicenseKeys() *signing.LicenseKeys { return e.licenseKeys.Load() }

// requestID gives every request an id, on its context (so every log line
// written with it carries request_id) and in the X-Request-Id reply header:
// the caller's own X-Request-Id when it is well-formed (reqid.Valid), else a
// fresh one.
func (e *Edge) requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !reqid.Valid(id) {
			id = reqid.New()
		}
		// The request is registered as in flight (for shutdown), and its
		// record is the new context carrying the id: one allocation, and
		// the hot path clones the request once. The reply header's value
		// is the record's own one-element slice (cap 1: a Header.Add
		// copies it).
		f, sh := e.track(r.Context(), r.Method, id)
		defer sh.remove(f)
		w.Header()["X-Request-Id"] = f.id[:]
		next.ServeHTTP(w, r.WithContext(f))
	})
}

// Recoverer turns a panic into a generic JSON 500 and logs it.
func (e *Edge) Recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				e.Error(w, r, fmt.Errorf("panic: %v", p))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// securityHeaders sets the headers every reply carries, and HSTS on replies
// to HTTPS requests so browsers (the dashboard) keep to HTTPS.
func (e *Edge) securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["X-Content-Type-Options"] = headerNosniff
		h["X-Frame-Options"] = headerDeny
		h["Referrer-Policy"] = headerNoRef
		if e.IsHTTPS(r) {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		next.ServeHTTP(w, r)
	})
}

// IsHTTPS reports whether the caller reached keyward over HTTPS: directly, or
// with TrustProxy through a proxy whose X-Forwarded-Proto (its last entry, the
// one the trusted proxy set) says https. keyward does not redirect on a
// forwarded "http": behind a plain-HTTP proxy that would lock the owner out,
// and a TLS-terminating proxy redirects on its own.
func (e *Edge) IsHTTPS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	if !e.cfg.TrustProxy {
		return false
	}
	protos := strings.Split(r.Header.Get("X-Forwarded-Proto"), ",")
	return strings.EqualFold(strings.TrimSpace(protos[len(protos)-1]), "https")
}

// ClientIP is the caller's address: the connection's peer, or with TrustProxy
// the last X-Forwarded-For entry (the one the trusted proxy appended).
func (e *Edge) ClientIP(r *http.Request) string {
	if f, ok := r.Context().Value(flightKey{}).(*flight); ok && f.ip != "" {
		return f.ip // found once by the limiter
	}
	if e.cfg.TrustProxy {
		if xff := r.Header.Get("X-Forwarded-For"); xff != "" {
			parts := strings.Split(xff, ",")
			if ip := strings.TrimSpace(parts[len(parts)-1]); net.ParseIP(ip) != nil {
				return ip
			}
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// BearerToken is the credential of an Authorization: Bearer header (the
// scheme name in any case), or "".
func BearerToken(r *http.Request) string {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}
