package httpapi

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/abuse"
	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/envelope"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/wire"
)

// call is one verified client request.
type call struct {
	app *license.App
	f   fields
	r   *http.Request
	ip  string
}

// clientHandler answers a client request with a reply (a wire type) or an
// error.
type clientHandler func(ctx context.Context, c *call) (any, error)

type replayScope int

const (
	replayLocal  replayScope = iota // remembered by this process
	replayShared                    // also claimed in the database, across processes
)

var (
	errNoSecret  = apperr.New(apperr.Unauthenticated, wire.CodeInvalidApp, "Missing X-App-Secret header.")
	errBadSecret = apperr.New(apperr.Unauthenticated, wire.CodeInvalidApp, "Invalid app secret.")
	errBusy      = &apperr.Error{Kind: apperr.RateLimited, Code: wire.CodeRateLimited, Message: "The same request is still being processed; try again.", RetryAfter: 1}
)

// app resolves the X-App-Secret header, answering 401 itself when it fails,
// and APP_REVOKED while the owner has revoked the app.
func (a *API) app(w http.ResponseWriter, r *http.Request) (*license.App, bool) {
	app, _, ok := a.clientApp(w, r, false)
	return app, ok
}

// clientApp resolves the X-App-Secret header to the app and its envelope
// Box (both cached and shared: read only), answering 401 itself when it
// fails. A revoked app is refused with APP_REVOKED unless servesRevoked:
// the route registration says so for the heartbeat, whose requests go on to
// end their sessions with SESSION_REVOKED, a code every client generation
// stops on.
func (a *API) clientApp(w http.ResponseWriter, r *http.Request, servesRevoked bool) (*license.App, *envelope.Box, bool) {
	secret := strings.TrimSpace(r.Header.Get("X-App-Secret"))
	if secret == "" {
		a.writeError(w, r, errNoSecret)
		return nil, nil, false
	}
	app, box, err := a.lic.ClientApp(r.Context(), secret)
	if errors.Is(err, apperr.ErrNotFound) {
		a.writeError(w, r, errBadSecret)
		return nil, nil, false
	} else if err != nil {
		a.writeError(w, r, err)
		return nil, nil, false
	}
	if app.RevokedAt != nil && !servesRevoked {
		a.writeError(w, r, license.ErrAppRevoked)
		return nil, nil, false
	}
	return app, box, true
}

// liveApp resolves an app named by id on a public route (price list,
// orders, changelog): NOT_FOUND, or APP_REVOKED while its owner has revoked it.
func (a *API) liveApp(ctx context.Context, id string) (*license.App, error) {
	app, err := a.lic.App(ctx, id)
	if err == nil && app.RevokedAt != nil {
		return nil, license.ErrAppRevoked
	}
	return app, err
}

// envelope serves a route whose request and reply are envelopes.
func (a *API) envelope(h clientHandler, scope replayScope) http.Handler {
	return a.envelopeRoute(envelopeOptions{handler: h, scope: scope})
}

// rawHandler answers a verified envelope's plaintext with the inner reply's
// JSON, or an error: for a hot route that decodes only what it reads and
// answers with pre-encoded bytes (the heartbeat).
type rawHandler func(ctx context.Context, c *call, plain []byte) ([]byte, error)

// envelopeOptions are the facts an envelope route's registration states.
type envelopeOptions struct {
	handler clientHandler // decoded fields in, reply object out; or
	raw     rawHandler    // plaintext in, reply JSON out
	scope   replayScope
	// servesRevoked: a revoked app's requests are still served (the
	// heartbeat, which then ends sessions with SESSION_REVOKED).
	servesRevoked bool
}

// envelopeRoute serves an envelope route as o states it.
func (a *API) envelopeRoute(o envelopeOptions) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		app, box, ok := a.clientApp(w, r, o.servesRevoked)
		if !ok {
			return
		}
		buf := bodyBuffers.Get().(*bodyBuffer)
		defer bodyBuffers.Put(buf)
		body, err := buf.read(w, r, clientBodyLimit)
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		a.serveEnvelope(w, r, app, box, body, o)
	})
}

// mirrored serves a route that answers envelopes with envelopes and plain JSON
// with plain JSON (check-key).
func (a *API) mirrored(h clientHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		app, box, ok := a.clientApp(w, r, false)
		if !ok {
			return
		}
		body, err := readBody(w, r, clientBodyLimit)
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		if envelope.IsEnvelope(body) {
			a.serveEnvelope(w, r, app, box, body, envelopeOptions{handler: h, scope: replayLocal})
			return
		}
		a.servePlain(w, r, app, body, h)
	})
}

// plain serves a route with plain JSON both ways.
func (a *API) plain(h clientHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		app, ok := a.app(w, r)
		if !ok {
			return
		}
		body, err := readBody(w, r, clientBodyLimit)
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		a.servePlain(w, r, app, body, h)
	})
}

func (a *API) servePlain(w http.ResponseWriter, r *http.Request, app *license.App, body []byte, h clientHandler) {
	f, err := parseFields(body)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	ip := a.clientIP(r)
	res, err := h(r.Context(), &call{app: app, f: f, r: r, ip: ip})
	a.observeRefusal(r.Context(), app, ip, err)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// observeRefusal feeds key guessing (INVALID_KEY from one address) to abuse
// detection.
func (a *API) observeRefusal(ctx context.Context, app *license.App, ip string, err error) {
	if err != nil && apperr.CodeOf(err) == license.CodeInvalidKey {
		a.abuse.Burst(ctx, app, abuse.InvalidKeys, ip)
	}
}

// cryptoError is a plain pre-verification refusal. Only the clock refusal
// mentions "expired" and carries reason/server_time (sdk-compat §4, §7.13).
func (a *API) cryptoError(w http.ResponseWriter, r *http.Request, err error) {
	var e *apperr.Error
	switch {
	case errors.Is(err, envelope.ErrClockSkew):
		e = apperr.New(apperr.Invalid, wire.CodeCryptoError, "Request expired: this computer's clock differs from the server's by more than 5 minutes.").
			With("reason", wire.ReasonClockSkew).With("server_time", a.now().Unix())
	case errors.Is(err, envelope.ErrBadMAC):
		e = apperr.New(apperr.Invalid, wire.CodeCryptoError, "HMAC verification failed.")
	case errors.Is(err, envelope.ErrDecrypt):
		e = apperr.New(apperr.Invalid, wire.CodeCryptoError, "The request could not be decrypted.")
	default:
		e = apperr.New(apperr.Invalid, wire.CodeCryptoError, "Malformed request envelope.")
	}
	a.writeError(w, r, e)
}

// serveEnvelope verifies an envelope, answers a replay with the first reply,
// runs the route's handler otherwise, and seals whatever it answers (success
// or business failure) into an HTTP 200 envelope. Only refusals before
// verification and internal failures travel as plain JSON.
func (a *API) serveEnvelope(w http.ResponseWriter, r *http.Request, app *license.App, box *envelope.Box, body []byte, o envelopeOptions) {
	now := a.now()
	plain, mac, t, err := box.Open(body, now)
	if err != nil {
		a.abuse.Burst(r.Context(), app, abuse.EnvelopeFailures, a.clientIP(r))
		a.cryptoError(w, r, err)
		return
	}
	ctx := r.Context()
	expires := time.Unix(t, 0).Add(envelope.Window)
	key := replayKey(mac)
	if !a.cache.claim(key, expires, now) {
		reply, ok := a.cache.wait(ctx, key, expires)
		if ok && reply == nil {
			// Answered by a shared-scope route: the reply is kept, sealed,
			// in the shared store only.
			var err error
			if reply, err = a.replays.ReplayReply(ctx, app.ID, hex.EncodeToString(mac[:])); err != nil {
				a.writeError(w, r, err)
				return
			}
			ok = reply != nil
		}
		if ok {
			a.writeBoxed(w, r, box, reply)
		} else {
			a.writeError(w, r, errBusy)
		}
		return
	}
	reply, err := a.runOnce(ctx, r, app, plain, mac[:], expires, o)
	a.cache.finish(key, expires, reply, o.scope == replayShared)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.writeBoxed(w, r, box, reply)
}

// runOnce produces the inner reply of a verified envelope, claiming it in the
// shared store first for replayShared routes. An error return means no reply
// was produced (internal failure or a duplicate still in flight elsewhere).
func (a *API) runOnce(ctx context.Context, r *http.Request, app *license.App, plain, macBytes []byte, expires time.Time,
	o envelopeOptions) ([]byte, error) {
	scope, h := o.scope, o.handler
	var mac string
	if scope == replayShared {
		mac = hex.EncodeToString(macBytes)
		claimed, prior, err := a.replays.ClaimReplay(ctx, app.ID, mac, expires)
		if err != nil {
			return nil, err
		}
		if !claimed {
			return a.awaitShared(ctx, app.ID, mac, prior)
		}
	}
	var reply []byte
	var err error
	if o.raw != nil {
		ip := a.clientIP(r)
		reply, err = o.raw(ctx, &call{app: app, r: r, ip: ip}, plain)
		a.observeRefusal(ctx, app, ip, err)
	} else {
		var f fields
		f, err = parseFields(plain)
		if err == nil {
			var res any
			ip := a.clientIP(r)
			res, err = h(ctx, &call{app: app, f: f, r: r, ip: ip})
			if err == nil {
				reply = marshal(res)
			}
			a.observeRefusal(ctx, app, ip, err)
		}
	}
	if err != nil {
		if isInternal(err) {
			if scope == replayShared {
				a.replays.ReleaseReplay(context.WithoutCancel(ctx), app.ID, mac)
			}
			return nil, err
		}
		reply = errorReply(ctx, apperr.From(err))
	}
	if scope == replayShared {
		if err := a.replays.CompleteReplay(context.WithoutCancel(ctx), app.ID, mac, reply); err != nil {
			return nil, err
		}
	}
	return reply, nil
}

// awaitShared waits briefly for another process to finish the same envelope.
func (a *API) awaitShared(ctx context.Context, appID, mac string, prior []byte) ([]byte, error) {
	for i := 0; prior == nil && i < 50; i++ {
		select {
		case <-ctx.Done():
			return nil, errBusy
		case <-time.After(100 * time.Millisecond):
		}
		var err error
		if prior, err = a.replays.ReplayReply(ctx, appID, mac); err != nil {
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
func (a *API) writeBoxed(w http.ResponseWriter, r *http.Request, box *envelope.Box, inner []byte) {
	out, err := box.Seal(inner, a.now())
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeRaw(w, http.StatusOK, out)
}

// writeSealed envelopes an inner reply with the server's clock and sends it
// with HTTP 200.
func (a *API) writeSealed(w http.ResponseWriter, r *http.Request, keys envelope.Keys, inner []byte) {
	env, err := keys.Seal(inner, a.now())
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeRaw(w, http.StatusOK, env.Marshal())
}
