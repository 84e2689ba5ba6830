package license

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/lockout"
)

var (
	prefixRE = regexp.MustCompile(`^[A-Z0-9]{0,12}$`)
	colorRE  = regexp.MustCompile(`^(#[0-9A-Fa-f]{6})?$`)
)

// webURL accepts "" or an absolute http(s) URL of at most 2048 characters.
func webURL(s string) bool {
	if s == "" {
		return true
	}
	u, err := url.Parse(s)
	return len(s) <= 2048 && err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// SettingRange is the allowed range of one whole-number app setting.
type SettingRange struct {
	Name     string // JSON name
	Min, Max int
	Unit     string // "seconds", "hours", … ("" for a count)
	Zero     string // what 0 means when it is allowed and special ("off", "no cap"), else ""
	get      func(*AppSettings) int
}

// Allowed is the range as refusals and the dashboard word it, e.g. "5 to
// 3600 seconds" or "0 (off) to 100000".
func (r SettingRange) Allowed() string {
	lo := fmt.Sprint(r.Min)
	if r.Zero != "" {
		lo += " (" + r.Zero + ")"
	}
	s := lo + " to " + fmt.Sprint(r.Max)
	if r.Unit != "" {
		s += " " + r.Unit
	}
	return s
}

// settingRanges are the whole-number settings and their ranges, checked in
// this order; each refusal names its own setting and range. trial_duration
// is checked apart: its range depends on trial_duration_unit.
var settingRanges = []SettingRange{
	{"heartbeat_interval", 5, 3600, "seconds", "", func(s *AppSettings) int { return s.HeartbeatInterval }},
	{"self_reset_cooldown_hours", 0, 8760, "hours", "", func(s *AppSettings) int { return s.SelfResetCooldownHours }},
	{"reset_auto_approve_days", 0, 3650, "days", "off", func(s *AppSettings) int { return s.ResetAutoApproveDays }},
	{"trial_max_devices", 1, 10000, "", "", func(s *AppSettings) int { return s.TrialMaxDevices }},
	{"trial_ip_limit", 0, 100000, "", "no cap", func(s *AppSettings) int { return s.TrialIPLimit }},
	{"trial_ip_window_hours", 1, 8760, "hours", "", func(s *AppSettings) int { return s.TrialIPWindowHours }},
	{"account_signup_days", 0, 36500, "days", "", func(s *AppSettings) int { return s.AccountSignupDays }},
	{"account_max_devices", 1, 10000, "", "", func(s *AppSettings) int { return s.AccountMaxDevices }},
	{"account_password_min_length", 6, 72, "characters", "", func(s *AppSettings) int { return s.AccountPasswordMinLength }},
	{"leak_max_hwids", 0, 100000, "", "off", func(s *AppSettings) int { return s.LeakMaxHWIDs }},
	{"leak_max_ips", 0, 100000, "", "off", func(s *AppSettings) int { return s.LeakMaxIPs }},
	{"leak_window_hours", 1, 8760, "hours", "", func(s *AppSettings) int { return s.LeakWindowHours }},
	{"suspicious_invalid_keys", 0, 1000000, "", "off", func(s *AppSettings) int { return s.SuspiciousInvalidKeys }},
	{"suspicious_envelope_failures", 0, 1000000, "", "off", func(s *AppSettings) int { return s.SuspiciousEnvelopeFailures }},
	{"suspicious_trials", 0, 1000000, "", "off", func(s *AppSettings) int { return s.SuspiciousTrials }},
	{"suspicious_window_minutes", 1, 10080, "minutes", "", func(s *AppSettings) int { return s.SuspiciousWindowMinutes }},
	{"offline_ttl_hours", 1, 8760, "hours", "", func(s *AppSettings) int { return s.OfflineTTLHours }},
}

// trialDurationAllowed is trial_duration's range, by unit.
const trialDurationAllowed = "1 to 87600 hours or 1 to 3650 days (ten years)"

// SettingAllowed is the allowed range of the whole-number setting name, as
// refusals word it ("" when name is not one).
func SettingAllowed(name string) string {
	if name == "trial_duration" {
		return trialDurationAllowed
	}
	for _, r := range settingRanges {
		if r.Name == name {
			return r.Allowed()
		}
	}
	return ""
}

// Validate checks an app's editable fields and returns MISSING_FIELDS on the
// first one out of range, naming it and, for a number, its allowed range.
func (a *App) Validate() error {
	st := a.Settings
	for _, r := range settingRanges {
		if v := r.get(&st); v < r.Min || v > r.Max {
			return apperr.InvalidField(r.Name, fmt.Sprintf("%d is out of range; allowed: %s", v, r.Allowed()))
		}
	}
	switch {
	case strings.TrimSpace(a.Name) == "" || len(a.Name) > 200:
		return apperr.InvalidField("name", "must be 1 to 200 characters")
	case len(a.Version) > 64:
		return apperr.InvalidField("version", "must be at most 64 characters")
	case !prefixRE.MatchString(st.KeyPrefix):
		return apperr.InvalidField("key_prefix", "must be at most 12 upper-case letters or digits")
	case len(st.MaintenanceMessage) > 1000:
		return apperr.InvalidField("maintenance_message", "must be at most 1000 characters")
	case len(st.LoginMessage) > 1000:
		return apperr.InvalidField("login_message", "must be at most 1000 characters")
	case len(st.DownloadURL) > 2048:
		return apperr.InvalidField("download_url", "must be at most 2048 characters")
	case st.TrialDurationUnit != "hours" && st.TrialDurationUnit != "days":
		return apperr.InvalidField("trial_duration_unit", `must be "hours" or "days"`)
	case st.TrialDuration < 1 || TrialLength(st) > 3650*24*time.Hour:
		return apperr.InvalidField("trial_duration", fmt.Sprintf("%d %s is out of range; allowed: %s", st.TrialDuration, st.TrialDurationUnit, trialDurationAllowed))
	case st.AccountRedeemMode != RedeemStack && st.AccountRedeemMode != RedeemRestart:
		return apperr.InvalidField("account_redeem_mode", `must be "stack" or "restart"`)
	case st.LeakAction != LeakActionNone && st.LeakAction != LeakActionPause && st.LeakAction != LeakActionRotate:
		return apperr.InvalidField("leak_action", `must be "none", "pause" or "rotate"`)
	case !webURL(st.Branding.LogoURL) || !webURL(st.Branding.WebsiteURL):
		return apperr.InvalidField("branding", "logo_url and website_url must be http or https URLs of at most 2048 characters")
	case !colorRE.MatchString(st.Branding.PrimaryColor) || !colorRE.MatchString(st.Branding.AccentColor):
		return apperr.InvalidField("branding", "colors must be #RRGGBB")
	case st.Branding.SupportEmail != "" && checkEmail(st.Branding.SupportEmail) != nil:
		return apperr.InvalidField("branding", "support_email must be an e-mail address")
	}
	if a.Settings.FeatureFlags == nil {
		a.Settings.FeatureFlags = []FeatureFlag{}
	}
	if err := checkFlags(a.Settings.FeatureFlags); err != nil {
		return err
	}
	f, err := CheckFeatures(st.TrialFeatures)
	if err != nil {
		return apperr.InvalidField("trial_features", "must be an object of flag names to booleans, numbers or strings")
	}
	if err := a.checkFlagTypes("trial_features", f); err != nil {
		return err
	}
	a.Settings.TrialFeatures = f
	return nil
}

// CreateApp creates an app with default settings and a fresh secret, or,
// when secret is not empty, the secret given (adopting the secret an app's
// shipped copies already have: see CheckSecret; CONFLICT when another app
// has it). An admin actor (signed in or through an access token) becomes its
// owner.
func (s *Service) CreateApp(ctx context.Context, actor audit.Actor, name, version, secret string) (*App, error) {
	now := s.Now()
	adopted := secret != ""
	if adopted {
		if err := CheckSecret(secret); err != nil {
			return nil, err
		}
	} else {
		var err error
		if secret, err = NewSecret(s.random); err != nil {
			return nil, err
		}
	}
	a := &App{ID: NewID(s.random), Name: strings.TrimSpace(name), Version: version, Secret: secret,
		Settings: DefaultSettings(), CreatedAt: now, UpdatedAt: now}
	if actor.Kind == "admin" || actor.Kind == "token" {
		a.OwnerID = actor.ID
	}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	details := map[string]any{"name": a.Name}
	if adopted {
		details["secret_adopted"] = true // never the secret itself
	}
	err := s.store.InTx(ctx, func(tx Tx) error {
		if err := tx.InsertApp(ctx, a, HashToken(secret)); err != nil {
			return secretTaken(err)
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "app.create", a.ID, a.ID, details))
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// SecretLen is the length of an app secret: 64 hexadecimal characters.
const SecretLen = 64

// CheckSecret accepts an app secret given by an admin: exactly 64
// hexadecimal characters, either case. The secret is kept exactly as given,
// never re-cased or decoded, because the envelope keys are derived from its
// text (envelope.Derive) and clients send it as they have it. The message
// never repeats the secret.
func CheckSecret(secret string) error {
	if len(secret) != SecretLen {
		return apperr.InvalidField("secret", fmt.Sprintf("must be exactly %d hexadecimal characters (0-9, a-f or A-F), got %d characters", SecretLen, len(secret)))
	}
	for i := 0; i < len(secret); i++ {
		c := secret[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return apperr.InvalidField("secret", fmt.Sprintf("must be exactly %d hexadecimal characters (0-9, a-f or A-F); character %d is not one", SecretLen, i+1))
		}
	}
	return nil
}

// errSecretTaken refuses a secret another app already has (the secret
// identifies the app to clients, so it is unique: apps.secret_hash).
var errSecretTaken = apperr.New(apperr.Conflict, CodeConflict, "Another app already uses this secret; each app needs its own.")

// secretTaken turns the store's uniqueness conflict into errSecretTaken.
// The apps table's only unique columns are its id (random) and secret_hash.
func secretTaken(err error) error {
	if errors.Is(err, apperr.ErrConflict) {
		return errSecretTaken
	}
	return err
}

// App returns one app or NOT_FOUND.
func (s *Service) App(ctx context.Context, id string) (*App, error) {
	a, err := s.store.App(ctx, id)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, apperr.NotFoundOf("App")
	}
	return a, err
}

// Apps lists every app.
func (s *Service) Apps(ctx context.Context) ([]App, error) { return s.store.Apps(ctx) }

// UpdateApp replaces an app's name, version and settings with those of next
// (whose ID selects the app) after validating them.
func (s *Service) UpdateApp(ctx context.Context, actor audit.Actor, next *App) (*App, error) {
	if err := next.Validate(); err != nil {
		return nil, err
	}
	var allowed func(netip.Addr) bool
	if s.up != nil {
		allowed = s.up.allowed
	}
	if err := validateUpstream(next, allowed); err != nil {
		return nil, err
	}
	now := s.Now()
	var out *App
	err := s.store.InTx(ctx, func(tx Tx) error {
		cur, err := s.store.App(ctx, next.ID)
		if errors.Is(err, apperr.ErrNotFound) {
			return apperr.NotFoundOf("App")
		} else if err != nil {
			return err
		}
		tokenChanged := cur.UpstreamToken != next.UpstreamToken
		cur.Name, cur.Version, cur.Settings, cur.UpdatedAt = strings.TrimSpace(next.Name), next.Version, next.Settings, now
		cur.UpstreamToken = next.UpstreamToken
		cur.Settings.UpstreamTokenSet = cur.UpstreamToken != ""
		if err := tx.UpdateApp(ctx, cur, HashToken(cur.Secret)); err != nil {
			return err
		}
		out = cur
		details := map[string]any{"name": cur.Name, "version": cur.Version, "settings": cur.Settings}
		if tokenChanged {
			details["upstream_token_changed"] = true // never the token itself
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "app.update", cur.ID, cur.ID, details))
	})
	s.apps.clear()
	s.up.forget()
	return out, err
}

// RegenerateSecret gives an app a new secret; the old one stops working at
// once. Regenerations are rate-limited per app (Config.SecretRegen), across
// processes: RATE_LIMITED with retry_after once the app has had too many.
// Each regeneration is counted before it is made (a reservation, so
// regenerations at once never exceed the limit), and given back only when
// there is no such app.
func (s *Service) RegenerateSecret(ctx context.Context, actor audit.Actor, id string) (*App, error) {
	return s.replaceSecret(ctx, actor, id, "", "app.regenerate_secret")
}

// SetSecret gives an app the secret given (adopting the one its shipped
// copies already have, see CheckSecret) and is otherwise RegenerateSecret:
// the old secret stops working at once in this process and within the app
// cache's lifetime in others, sessions are kept, and it draws on the same
// per-app limit. CONFLICT when another app has the secret (counted, so the
// limit also bounds probing for other apps' secrets).
func (s *Service) SetSecret(ctx context.Context, actor audit.Actor, id, secret string) (*App, error) {
	if secret == "" {
		return nil, apperr.Missing("secret")
	}
	if err := CheckSecret(secret); err != nil {
		return nil, err
	}
	return s.replaceSecret(ctx, actor, id, secret, "app.set_secret")
}

// replaceSecret replaces app id's secret with secret (a fresh one when
// empty), recording action: the one path of RegenerateSecret and SetSecret.
func (s *Service) replaceSecret(ctx context.Context, actor audit.Actor, id, secret, action string) (*App, error) {
	regen := lockout.Subject{Scope: "secret-regen", ID: id, Policy: s.cfg.SecretRegen}
	res, err := s.cfg.Guard.Reserve(ctx, regen)
	if err != nil {
		if e := apperr.From(err); e.Code == lockout.CodeTooManyAttempts {
			r := apperr.New(apperr.RateLimited, CodeRateLimited, "This app's secret was regenerated or set too often. Try again later.")
			r.RetryAfter = e.RetryAfter
			return nil, r
		}
		return nil, err
	}
	if _, err := s.App(ctx, id); err != nil {
		return nil, res.Abandon(ctx, err)
	}
	if secret == "" {
		if secret, err = NewSecret(s.random); err != nil {
			return nil, err
		}
	}
	now := s.Now()
	var out *App
	err = s.store.InTx(ctx, func(tx Tx) error {
		a, err := s.store.App(ctx, id)
		if errors.Is(err, apperr.ErrNotFound) {
			return apperr.NotFoundOf("App")
		} else if err != nil {
			return err
		}
		a.Secret, a.UpdatedAt = secret, now
		if err := tx.UpdateApp(ctx, a, HashToken(secret)); err != nil {
			return secretTaken(err)
		}
		out = a
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, action, id, id, nil))
	})
	s.apps.clear()
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SetRevoked revokes an app (its clients are refused, each live session
// ends with SESSION_REVOKED at its next heartbeat, app.revoked is sent) or,
// with revoked false, restores it.
func (s *Service) SetRevoked(ctx context.Context, actor audit.Actor, id string, revoked bool) (*App, error) {
	now := s.Now()
	var out *App
	defer s.apps.clear()
	err := s.store.InTx(ctx, func(tx Tx) error {
		if err := tx.LockApp(ctx, id); err != nil {
			return apperr.NotFoundAs(err, "App")
		}
		a, err := s.store.App(ctx, id)
		if err != nil {
			return apperr.NotFoundAs(err, "App")
		}
		out = a
		if (a.RevokedAt != nil) == revoked {
			return nil
		}
		action := "app.restore"
		a.RevokedAt, a.UpdatedAt = nil, now
		if revoked {
			action, a.RevokedAt = "app.revoke", &now
			if err := tx.AddEvent(ctx, event.Event{AppID: id, Type: event.AppRevoked, CreatedAt: now,
				Data: map[string]any{"app_id": id, "name": a.Name, "reason": "revoked"}}); err != nil {
				return err
			}
		}
		if err := tx.UpdateApp(ctx, a, HashToken(a.Secret)); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, action, id, id, nil))
	})
	return out, err
}

// DeleteApp deletes an app with its keys, devices and sessions, and records
// app.revoked.
func (s *Service) DeleteApp(ctx context.Context, actor audit.Actor, id string) error {
	now := s.Now()
	defer s.apps.clear()
	return s.store.InTx(ctx, func(tx Tx) error {
		a, err := s.store.App(ctx, id)
		if errors.Is(err, apperr.ErrNotFound) {
			return apperr.NotFoundOf("App")
		} else if err != nil {
			return err
		}
		if err := tx.DeleteApp(ctx, id); errors.Is(err, apperr.ErrNotFound) {
			return apperr.NotFoundOf("App")
		} else if err != nil {
			return err
		}
		// Its own webhook destinations go with it; those for every app hear of it.
		if err := tx.AddEvent(ctx, event.Event{AppID: id, Type: event.AppRevoked, CreatedAt: now,
			Data: map[string]any{"app_id": id, "name": a.Name, "reason": "deleted"}}); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "app.delete", id, id, nil))
	})
}

// GenerateInput describes a batch of new keys.
type GenerateInput struct {
	AppID      string
	Count      int
	Type       KeyType
	Duration   int
	MaxDevices int
	Note       string
	Features   json.RawMessage
	// Floating keys bind no device: MaxDevices counts live sessions.
	Floating bool
}

// MaxBatch is the largest number of keys one request may generate.
const MaxBatch = 10000

// GenerateKeys creates Count unused keys and records key.created. Duration is
// required (≥ 1 day) for days keys and refused for lifetime keys.
func (s *Service) GenerateKeys(ctx context.Context, actor audit.Actor, in GenerateInput) ([]Key, error) {
	if err := CheckTerms(in.Type, in.Duration, in.MaxDevices); err != nil {
		return nil, err
	}
	switch {
	case in.Count < 1 || in.Count > MaxBatch:
		return nil, apperr.InvalidField("count", fmt.Sprintf("must be 1 to %d", MaxBatch))
	case len(in.Note) > 1000:
		return nil, apperr.InvalidField("note", "must be at most 1000 characters")
	}
	if in.MaxDevices == 0 {
		in.MaxDevices = 1
	}
	features, err := CheckFeatures(in.Features)
	if err != nil {
		return nil, err
	}
	app, err := s.App(ctx, in.AppID)
	if err != nil {
		return nil, err
	}
	if err := app.checkFlagTypes("features", features); err != nil {
		return nil, err
	}
	now := s.Now()
	keys := make([]Key, in.Count)
	strs := make([]string, in.Count)
	for i := range keys {
		str, err := NewKeyString(s.random, app.Settings.KeyPrefix)
		if err != nil {
			return nil, err
		}
		strs[i] = str
		keys[i] = Key{AppID: app.ID, LicenseKey: str, Status: StatusUnused, Type: in.Type, Duration: in.Duration,
			MaxDevices: in.MaxDevices, Floating: in.Floating, Note: in.Note, Features: features, CreatedAt: now, UpdatedAt: now}
	}
	err = s.store.InTx(ctx, func(tx Tx) error {
		if err := tx.InsertKeys(ctx, keys); err != nil {
			return err
		}
		subject := "" // several keys: no one subject
		if len(keys) == 1 {
			subject = event.KeySubject(keys[0].ID)
		}
		if err := tx.AddEvent(ctx, event.Event{AppID: app.ID, Type: event.KeyCreated, CreatedAt: now, Subject: subject, Data: map[string]any{
			"app_id": app.ID, "count": in.Count, "key_type": in.Type, "duration": in.Duration, "license_keys": strs}}); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "key.generate", app.ID, fmt.Sprintf("%d keys", in.Count),
			map[string]any{"count": in.Count, "key_type": in.Type, "duration": in.Duration, "max_devices": in.MaxDevices, "floating": in.Floating}))
	})
	if err != nil {
		return nil, err
	}
	return keys, nil
}

// CheckTerms validates a key's type, duration (days; required for days
// keys, refused for lifetime keys) and seats (0 meaning the default).
func CheckTerms(typ KeyType, duration, maxDevices int) error {
	switch {
	case typ != TypeDays && typ != TypeLifetime:
		return apperr.InvalidField("key_type", "must be days or lifetime")
	case typ == TypeDays && (duration < 1 || duration > 36500):
		return apperr.InvalidField("duration_value", "is required for days keys and must be 1 to 36500")
	case typ == TypeLifetime && duration != 0:
		return apperr.InvalidField("duration_value", "is not allowed for lifetime keys")
	case maxDevices < 0 || maxDevices > 10000:
		return apperr.InvalidField("max_devices", "must be 1 to 10000")
	}
	return nil
}

// CheckFeatures validates a features object (flag → boolean, number or
// string) and returns it compacted; empty or null is {}.
func CheckFeatures(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}"), nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, apperr.InvalidField("features", "must be an object of flag names to values")
	}
	for name, v := range m {
		if name == "" || len(name) > 64 {
			return nil, apperr.InvalidField("features", "flag names must be 1 to 64 characters")
		}
		switch v.(type) {
		case bool, float64, string:
		default:
			return nil, apperr.InvalidField("features", "flag "+name+" must be a boolean, number or string")
		}
	}
	out, _ := json.Marshal(m)
	return out, nil
}

// ListKeys returns a page of keys and the cursor of the next page (0 at the end).
func (s *Service) ListKeys(ctx context.Context, f KeyFilter) ([]Key, int64, error) {
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 100
	}
	switch f.Status {
	case "", StatusUnused, StatusActive, StatusPaused, StatusBanned, StatusExpired, StatusRedeemed:
	default:
		return nil, 0, apperr.InvalidField("status", "must be unused, active, paused, banned, expired or redeemed")
	}
	if f.Type != "" && f.Type != TypeDays && f.Type != TypeLifetime {
		return nil, 0, apperr.InvalidField("key_type", "must be days or lifetime")
	}
	f.Now = s.Now()
	keys, err := s.store.Keys(ctx, f)
	if err != nil {
		return nil, 0, err
	}
	var next int64
	if len(keys) == f.Limit {
		next = keys[len(keys)-1].ID
	}
	return keys, next, nil
}

// KeyDetail is one key with its devices and open sessions. Seats are the
// sessions that hold a seat: those heard from within the session timeout
// (a silent one still open until the reaper ends it holds none); for a
// floating key, what its max_devices counts.
type KeyDetail struct {
	Key      Key
	Devices  []Device
	Sessions []Session
	Seats    []Session
}

// GetKey returns a key of app with its devices and open sessions.
func (s *Service) GetKey(ctx context.Context, appID, licenseKey string) (*KeyDetail, error) {
	k, err := s.store.Key(ctx, appID, licenseKey)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, apperr.NotFoundOf("Key")
	} else if err != nil {
		return nil, err
	}
	devices, err := s.store.Devices(ctx, k.ID)
	if err != nil {
		return nil, err
	}
	sessions, err := s.store.Sessions(ctx, SessionFilter{AppID: appID, KeyID: k.ID, Limit: 1000})
	if err != nil {
		return nil, err
	}
	staleBefore := s.Now().Add(-s.cfg.SessionTimeout)
	seats := []Session{}
	for i := range sessions {
		ss := sessions[i]
		if seen := s.lastSeen(&ss); !seen.Before(staleBefore) {
			ss.LastSeenAt = seen
			seats = append(seats, ss)
		}
	}
	return &KeyDetail{Key: *k, Devices: devices, Sessions: sessions, Seats: seats}, nil
}

// SeatHolder is one seat of a floating key as operators and customers see
// it: a seat session (Session), a borrowed license file (File), or both
// when the machine of a seat session also holds a borrowed file. A machine
// holding only a borrowed file has Session nil.
type SeatHolder struct {
	HWID    string
	Session *Session
	File    *IssuedFile
}

// SeatHolders lists the seats of d's key held at now, counted as login
// counts them (Seats.TakeSeat): each seat session (d.Seats), then each
// machine holding a borrowed file of files (IssuedFile.HoldsSeat) and no
// seat session. A borrowed file of a machine with a seat session is
// attached to that machine's first session rather than counted again.
// len of the result is the key's seats in use.
func (d *KeyDetail) SeatHolders(files []IssuedFile, now time.Time) []SeatHolder {
	out := make([]SeatHolder, 0, len(d.Seats))
	first := map[string]int{} // hwid → its first seat session in out
	for i := range d.Seats {
		ss := &d.Seats[i]
		if _, ok := first[ss.HWID]; !ok {
			first[ss.HWID] = len(out)
		}
		out = append(out, SeatHolder{HWID: ss.HWID, Session: ss})
	}
	for i := range files {
		f := &files[i]
		if !f.HoldsSeat(now) {
			continue
		}
		if j, ok := first[f.HWID]; ok {
			if out[j].File == nil {
				out[j].File = f
			}
			continue
		}
		first[f.HWID] = len(out)
		out = append(out, SeatHolder{HWID: f.HWID, File: f})
	}
	return out
}

// KeyUpdate holds the editable fields of a key; nil fields stay unchanged.
type KeyUpdate struct {
	MaxDevices *int
	Note       *string
	Features   json.RawMessage
	// Floating switches seat counting: on, max_devices counts live sessions
	// on any machines and bound devices are ignored (kept, and counted again
	// if it is switched off). Sessions open at the switch keep running.
	Floating *bool
}

// UpdateKey edits a key's seats, note, features or floating switch.
func (s *Service) UpdateKey(ctx context.Context, actor audit.Actor, appID, licenseKey string, u KeyUpdate) (*Key, error) {
	if u.MaxDevices != nil && (*u.MaxDevices < 1 || *u.MaxDevices > 10000) {
		return nil, apperr.InvalidField("max_devices", "must be 1 to 10000")
	}
	if u.Note != nil && len(*u.Note) > 1000 {
		return nil, apperr.InvalidField("note", "must be at most 1000 characters")
	}
	var features json.RawMessage
	if u.Features != nil {
		f, err := CheckFeatures(u.Features)
		if err != nil {
			return nil, err
		}
		app, err := s.App(ctx, appID)
		if err != nil {
			return nil, err
		}
		if err := app.checkFlagTypes("features", f); err != nil {
			return nil, err
		}
		features = f
	}
	return s.mutateKey(ctx, actor, appID, licenseKey, "key.update", nil, func(tx Tx, k *Key, now time.Time) error {
		if u.MaxDevices != nil {
			k.MaxDevices = *u.MaxDevices
		}
		if u.Note != nil {
			k.Note = *u.Note
		}
		if features != nil {
			k.Features = features
		}
		if u.Floating != nil {
			k.Floating = *u.Floating
		}
		return nil
	})
}

// DeleteKey deletes a key; its sessions end with SESSION_REVOKED.
func (s *Service) DeleteKey(ctx context.Context, actor audit.Actor, appID, licenseKey string) error {
	now := s.Now()
	return s.store.InTx(ctx, func(tx Tx) error {
		k, err := tx.KeyForUpdate(ctx, appID, licenseKey)
		if errors.Is(err, apperr.ErrNotFound) {
			return apperr.NotFoundOf("Key")
		} else if err != nil {
			return err
		}
		if err := deleteInTx(ctx, tx, appID, k, now); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "key.delete", appID, k.LicenseKey, nil))
	})
}

// Key actions of the admin API.
const (
	ActionBan       = "ban"
	ActionUnban     = "unban"
	ActionPause     = "pause"
	ActionResume    = "resume"
	ActionExtend    = "extend"
	ActionResetHWID = "reset-hwid"
	ActionRotate    = "rotate"
)

// KeyAction applies one state transition to a key:
//   - ban: → banned, sessions end with BANNED, key.banned;
//   - unban: banned → active (unused if never activated), key.unbanned;
//   - pause / resume: active or unused ↔ paused, sessions end with PAUSED;
//   - extend: days are added to the expiry (counted from now if it already
//     passed) or, for an unused key, to its duration; lifetime keys refuse;
//   - reset-hwid: every device unbound, sessions end with HWID_RESET;
//   - rotate: a new key string, the old one stops working, sessions end with
//     SESSION_REVOKED, key.rotated.
//
// It returns NOT_FOUND, MISSING_FIELDS or CONFLICT (the state forbids it).
func (s *Service) KeyAction(ctx context.Context, actor audit.Actor, appID, licenseKey, action string, days int, reason string) (*Key, error) {
	details := map[string]any{}
	if reason != "" {
		details["reason"] = truncate(reason, 1000)
	}
	var newString string
	switch action {
	case ActionBan, ActionUnban, ActionPause, ActionResume, ActionResetHWID:
	case ActionExtend:
		if days < 1 || days > 36500 {
			return nil, apperr.InvalidField("days", "must be 1 to 36500")
		}
		details["days"] = days
	case ActionRotate:
		app, err := s.App(ctx, appID)
		if err != nil {
			return nil, err
		}
		if newString, err = NewKeyString(s.random, app.Settings.KeyPrefix); err != nil {
			return nil, err
		}
	default:
		return nil, apperr.InvalidField("action", "must be ban, unban, pause, resume, extend, reset-hwid, rotate or export")
	}
	return s.mutateKey(ctx, actor, appID, licenseKey, "key."+action, details, transition(ctx, appID, action, days, details, newString))
}

// transition is the change of one key action (KeyAction's list) applied to a
// key loaded for update inside tx; the caller stores the key. A key whose
// state forbids the action gets CONFLICT before anything is changed.
func transition(ctx context.Context, appID, action string, days int, details map[string]any, newString string) func(Tx, *Key, time.Time) error {
	return func(tx Tx, k *Key, now time.Time) error {
		ev := func(typ string, data map[string]any) error {
			data["app_id"], data["license_key"] = appID, k.LicenseKey
			return tx.AddEvent(ctx, event.Event{AppID: appID, Type: typ, CreatedAt: now, Subject: event.KeySubject(k.ID), Data: data})
		}
		restored := StatusUnused
		if k.ActivatedAt != nil {
			restored = StatusActive
		}
		if k.Status == StatusRedeemed && action != ActionBan {
			return conflict("This key was redeemed onto an account: act on the account, or ban the key to take its time back.")
		}
		switch action {
		case ActionBan:
			if k.Status == StatusBanned {
				return nil
			}
			if k.Status == StatusRedeemed {
				if err := takeBack(ctx, tx, k, now); err != nil {
					return err
				}
			}
			k.Status = StatusBanned
			if _, err := tx.EndKeySessions(ctx, k.ID, CodeBanned, now); err != nil {
				return err
			}
			return ev(event.KeyBanned, map[string]any{"reason": details["reason"]})
		case ActionUnban:
			if k.Status != StatusBanned {
				return conflict("The key is not banned.")
			}
			k.Status = restored
			if _, err := tx.RedemptionOfKey(ctx, k.ID); err == nil {
				k.Status = StatusRedeemed
				if err := giveBack(ctx, tx, k, now); err != nil {
					return err
				}
			} else if !errors.Is(err, apperr.ErrNotFound) {
				return err
			}
			return ev(event.KeyUnbanned, map[string]any{})
		case ActionPause:
			switch k.Status {
			case StatusPaused:
				return nil
			case StatusBanned:
				return conflict("A banned key cannot be paused.")
			}
			k.Status = StatusPaused
			_, err := tx.EndKeySessions(ctx, k.ID, CodePaused, now)
			return err
		case ActionResume:
			if k.Status != StatusPaused {
				return conflict("The key is not paused.")
			}
			k.Status = restored
		case ActionExtend:
			return extend(k, days, now)
		case ActionResetHWID:
			if _, err := tx.DeleteDevices(ctx, k.ID); err != nil {
				return err
			}
			_, err := tx.EndKeySessions(ctx, k.ID, CodeHWIDReset, now)
			return err
		case ActionRotate:
			old := k.LicenseKey
			if _, err := tx.EndKeySessions(ctx, k.ID, CodeSessionRevoked, now); err != nil {
				return err
			}
			k.LicenseKey = newString
			details["new_license_key"] = newString
			return tx.AddEvent(ctx, event.Event{AppID: appID, Type: event.KeyRotated, CreatedAt: now, Subject: event.KeySubject(k.ID),
				Data: map[string]any{"app_id": appID, "old_license_key": old, "license_key": newString}})
		}
		return nil
	}
}

// extend adds days to a key: to its expiry (counted from now if that passed)
// or, before activation, to its duration. Lifetime keys refuse.
func extend(k *Key, days int, now time.Time) error {
	if k.Type == TypeLifetime {
		return conflict("Lifetime keys do not expire.")
	}
	k.Duration += days
	if k.ExpiresAt != nil {
		base := *k.ExpiresAt
		if base.Before(now) {
			base = now
		}
		exp := base.Add(time.Duration(days) * 24 * time.Hour)
		k.ExpiresAt = &exp
		if k.Status == StatusExpired {
			k.Status = StatusActive
		}
	}
	return nil
}

// ExtendInTx extends a key inside the caller's transaction, as the extend
// action does without its audit entry (a renewal). NOT_FOUND when the key
// is gone.
func ExtendInTx(ctx context.Context, tx Tx, appID, licenseKey string, days int, now time.Time) error {
	k, err := tx.KeyForUpdate(ctx, appID, licenseKey)
	if errors.Is(err, apperr.ErrNotFound) {
		return apperr.NotFoundOf("Key")
	} else if err != nil {
		return err
	}
	if k.Status == StatusRedeemed {
		// The key's time lives on the account it was redeemed onto.
		if err := extendGrant(ctx, tx, k, days, now); err != nil {
			return err
		}
		k.Duration += days
	} else if err := extend(k, days, now); err != nil {
		return err
	}
	k.UpdatedAt = now
	return tx.UpdateKey(ctx, k)
}

// extendGrant adds days to the account a key was redeemed onto (from now if
// its time ran out) and to what the redemption gave, so banning the key
// later takes the renewal back too. Lifetime accounts and grants need none.
func extendGrant(ctx context.Context, tx Tx, k *Key, days int, now time.Time) error {
	r, a, err := redemptionOf(ctx, tx, k)
	if r == nil || err != nil || r.Lifetime || a.Lifetime() {
		return err
	}
	old := *a.ExpiresAt
	exp := later(old, now).Add(time.Duration(days) * 24 * time.Hour)
	a.ExpiresAt, a.UpdatedAt = &exp, now
	r.Added += exp.Sub(old)
	if err := tx.UpdateRedemption(ctx, r); err != nil {
		return err
	}
	return tx.UpdateAccount(ctx, a)
}

// BanInTx bans a key inside the caller's transaction, as the ban action
// does without its audit entry: sessions end with BANNED, a redeemed key's
// time is taken back, key.banned is recorded. A missing or already banned
// key is left alone.
func BanInTx(ctx context.Context, tx Tx, appID, licenseKey, reason string, now time.Time) error {
	k, err := tx.KeyForUpdate(ctx, appID, licenseKey)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil
	} else if err != nil || k.Status == StatusBanned {
		return err
	}
	if k.Status == StatusRedeemed {
		if err := takeBack(ctx, tx, k, now); err != nil {
			return err
		}
	}
	k.Status, k.UpdatedAt = StatusBanned, now
	if _, err := tx.EndKeySessions(ctx, k.ID, CodeBanned, now); err != nil {
		return err
	}
	if err := tx.UpdateKey(ctx, k); err != nil {
		return err
	}
	return tx.AddEvent(ctx, event.Event{AppID: appID, Type: event.KeyBanned, CreatedAt: now, Subject: event.KeySubject(k.ID),
		Data: map[string]any{"app_id": appID, "license_key": k.LicenseKey, "reason": reason}})
}

// mutateKey loads a key for update, applies fn, saves it and audits action.
func (s *Service) mutateKey(ctx context.Context, actor audit.Actor, appID, licenseKey, action string, details map[string]any,
	fn func(Tx, *Key, time.Time) error) (*Key, error) {
	now := s.Now()
	var out *Key
	err := s.store.InTx(ctx, func(tx Tx) error {
		var err error
		out, err = MutateKeyIn(ctx, tx, actor, now, appID, licenseKey, action, details, fn)
		return err
	})
	return out, err
}

// KeyMutator is what MutateKeyIn needs of a transaction.
type KeyMutator interface {
	KeyForUpdate(ctx context.Context, appID, licenseKey string) (*Key, error)
	UpdateKey(ctx context.Context, k *Key) error
	AddAudit(ctx context.Context, e audit.Entry) error
}

// MutateKeyIn is one key action inside tx: it loads the key for update
// (NOT_FOUND when there is none), applies fn, saves the key and audits
// action. Other packages' key actions (trial conversion) use it with their
// own transaction type.
func MutateKeyIn[T KeyMutator](ctx context.Context, tx T, actor audit.Actor, now time.Time, appID, licenseKey, action string,
	details map[string]any, fn func(T, *Key, time.Time) error) (*Key, error) {
	k, err := tx.KeyForUpdate(ctx, appID, licenseKey)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, apperr.NotFoundOf("Key")
	} else if err != nil {
		return nil, err
	}
	target := k.LicenseKey
	if err := fn(tx, k, now); err != nil {
		return nil, err
	}
	k.UpdatedAt = now
	if err := tx.UpdateKey(ctx, k); err != nil {
		return nil, err
	}
	return k, tx.AddAudit(ctx, audit.NewEntry(actor, now, action, appID, target, details))
}

// Sessions lists live sessions of an app, optionally of one key.
func (s *Service) Sessions(ctx context.Context, f SessionFilter) ([]Session, error) {
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 100
	}
	return s.store.Sessions(ctx, f)
}

// RevokeSession ends one live session; its next heartbeat answers
// SESSION_REVOKED. id is the session's public ID or the client's token; appID,
// when not empty, must be the session's app.
func (s *Service) RevokeSession(ctx context.Context, actor audit.Actor, appID, id string) error {
	now := s.Now()
	return s.store.InTx(ctx, func(tx Tx) error {
		sess, err := tx.SessionByID(ctx, id)
		if errors.Is(err, apperr.ErrNotFound) {
			sess, err = tx.SessionByTokenHash(ctx, HashToken(id))
		}
		if errors.Is(err, apperr.ErrNotFound) || (err == nil && ((appID != "" && sess.AppID != appID) || sess.EndedAt != nil)) {
			return apperr.NotFoundOf("Session")
		} else if err != nil {
			return err
		}
		if err := tx.EndSession(ctx, sess.ID, CodeSessionRevoked, now); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "session.revoke", sess.AppID, sess.ID, map[string]any{"hwid": sess.HWID}))
	})
}

// SessionApp returns the app of a session named by its id or its token
// (NOT_FOUND if there is none), so the caller can be authorized on it.
func (s *Service) SessionApp(ctx context.Context, id string) (string, error) {
	var appID string
	err := s.store.InTx(ctx, func(tx Tx) error {
		sess, err := tx.SessionByID(ctx, id)
		if errors.Is(err, apperr.ErrNotFound) {
			sess, err = tx.SessionByTokenHash(ctx, HashToken(id))
		}
		if err != nil {
			return apperr.NotFoundAs(err, "Session")
		}
		appID = sess.AppID
		return nil
	})
	return appID, err
}

// RevokeKeySessions ends every live session of a key with SESSION_REVOKED
// and returns how many there were.
func (s *Service) RevokeKeySessions(ctx context.Context, actor audit.Actor, appID, licenseKey string) (int, error) {
	now := s.Now()
	var n int
	err := s.store.InTx(ctx, func(tx Tx) error {
		k, err := tx.KeyForUpdate(ctx, appID, licenseKey)
		if err != nil {
			return apperr.NotFoundAs(err, "Key")
		}
		if n, err = tx.EndKeySessions(ctx, k.ID, CodeSessionRevoked, now); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "session.revoke_key", appID, k.LicenseKey, map[string]any{"count": n}))
	})
	return n, err
}

func conflict(msg string) error { return apperr.New(apperr.Conflict, CodeConflict, msg) }
