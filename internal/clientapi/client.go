package clientapi

import (
	"bytes"
	"context"
	"time"

	"github.com/keyward/keyward/internal/edge"

	"github.com/keyward/keyward/internal/analytics"
	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/wire"
)

// sawKey feeds leak detection with where key is used from: a sign-in of
// device hwid that succeeded (err nil) or was refused for the key's devices
// or seats.
func (a *API) sawKey(ctx context.Context, c *edge.Call, key, hwid string, err error) {
	if code := apperr.CodeOf(err); err == nil || code == wire.CodeHWIDMismatch || code == wire.CodeDeviceLimit {
		a.abuse.SawKey(ctx, c.App, key, hwid, c.IP)
	}
}

// login: auth/login.php (envelope). Reply fields per sdk-compat §7.8.
func (a *API) login(ctx context.Context, c *edge.Call) (any, error) {
	lk, err := c.F.Key("license_key")
	if err != nil {
		return nil, err
	}
	hwid, err := c.F.Str("hwid")
	if err != nil {
		return nil, err
	}
	// Display only (the sessions list): a value that is not a string is ignored
	// rather than failing a login no shipped client sends it with.
	version, _ := c.F.Str("version", "v", "app_version")
	res, err := a.lic.Login(ctx, c.App, license.LoginRequest{LicenseKey: lk, HWID: hwid, IP: c.IP, AppVersion: version})
	a.sawKey(ctx, c, lk, hwid, err)
	a.countLogin(c.App, err)
	if err != nil {
		return nil, err
	}
	if res.Activated {
		a.count(c.App, analytics.Activation, "")
	}
	return &wire.LoginReply{
		Success:           true,
		Message:           "Login successful",
		SessionID:         res.SessionToken,
		HeartbeatInterval: c.App.Settings.HeartbeatInterval,
		User:              wire.KeyUser{KeyInfo: keyInfo(&res.Key, a.lic.Now()), HWID: res.HWID},
		Features:          c.App.Features(res.Key.Features),
		App:               appBlock(c.App),
		TrustUntil:        a.trustUntil(c),
	}, nil
}

// trustUntil is the trust_until of a signed reply to c (login, heartbeat,
// check-key): the server's time plus the app's offline_ttl_hours, or nil
// when the app has offline trust off or the reply will not be signed. Only
// a signed reply may promise it: an SDK pinning the reply key keeps running
// through an outage until then, and an unsigned value could be forged.
func (a *API) trustUntil(c *edge.Call) *time.Time {
	st := &c.App.Settings
	if !st.OfflineEnabled || !a.Signs(c.R) {
		return nil
	}
	t := wire.At(a.lic.Now().Add(time.Duration(st.OfflineTTLHours) * time.Hour))
	return &t
}

// keyInfo is the client view of k at now.
func keyInfo(k *license.Key, now time.Time) wire.KeyInfo {
	return wire.KeyInfo{
		LicenseKey:    k.LicenseKey,
		Status:        string(k.StatusAt(now)),
		KeyType:       string(k.Type),
		Duration:      k.Duration,
		ActivatedAt:   wire.AtPtr(k.ActivatedAt),
		ExpiresAt:     wire.AtPtr(k.ExpiresAt),
		DaysRemaining: k.DaysRemaining(now),
		MaxDevices:    k.MaxDevices,
	}
}

func appBlock(app *license.App) wire.AppSummary {
	return wire.AppSummary{Name: app.Name, Version: app.Version, Message: app.Settings.LoginMessage}
}

var heartbeatOK = &wire.HeartbeatReply{Success: true, Message: "Heartbeat OK"}

// heartbeatOKReply is heartbeatOK encoded once: the heartbeat's answer
// costs no encoding.
var heartbeatOKReply = edge.Marshal(heartbeatOK)

// trustedBeat is a heartbeat success with trust_until, encoded once per
// (TTL, second) and kept in API.beats: with offline trust on, a signed beat
// costs no encoding or allocation either, but for the first beat of each
// second.
type trustedBeat struct {
	ttl   int   // offline_ttl_hours
	until int64 // trust_until, Unix seconds
	reply []byte
}

// trustedBeatReply is heartbeatOKReply with trust_until = now + ttl hours:
// the same bytes as edge.Marshal of a wire.HeartbeatReply with TrustUntil.
func (a *API) trustedBeatReply(ttl int, now time.Time) []byte {
	until := now.Unix() + int64(ttl)*3600
	slot := &a.beats[uint(ttl)%uint(len(a.beats))]
	if p := slot.Load(); p != nil && p.ttl == ttl && p.until == until {
		return p.reply
	}
	b := make([]byte, 0, len(heartbeatOKReply)+40)
	b = append(b, heartbeatOKReply[:len(heartbeatOKReply)-1]...) // without its closing brace
	b = append(b, `,"trust_until":"`...)
	b = time.Unix(until, 0).UTC().AppendFormat(b, time.RFC3339)
	b = append(b, `"}`...)
	slot.Store(&trustedBeat{ttl: ttl, until: until, reply: b})
	return b
}

// heartbeatNames are the inner body's members the heartbeat reads.
var heartbeatNames = []string{"session_id", "license_key"}

// heartbeat: auth/heartbeat.php (envelope), the hot path. The inner body is
// decoded once, into the two members it reads, and success is answered with
// pre-encoded bytes. Every refusal is a kill code, enveloped by the
// transport.
func (a *API) heartbeat(ctx context.Context, c *edge.Call, plain []byte) ([]byte, error) {
	var in [2][]byte // slices of plain: the members are read without a copy
	if !edge.ScanBytes(plain, heartbeatNames, in[:]) {
		f, err := edge.ParseFields(plain)
		if err != nil {
			return nil, err
		}
		sid, err := f.Str("session_id")
		if err != nil {
			return nil, err
		}
		lk, err := f.Str("license_key")
		if err != nil {
			return nil, err
		}
		in[0], in[1] = []byte(sid), []byte(lk)
	}
	sid, lk := in[0], bytes.TrimSpace(in[1])
	if err := a.BeatBudget(c.App.ID, sid); err != nil {
		return nil, err
	}
	if err := a.lic.Heartbeat(ctx, c.App, sid, lk); err != nil {
		if e := apperr.From(err); e.Kind == apperr.Forbidden { // the session ended: a kill code
			a.count(c.App, analytics.HeartbeatRefused, e.Code)
			a.metrics.Kill(e.Code)
		}
		return nil, err
	}
	if st := &c.App.Settings; st.OfflineEnabled && a.Signs(c.R) {
		return a.trustedBeatReply(st.OfflineTTLHours, a.lic.Now()), nil
	}
	return heartbeatOKReply, nil
}

// logout: auth/logout.php (envelope). Unknown sessions log out fine.
func (a *API) logout(ctx context.Context, c *edge.Call) (any, error) {
	sid, err := c.F.Str("session_id")
	if err != nil {
		return nil, err
	}
	if err := a.lic.Logout(ctx, c.App, sid); err != nil {
		return nil, err
	}
	a.count(c.App, analytics.Logout, "")
	return &wire.Reply{Success: true, Message: "Logged out successfully"}, nil
}

// checkKey: auth/check-key.php (plain or envelope, mirrored). A known key
// answers success:true with valid saying whether it can be used now.
func (a *API) checkKey(ctx context.Context, c *edge.Call) (any, error) {
	lk, err := c.F.Key("license_key")
	if err != nil {
		return nil, err
	}
	k, err := a.lic.CheckKey(ctx, c.App, lk)
	if err != nil {
		if apperr.CodeOf(err) == wire.CodeInvalidKey {
			return nil, apperr.From(err).With("valid", false)
		}
		return nil, err
	}
	r := keyReply(c.App, k, a.lic.Now())
	if r.Valid {
		r.TrustUntil = a.trustUntil(c)
	}
	return r, nil
}

// keyReply is the check-key / validate answer for a known key.
func keyReply(app *license.App, k *license.Key, now time.Time) *wire.CheckKeyReply {
	st := k.StatusAt(now)
	usable := st == license.StatusActive || st == license.StatusUnused
	msg := "License key is valid."
	if !usable {
		msg = "License key is " + string(st) + "."
	}
	return &wire.CheckKeyReply{Success: true, Valid: usable, Message: msg, Key: keyInfo(k, now), Features: app.Features(k.Features)}
}

// validate: update/validate.php (plain). Unusable keys answer 401 as the
// reference's status list says.
func (a *API) validate(ctx context.Context, c *edge.Call) (any, error) {
	lk, err := c.F.Key("license_key")
	if err != nil {
		return nil, err
	}
	k, err := a.lic.Validate(ctx, c.App, lk)
	if err != nil {
		// Every refusal of the key itself is a 401 with valid:false, as
		// check-key answers; other errors (internal ones) pass through.
		if e := apperr.From(err); e.Kind == apperr.Forbidden || e.Kind == apperr.Unauthenticated {
			c := *e
			c.Kind = apperr.Unauthenticated
			return nil, c.With("valid", false)
		}
		return nil, err
	}
	return keyReply(c.App, k, a.lic.Now()), nil
}

// requestHWIDReset: auth/request-hwid-reset.php (plain, deprecated). The reply
// is identical whether or not the key exists.
func (a *API) requestHWIDReset(ctx context.Context, c *edge.Call) (any, error) {
	var in license.ResetRequestInput
	var err error
	if in.LicenseKey, err = c.F.Key("license_key"); err != nil {
		return nil, err
	}
	if in.Username, err = c.F.Str("username"); err != nil {
		return nil, err
	}
	if in.HWID, err = c.F.Str("hwid"); err != nil {
		return nil, err
	}
	if in.Reason, err = c.F.Str("reason"); err != nil {
		return nil, err
	}
	if err := a.lic.RequestHWIDReset(ctx, c.App, in); err != nil {
		return nil, err
	}
	return &wire.Reply{Success: true, Message: "Request submitted."}, nil
}

// selfReset: customer/reset-hwid.php (plain), the self-service "move license".
func (a *API) selfReset(ctx context.Context, c *edge.Call) (any, error) {
	lk, err := c.F.Key("key", "license_key")
	if err != nil {
		return nil, err
	}
	reason, err := c.F.Str("reason")
	if err != nil {
		return nil, err
	}
	next, err := a.lic.SelfReset(ctx, c.App, lk, reason, c.IP)
	if err != nil {
		return nil, err
	}
	return &wire.SelfResetReply{Success: true,
		Message:     "Hardware ID has been reset. You can now activate the key on a new device.",
		NextResetAt: wire.At(next)}, nil
}
