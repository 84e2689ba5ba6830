package license

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/wire"
)

// keyAlphabet is Crockford's base32: upper case, no I, L, O or U, so a key read
// aloud or typed from paper is unambiguous. 20 characters carry 100 bits.
const keyAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// NewKeyString returns XXXXX-XXXXX-XXXXX-XXXXX from random, with prefix and a
// hyphen in front when prefix is not empty.
func NewKeyString(random io.Reader, prefix string) (string, error) {
	var raw [20]byte
	if _, err := io.ReadFull(random, raw[:]); err != nil {
		return "", apperr.Wrap(err, "random")
	}
	var b strings.Builder
	if prefix != "" {
		b.WriteString(prefix)
		b.WriteByte('-')
	}
	for i, r := range raw {
		if i > 0 && i%5 == 0 {
			b.WriteByte('-')
		}
		b.WriteByte(keyAlphabet[r&31]) // 256 is a multiple of 32: no bias
	}
	return b.String(), nil
}

// NewSecret returns a 64-character lowercase hex app secret.
func NewSecret(random io.Reader) (string, error) {
	b := make([]byte, 32)
	if _, err := io.ReadFull(random, b); err != nil {
		return "", apperr.Wrap(err, "random")
	}
	return hex.EncodeToString(b), nil
}

// NewID returns a random UUID (a session's public ID), falling back to the
// system source when random fails.
func NewID(random io.Reader) string {
	u, err := uuid.NewRandomFromReader(random)
	if err != nil {
		return uuid.NewString()
	}
	return u.String()
}

// activate starts an unused key's time at now and records key.activated.
func activate(ctx context.Context, tx Tx, app *App, k *Key, hwid string, now time.Time) error {
	k.Status = StatusActive
	k.ActivatedAt = &now
	if k.Type == TypeDays {
		exp := now.Add(time.Duration(k.Duration) * 24 * time.Hour)
		k.ExpiresAt = &exp
	}
	k.UpdatedAt = now
	if err := tx.UpdateKey(ctx, k); err != nil {
		return err
	}
	return tx.AddEvent(ctx, event.Event{AppID: app.ID, Type: event.KeyActivated, CreatedAt: now, Subject: event.KeySubject(k.ID),
		Data: map[string]any{"app_id": app.ID, "license_key": k.LicenseKey, "hwid": hwid}})
}

// Timestamp formats t as ISO 8601 UTC with a Z, to the second.
func Timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// OptTimestamp is Timestamp of t, or nil when t is.
func OptTimestamp(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := Timestamp(*t)
	return &s
}

// Info returns the KeyInfo fields of k at now.
func (k *Key) Info(now time.Time) map[string]any {
	return map[string]any{
		"status":         k.StatusAt(now),
		"key_type":       k.Type,
		"duration":       k.Duration,
		"activated_at":   OptTimestamp(k.ActivatedAt),
		"expires_at":     OptTimestamp(k.ExpiresAt),
		"days_remaining": k.DaysRemaining(now),
		"max_devices":    k.MaxDevices,
	}
}

// AdminView returns the key as the admin and reseller APIs show it:
// KeyInfo plus the key string, note, features, floating and creation time.
func (k *Key) AdminView(now time.Time) wire.Key {
	return wire.Key{LicenseKey: k.LicenseKey, Status: string(k.StatusAt(now)), KeyType: string(k.Type), Duration: k.Duration,
		ActivatedAt: OptTimestamp(k.ActivatedAt), ExpiresAt: OptTimestamp(k.ExpiresAt), DaysRemaining: k.DaysRemaining(now),
		MaxDevices: k.MaxDevices, Floating: k.Floating, Note: k.Note, Features: k.FeaturesJSON(), CreatedAt: Timestamp(k.CreatedAt),
		LastSelfResetAt: OptTimestamp(k.LastSelfResetAt)}
}

// AdminViews are keys as the admin and reseller APIs show them at now.
func AdminViews(keys []Key, now time.Time) []wire.Key {
	out := make([]wire.Key, len(keys))
	for i := range keys {
		out[i] = keys[i].AdminView(now)
	}
	return out
}

// FeaturesJSON returns the key's feature map as raw JSON, {} when unset.
func (k *Key) FeaturesJSON() json.RawMessage {
	if len(k.Features) == 0 {
		return json.RawMessage("{}")
	}
	return k.Features
}
