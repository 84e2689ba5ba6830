package license

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/envelope"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/lockout"
)

// Config holds the tunables of the license service.
type Config struct {
	// SessionTimeout is how long a session may go without a heartbeat before
	// it is reaped (and refused at its next heartbeat).
	SessionTimeout time.Duration
	// AppCacheTTL is how long an app resolved from its secret is reused
	// before it is read again (default 1s; negative disables). It bounds how
	// long a change made through another process takes to be seen here.
	AppCacheTTL time.Duration
	// Guard counts secret regenerations (nil: no limit).
	Guard *lockout.Guard
	// SecretRegen limits secret regenerations per app (through Guard).
	SecretRegen lockout.Policy
}

// Service implements the license and session rules. It is safe for concurrent
// use. Heartbeat last-seen times are buffered in memory and written in batches
// by FlushTouches, so the hot path does no write transaction.
type Service struct {
	store  Store
	now    func() time.Time
	random io.Reader
	cfg    Config

	apps    *appCache
	touches touchBuffer
	up      *upstreamState // lazy migration (SetUpstream); nil: off

	seatDenied func(appID string)  // OnSeatDenied; nil: nobody to tell
	fileIssued func(source string) // OnFileIssued; nil: nobody to tell
}

// NewService returns a Service. now is the clock; random the source of keys,
// tokens and secrets (crypto/rand.Reader in production).
func NewService(store Store, now func() time.Time, random io.Reader, cfg Config) *Service {
	if random == nil {
		random = rand.Reader
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 180 * time.Second
	}
	if cfg.AppCacheTTL == 0 {
		cfg.AppCacheTTL = time.Second
	}
	return &Service{store: store, now: now, random: random, cfg: cfg, apps: newAppCache(cfg.AppCacheTTL),
		touches: newTouchBuffer()}
}

// Now returns the service clock's time.
func (s *Service) Now() time.Time { return s.now().UTC() }

// HashToken returns the stored form of a session token or app secret.
func HashToken(token string) string { return hashToken(token) }

func hashToken[T string | []byte](token T) string {
	var buf [64]byte // tokens and secrets are 64 characters: hashed without a copy on the heap
	h := sha256.Sum256(append(buf[:0], token...))
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], h[:])
	return string(out[:]) // one allocation; hex.EncodeToString makes two
}

// AppBySecret resolves the app whose secret is secret. The lookup is by the
// secret's SHA-256, so no timing of the comparison depends on secret bytes.
// Apps are cached briefly (Config.AppCacheTTL). The App returned may be
// shared with other requests: callers must not change it.
func (s *Service) AppBySecret(ctx context.Context, secret string) (*App, error) {
	app, _, err := s.ClientApp(ctx, secret)
	return app, err
}

// ClientApp is AppBySecret that also returns the app's envelope Box, cached
// with the app so a client request derives no keys. Neither may be changed
// by the caller.
func (s *Service) ClientApp(ctx context.Context, secret string) (*App, *envelope.Box, error) {
	if len(secret) != 64 {
		return nil, nil, apperr.ErrNotFound
	}
	var buf [64]byte
	hash := sha256.Sum256(append(buf[:0], secret...))
	now := s.now()
	e, gen := s.apps.get(hash, now)
	if e != nil {
		return &e.app, e.box, nil
	}
	a, err := s.store.AppBySecretHash(ctx, hex.EncodeToString(hash[:]))
	if err != nil {
		return nil, nil, err
	}
	e = &cachedApp{app: *a, box: envelope.NewBox(envelope.Derive(a.Secret))}
	s.apps.put(hash, e, gen, now)
	return &e.app, e.box, nil
}

// LoginRequest is the inner body of auth/login.
type LoginRequest struct {
	LicenseKey string
	HWID       string
	IP         string
	AppVersion string // optional: the client's version, shown in the sessions list
}

// LoginResult is a successful login.
type LoginResult struct {
	SessionToken string
	Key          Key
	HWID         string
	Activated    bool // this login activated the key
}

// Login activates a key on first use, binds the device, and opens a session,
// retiring the oldest session when the key's seats are full. A floating
// key binds no device and refuses a login when all its seats are held
// (Seats.TakeSeat). It returns
// MISSING_FIELDS, INVALID_KEY, MAINTENANCE, BANNED, PAUSED, EXPIRED,
// HWID_MISMATCH or DEVICE_LIMIT.
func (s *Service) Login(ctx context.Context, app *App, req LoginRequest) (*LoginResult, error) {
	if err := checkDeviceRequest(app, req.LicenseKey, req.HWID); err != nil {
		return nil, err
	}
	now := s.Now()
	token, err := s.randomHex(32)
	if err != nil {
		return nil, err
	}
	var res *LoginResult
	err = s.withUpstream(ctx, app, req.LicenseKey, func() (err error) {
		res, err = s.login(ctx, app, req, token, now)
		return err
	})
	return res, err
}

// checkDeviceRequest is what every request binding a device to a key
// (a login, a license file) checks before reading anything: the key and
// device are given, the device id is of sane length, and the app is not
// in maintenance.
func checkDeviceRequest(app *App, licenseKey, hwid string) error {
	switch {
	case licenseKey == "":
		return apperr.Missing("license_key")
	case hwid == "":
		return apperr.Missing("hwid")
	case len(hwid) > 256:
		return apperr.InvalidField("hwid", "longer than 256 characters")
	case app.Settings.Maintenance:
		return killError(CodeMaintenance, app)
	}
	return nil
}

// errUnknownKey is an attempt's INVALID_KEY for a string that is no key
// (nor alias) of the app, which withUpstream may look up upstream.
var errUnknownKey = errors.New("unknown key")

// withUpstream runs attempt; when it finds no such key (errUnknownKey) and
// the app's upstream has it (lazy migration, KnownOrUpstream), the key is
// imported and attempt runs once more. A key still unknown is INVALID_KEY.
func (s *Service) withUpstream(ctx context.Context, app *App, licenseKey string, attempt func() error) error {
	err := attempt()
	if errors.Is(err, errUnknownKey) {
		if ok, uerr := s.KnownOrUpstream(ctx, app, licenseKey); uerr != nil {
			return uerr
		} else if ok {
			err = attempt()
		}
	}
	if errors.Is(err, errUnknownKey) {
		return errInvalidKey
	}
	return err
}

// keyForDevice reads app's key licenseKey for update, or the key whose
// string was rotated away for a suspected leak and still signs in its one
// kept device hwid (RotateForLeak); errUnknownKey when neither.
func keyForDevice(ctx context.Context, tx Tx, appID, licenseKey, hwid string) (*Key, error) {
	k, err := tx.KeyForUpdate(ctx, appID, licenseKey)
	if errors.Is(err, apperr.ErrNotFound) {
		k, err = tx.KeyByAliasForUpdate(ctx, appID, licenseKey, hwid)
	}
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, errUnknownKey
	}
	return k, err
}

// seatRule takes a floating key's seat for a device: Seats.TakeSeat for a
// session, Seats.BorrowSeat for a license file.
type seatRule func(st Seats, hwid string, staleBefore time.Time, lastSeen func(*Session) time.Time) (SeatTaken, error)

// admit lets device hwid use k (read for update in tx, its status already
// checked) at now: a floating
// key's seat is taken by take, any other key binds the device; an unused
// key is activated. When every seat is held, seat.denied is written (with
// extra in its data) and the refusal is returned as denied, not as err: the
// caller commits (the stale sessions ended on the way stay ended, and the
// event is written under the key's lock), then answers with it.
func (s *Service) admit(ctx context.Context, tx Tx, app *App, k *Key, hwid string, now time.Time, take seatRule,
	extra map[string]any) (activated bool, denied, err error) {
	if k.Floating {
		taken, err := take(KeySeats(ctx, tx, k, now), hwid, now.Add(-s.cfg.SessionTimeout), s.lastSeen)
		if apperr.CodeOf(err) == CodeDeviceLimit {
			data := map[string]any{"app_id": app.ID, "key_id": k.ID, "license_key": k.LicenseKey, "hwid": hwid,
				"seats_in_use": taken.InUse, "max_devices": taken.Max}
			for n, v := range extra {
				data[n] = v
			}
			return false, err, tx.AddEvent(ctx, event.Event{AppID: app.ID, Type: event.SeatDenied, CreatedAt: now,
				Subject: event.KeySubject(k.ID), Data: data})
		} else if err != nil {
			return false, nil, err
		}
	} else if err := bindDevice(ctx, tx, k, hwid, now); err != nil {
		return false, nil, err
	}
	if k.Status != StatusUnused {
		return false, nil, nil
	}
	return true, nil, activate(ctx, tx, app, k, hwid, now)
}

// seatDeniedFor tells the server of a refusal admit returned (counted in
// keyward_seat_denials_total).
func (s *Service) seatDeniedFor(appID string) {
	if s.seatDenied != nil {
		s.seatDenied(appID)
	}
}

// login is one attempt of Login.
func (s *Service) login(ctx context.Context, app *App, req LoginRequest, token string, now time.Time) (*LoginResult, error) {
	var res *LoginResult
	var denied error // a floating key's seats were all held
	err := s.store.InTx(ctx, func(tx Tx) error {
		res, denied = nil, nil
		k, err := keyForDevice(ctx, tx, app.ID, req.LicenseKey, req.HWID)
		if err != nil {
			return err
		}
		if err := statusError(k.StatusAt(now)); err != nil {
			return err
		}
		activated, refused, err := s.admit(ctx, tx, app, k, req.HWID, now, Seats.TakeSeat, nil)
		if err != nil || refused != nil {
			denied = refused
			return err
		}
		if !k.Floating {
			if err := retireOverflow(ctx, tx, k, req.HWID, now, now.Add(-s.cfg.SessionTimeout)); err != nil {
				return err
			}
		}
		sess := &Session{
			ID: NewID(s.random), TokenHash: HashToken(token), AppID: app.ID, KeyID: &k.ID,
			HWID: req.HWID, IP: req.IP, AppVersion: truncate(req.AppVersion, 64), CreatedAt: now, LastSeenAt: now,
		}
		if err := tx.InsertSession(ctx, sess); err != nil {
			return err
		}
		res = &LoginResult{SessionToken: token, Key: *k, HWID: req.HWID, Activated: activated}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if denied != nil {
		s.seatDeniedFor(app.ID)
		return nil, denied
	}
	return res, nil
}

// OnSeatDenied sets fn to be told of every login refused because a
// floating key's seats were all held (the server counts them in
// keyward_seat_denials_total). Call it before serving.
func (s *Service) OnSeatDenied(fn func(appID string)) { s.seatDenied = fn }

// OnFileIssued sets fn to be told of every license file issued, with its
// source (the server counts them in keyward_license_files_issued_total).
// Call it before serving.
func (s *Service) OnFileIssued(fn func(source string)) { s.fileIssued = fn }

// Heartbeat keeps a session alive, or ends it and returns the kill code:
// SESSION_EXPIRED, SESSION_MISMATCH, SESSION_REVOKED, HWID_RESET, MAINTENANCE,
// BANNED, PAUSED or EXPIRED. licenseKey, when not empty, must be the session's
// key. The token and key are bytes: slices of the request body, read without
// a string copy on the hot path.
func (s *Service) Heartbeat(ctx context.Context, app *App, token, licenseKey []byte) error {
	if len(token) == 0 {
		return apperr.Missing("session_id")
	}
	now := s.Now()
	hash := hashToken(token)
	v, err := s.store.HeartbeatView(ctx, hash)
	reason := ""
	if err == nil {
		reason, err = s.verdict(ctx, app, v, licenseKey, now)
		if (reason != "" || err != nil) && v.Cached {
			// A cached view keeps a session alive but never ends one:
			// its last-seen time may trail a heartbeat another process
			// wrote (license.HeartbeatView.Cached).
			v, err = s.store.FreshHeartbeatView(ctx, hash)
			if err == nil {
				reason, err = s.verdict(ctx, app, v, licenseKey, now)
			}
		}
	}
	if errors.Is(err, apperr.ErrNotFound) {
		return errSessionGone
	} else if err != nil {
		return err
	}
	sess := &v.Session
	if reason != "" {
		if err := s.endSession(ctx, sess.ID, reason, now); err != nil {
			return err
		}
		return sessionKill(sess, reason, app)
	}
	if now.Sub(sess.LastSeenAt) >= s.touchResolution() {
		s.touches.touch(sess.ID, Touch{SeenKey: v.SeenKey, TokenHash: hash, At: now})
	}
	return nil
}

// verdict judges a heartbeat on v: an error to answer with (the session is
// gone, ended or not the key's), or the reason to end it now, or neither.
func (s *Service) verdict(ctx context.Context, app *App, v *HeartbeatView, licenseKey []byte, now time.Time) (string, error) {
	sess := &v.Session
	if sess.AppID != app.ID {
		return "", errSessionGone
	}
	if sess.EndedAt != nil {
		return "", sessionKill(sess, sess.EndReason, app)
	}
	// Account sessions carry no key string: a license_key sent with them is
	// not compared (it may name any key the account redeemed).
	if len(licenseKey) != 0 && v.KeyString != "" && string(licenseKey) != v.KeyString {
		if sess.KeyID == nil {
			return "", errMismatch
		}
		if alias, err := s.store.IsKeyAlias(ctx, app.ID, string(licenseKey), *sess.KeyID); err != nil {
			return "", err
		} else if !alias {
			return "", errMismatch
		}
	}
	switch {
	case s.silent(sess, now):
		return CodeSessionExpired, nil
	case !v.KeyExists || app.RevokedAt != nil:
		return CodeSessionRevoked, nil
	case app.Settings.Maintenance:
		return CodeMaintenance, nil
	}
	k := Key{Status: v.KeyStatus, ExpiresAt: v.KeyExpiry}
	if e := statusError(k.StatusAt(now)); e != nil {
		return e.Code, nil
	}
	return "", nil
}

// touchResolution is how fresh a session's stored last-seen time may be for a
// heartbeat to leave it alone: a eighteenth of the session timeout (10 s for
// the default 180 s). Clients beating at the default 30 s interval have every
// beat written; a client beating faster costs one write per session per
// resolution instead of one per beat, and its silence is measured at most
// that much (under 6 % of the timeout) early.
func (s *Service) touchResolution() time.Duration { return s.cfg.SessionTimeout / 18 }

// silent reports whether sess has gone without a heartbeat for longer than
// the session timeout, counting heartbeats not yet written. The touch
// buffer can only make the time newer, so it is asked only when the stored
// time says the session is silent (a lookup in a locked map of every
// recently beating session, a microsecond a heartbeat at 100 000).
func (s *Service) silent(sess *Session, now time.Time) bool {
	return now.Sub(sess.LastSeenAt) > s.cfg.SessionTimeout && now.Sub(s.lastSeen(sess)) > s.cfg.SessionTimeout
}

func (s *Service) lastSeen(sess *Session) time.Time {
	if t, ok := s.touches.last(sess.ID); ok && t.After(sess.LastSeenAt) {
		return t
	}
	return sess.LastSeenAt
}

func (s *Service) endSession(ctx context.Context, id, reason string, now time.Time) error {
	s.touches.forget(id)
	return s.store.InTx(ctx, func(tx Tx) error { return tx.EndSession(ctx, id, reason, now) })
}

// FlushTouches writes buffered heartbeat times. Call it periodically and at
// shutdown; a lost buffer only makes sessions look up to one period older.
func (s *Service) FlushTouches(ctx context.Context) error {
	batch := s.touches.take()
	if len(batch) == 0 {
		return nil
	}
	touches := make([]Touch, 0, len(batch))
	for _, t := range batch {
		touches = append(touches, t)
	}
	if err := s.store.TouchSessions(ctx, touches); err != nil {
		s.touches.putBack(batch) // for the next flush, unless newer
		return err
	}
	return nil
}

// ReapSessions ends sessions silent for longer than the session timeout and
// purges sessions that ended more than a day ago. Buffered heartbeats are
// written first so a live session is never reaped for a stale time.
func (s *Service) ReapSessions(ctx context.Context) (int, error) {
	if err := s.FlushTouches(ctx); err != nil {
		return 0, err
	}
	now := s.Now()
	n, err := s.store.ReapSessions(ctx, now.Add(-s.cfg.SessionTimeout), now, now.Add(-24*time.Hour))
	if err != nil {
		return n, err
	}
	// Issued license files are kept until MaxRequestAge after their
	// valid_until (see PurgeLicenseFiles).
	_, err = s.store.PurgeLicenseFiles(ctx, now.Add(-MaxRequestAge))
	return n, err
}

// Logout closes a session at once and frees its seat; the device stays bound.
// Logging out an unknown or ended session succeeds (clients ignore failures).
func (s *Service) Logout(ctx context.Context, app *App, token string) error {
	if token == "" {
		return apperr.Missing("session_id")
	}
	now := s.Now()
	return s.store.InTx(ctx, func(tx Tx) error {
		sess, err := tx.SessionByTokenHash(ctx, HashToken(token))
		if errors.Is(err, apperr.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		if sess.AppID != app.ID || sess.EndedAt != nil {
			return nil
		}
		s.touches.forget(sess.ID)
		return tx.EndSession(ctx, sess.ID, endLogout, now)
	})
}

// CheckKey returns the key for licenseKey without opening a session or
// binding a device. It returns MISSING_FIELDS or INVALID_KEY.
func (s *Service) CheckKey(ctx context.Context, app *App, licenseKey string) (*Key, error) {
	if licenseKey == "" {
		return nil, apperr.Missing("license_key")
	}
	k, err := s.store.Key(ctx, app.ID, licenseKey)
	if errors.Is(err, apperr.ErrNotFound) {
		// Not a key here: the app's upstream may have it (lazy migration).
		if ok, uerr := s.KnownOrUpstream(ctx, app, licenseKey); uerr != nil {
			return nil, uerr
		} else if ok {
			k, err = s.store.Key(ctx, app.ID, licenseKey)
		}
	}
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, errInvalidKey
	}
	return k, err
}

// Validate is CheckKey that also refuses keys that are not usable now
// (BANNED, PAUSED, EXPIRED).
func (s *Service) Validate(ctx context.Context, app *App, licenseKey string) (*Key, error) {
	k, err := s.CheckKey(ctx, app, licenseKey)
	if err != nil {
		return nil, err
	}
	if e := statusError(k.StatusAt(s.Now())); e != nil {
		return nil, e
	}
	return k, nil
}

func (s *Service) randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(s.random, b); err != nil {
		return "", apperr.Wrap(err, "random")
	}
	return hex.EncodeToString(b), nil
}
