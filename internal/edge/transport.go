package edge

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/envelope"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/wire"
)

// Call is one verified client request.
type Call struct {
	App *license.App
	F   Fields
	R   *http.Request
	IP  string
}

// ClientHandler answers a client request with a reply (a wire type) or an
// error.
type ClientHandler func(ctx context.Context, c *Call) (any, error)

// ReplayScope is where a verified envelope's MAC is remembered.
type ReplayScope int

// The replay scopes.
const (
	ReplayLocal  ReplayScope = iota // remembered by this process
	ReplayShared                    // also claimed in the database, across processes
)

var (
	errNoSecret  = apperr.New(apperr.Unauthenticated, wire.CodeInvalidApp, "Missing X-App-Secret header.")
	errBadSecret = apperr.New(apperr.Unauthenticated, wire.CodeInvalidApp, "Invalid app secret.")
	errBusy      = &apperr.Error{Kind: apperr.RateLimited, Code: wire.CodeRateLimited, Message: "The same request is still being processed; try again.", RetryAfter: 1}
)

// App resolves the X-App-Secret header, answering 401 itself when it fails,
// and APP_REVOKED while the owner has revoked the app.
func (e *Edge) App(w http.ResponseWriter, r *http.Request) (*license.App, bool) {
	app, _, ok := e.clientApp(w, r, false)
	return app, ok
}

// clientApp resolves the X-App-Secret header to the app and its envelope
// Box (both cached and shared: read only), answering 401 itself when it
// fails. A revoked app is refused with APP_REVOKED unless servesRevoked:
// the route registration says so for the heartbeat, whose requests go on to
// end their sessions with SESSION_REVOKED, a code every client generation
// stops on.
func (e *Edge) clientApp(w http.ResponseWriter, r *http.Request, servesRevoked bool) (*license.App, *envelope.Box, bool) {
	secret := strings.TrimSpace(r.Header.Get("X-App-Secret"))
	if secret == "" {
		e.Error(w, r, errNoSecret)
		return nil, nil, false
	}
	app, box, err := e.apps.ClientApp(r.Context(), secret)
	if errors.Is(err, apperr.ErrNotFound) {
		e.Error(w, r, errBadSecret)
		return nil, nil, false
	} else if err != nil {
		e.Error(w, r, err)
		return nil, nil, false
	}
	if app.RevokedAt != nil && !servesRevoked {
		e.Error(w, r, license.ErrAppRevoked)
		return nil, nil, false
	}
	return app, box, true
}

// RawHandler answers a verified envelope's plaintext with the inner reply's
// JSON, or an error: for a hot route that decodes only what it reads and
// answers with pre-encoded bytes (the heartbeat).
type RawHandler func(ctx context.Context, c *Call, plain []byte) ([]byte, error)

// envelopeRoute serves an envelope route as o states it.
func (e *Edge) envelopeRoute(o Route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		app, box, ok := e.clientApp(w, r, o.ServesRevoked)
		if !ok {
			return
		}
		buf := GetBodyBuffer()
		defer PutBodyBuffer(buf)
		body, err := buf.Read(w, r, ClientBodyLimit)
		if err != nil {
			e.Error(w, r, err)
			return
		}
		e.serveEnvelope(w, r, app, box, body, o)
	})
}

// mirrored serves a route that answers envelopes with envelopes and plain JSON
// with plain JSON (check-key).
func (e *Edge) mirrored(h ClientHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		app, box, ok := e.clientApp(w, r, false)
		if !ok {
			return
		}
		body, err := ReadBody(w, r, ClientBodyLimit)
		if err != nil {
			e.Error(w, r, err)
			return
		}
		if envelope.IsEnvelope(body) {
			e.serveEnvelope(w, r, app, box, body, Route{Client: h, Replay: ReplayLocal})
			return
		}
		e.servePlain(w, r, app, body, h)
	})
}

// plain serves a route with plain JSON both ways.
func (e *Edge) plain(h ClientHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		app, ok := e.App(w, r)
		if !ok {
			return
		}
		body, err := ReadBody(w, r, ClientBodyLimit)
		if err != nil {
			e.Error(w, r, err)
			return
		}
		e.servePlain(w, r, app, body, h)
	})
}

func (e *Edge) servePlain(w http.ResponseWriter, r *http.Request, app *license.App, body []byte, h ClientHandler) {
	f, err := ParseFields(body)
	if err != nil {
		e.Error(w, r, err)
		return
	}
	ip := e.ClientIP(r)
	res, err := h(r.Context(), &Call{App: app, F: f, R: r, IP: ip})
	e.observeRefusal(r.Context(), app, ip, err)
	if err != nil {
		e.Error(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, res)
}

// observeRefusal feeds key guessing (INVALID_KEY from one address) to abuse
// detection.
func (e *Edge) observeRefusal(ctx context.Context, app *license.App, ip string, err error) {
	if err != nil && apperr.CodeOf(err) == license.CodeInvalidKey {
		e.refusals.InvalidKey(ctx, app, ip)
	}
}

// cryptoError is a plain pre-verification refusal. Only the clock refusal
// mentions "expired" and carries reason/server_time (sdk-compat §4, §7.13).
func (e *Edge) cryptoError(w http.ResponseWriter, r *http.Request, err error) {
	var ce *apperr.Error
	switch {
	case errors.Is(err, envelope.ErrClockSkew):
		ce = apperr.New(apperr.Invalid, wire.CodeCryptoError, "Request expired: this computer's clock differs from the server's by more than 5 minutes.").
			With("reason", wire.ReasonClockSkew).With("server_time", e.now().Unix())
	case errors.Is(err, envelope.ErrBadMAC):
		ce = apperr.New(apperr.Invalid, wire.CodeCryptoError, "HMAC verification failed.")
	case errors.Is(err, envelope.ErrDecrypt):
		ce = apperr.New(apperr.Invalid, wire.CodeCryptoError, "The request could not be decrypted.")
	default:
		ce = apperr.New(apperr.Invalid, wire.CodeCryptoError, "Malformed request envelope.")
	}
	e.Error(w, r, ce)
}

// serveEnvelope verifies an envelope, answers a replay with the first reply,
// runs the route's handler otherwise, and seals whatever it answers (success
// or business failure) into an HTTP 200 envelope. Only refusals before
// verification and internal failures travel as plain JSON.
func (e *Edge) serveEnvelope(w http.ResponseWriter, r *http.Request, app *license.App, box *envelope.Box, body []byte, o Route) {
	now := e.now()
	plain, mac, t, err := box.Open(body, now)
	if err != nil {
		e.refusals.BadEnvelope(r.Context(), app, e.ClientIP(r))
		e.cryptoError(w, r, err)
		return
	}
	ctx := r.Context()
	expires := time.Unix(t, 0).Add(envelope.Window)
	key := replayKey(mac)
	if !e.cache.claim(key, expires, now) {
		reply, ok := e.cache.wait(ctx, key, expires)
		if ok && reply == nil {
			// Answered by a shared-scope route: the reply is kept, sealed,
			// in the shared store only.
			var err error
			if reply, err = e.replays.ReplayReply(ctx, app.ID, hex.EncodeToString(mac[:])); err != nil {
				e.Error(w, r, err)
				return
			}
			ok = reply != nil
		}
		if ok {
			e.writeBoxed(w, r, box, reply)
		} else {
			e.Error(w, r, errBusy)
		}
		return
	}
	reply, err := e.runOnce(ctx, r, app, plain, mac[:], expires, o)
	e.cache.finish(key, expires, reply, o.Replay == ReplayShared)
	if err != nil {
		e.Error(w, r, err)
		return
	}
	e.writeBoxed(w, r, box, reply)
}

// runOnce produces the inner reply of a verified envelope, claiming it in the
// shared store first for ReplayShared routes. An error return means no reply
// was produced (internal failure or a duplicate still in flight elsewhere).
func (e *Edge) runOnce(ctx context.Context, r *http.Request, app *license.App, plain, macBytes []byte, expires time.Time,
	o Route) ([]byte, error) {
	scope, h := o.Replay, o.Client
	var mac string
	if scope == ReplayShared {
		mac = hex.EncodeToString(macBytes)
		claimed, prior, err := e.replays.ClaimReplay(ctx, app.ID, mac, expires)
		if err != nil {
			return nil, err
		}
		if !claimed {
			return e.awaitShared(ctx, app.ID, mac, prior)
		}
	}
	var reply []byte
	var err error
	if o.Raw != nil {
		ip := e.ClientIP(r)
		reply, err = o.Raw(ctx, newCall(r, Call{App: app, R: r, IP: ip}), plain)
		e.observeRefusal(ctx, app, ip, err)
	} else {
		var f Fields
		f, err = ParseFields(plain)
		if err == nil {
			var res any
			ip := e.ClientIP(r)
			res, err = h(ctx, newCall(r, Call{App: app, F: f, R: r, IP: ip}))
			if err == nil {
				reply = Marshal(res)
			}
			e.observeRefusal(ctx, app, ip, err)
		}
	}
	if err != nil {
		if IsInternal(err) {
			if scope == ReplayShared {
				e.replays.ReleaseReplay(context.WithoutCancel(ctx), app.ID, mac)
			}
			return nil, err
		}
		reply = ErrorReply(ctx, apperr.From(err))
	}
	if scope == ReplayShared {
		if err := e.replays.CompleteReplay(context.WithoutCancel(ctx), app.ID, mac, reply); err != nil {
			return nil, err
		}
	}
	return reply, nil
}

// newCall returns c on the heap: in the request's in-flight record, which
// already is, the first time, else a new one. Handlers are called through a
// func value, so a &Call{} literal would escape on every request.
func newCall(r *http.Request, c Call) *Call {
	if f, ok := r.Context().Value(flightKey{}).(*flight); ok && !f.callUsed {
		f.callUsed, f.call = true, c
		return &f.call
	}
	p := new(Call) // not &c: that would move c to the heap on every call
	*p = c
	return p
}

// awaitShared waits briefly for another process to finish the same envelope.
func (e *Edge) awaitShared(ctx context.Context, appID, mac string, prior []byte) ([]byte, error) {
	for i := 0; prior == nil && i < 50; i++ {
		select {
		case <-ctx.Done():
			return nil, errBusy
		case <-time.After(100 * time.Millisecond):
		}
		var err error
		if prior, err = e.replays.ReplayReply(ctx, appID, mac); err != nil {
			return nil, err
		}
	}
	if prior == nil {
		return nil, errBusy
	}
	return prior, nil
}

// writeBoxed envelopes an inner reply with the server's clock under the
// app's cached Box and sends it with HTTP 200.
func (e *Edge) writeBoxed(w http.ResponseWriter, r *http.Request, box *envelope.Box, inner []byte) {
	out, err := box.Seal(inner, e.now())
	if err != nil {
		e.Error(w, r, err)
		return
	}
	WriteRaw(w, http.StatusOK, out)
}

// writeSealed envelopes an inner reply with the server's clock and sends it
// with HTTP 200.
func (e *Edge) writeSealed(w http.ResponseWriter, r *http.Request, keys envelope.Keys, inner []byte) {
	env, err := keys.Seal(inner, e.now())
	if err != nil {
		e.Error(w, r, err)
		return
	}
	WriteRaw(w, http.StatusOK, env.Marshal())
}

// sealedGet serves a GET route with no request body whose reply is an
// envelope (info.php, text.php): once the app secret is verified, every
// answer, a refusal too, is sealed with HTTP 200.
func (e *Edge) sealedGet(h ClientHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		app, ok := e.App(w, r)
		if !ok {
			return
		}
		res, err := h(r.Context(), &Call{App: app, F: Fields{}, R: r, IP: e.ClientIP(r)})
		var inner []byte
		switch {
		case err == nil:
			inner = Marshal(res)
		case IsInternal(err):
			e.Error(w, r, err)
			return
		default:
			inner = ErrorReply(r.Context(), apperr.From(err))
		}
		e.writeSealed(w, r, envelope.Derive(app.Secret), inner)
	})
}
