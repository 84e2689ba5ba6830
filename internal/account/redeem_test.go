package account

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/license"
)

// redeemTx records what redeem writes; the rest of Tx is not called.
type redeemTx struct {
	Tx
	keys        []license.Key
	redemptions []license.Redemption
	events      []event.Event
}

func (t *redeemTx) UpdateKey(_ context.Context, k *license.Key) error {
	t.keys = append(t.keys, *k)
	return nil
}

func (t *redeemTx) InsertRedemption(_ context.Context, r *license.Redemption) error {
	t.redemptions = append(t.redemptions, *r)
	return nil
}

func (t *redeemTx) AddEvent(_ context.Context, e event.Event) error {
	t.events = append(t.events, e)
	return nil
}

// redeem stacks a days key on the running time or restarts from now, makes
// the account lifetime for a lifetime key, records what the key really
// added, raises seats when the app says so, and marks the key redeemed.
func TestRedeemMovesTheKeysTime(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	at := func(d time.Duration) *time.Time { v := now.Add(d); return &v }
	cases := []struct {
		name      string
		mode      string
		expires   *time.Time // the account's expiry before
		keyType   license.KeyType
		days      int
		wantExp   *time.Time // nil = lifetime
		wantAdded time.Duration
	}{
		{"stack on running time", license.RedeemStack, at(10 * day), license.TypeDays, 30, at(40 * day), 30 * day},
		{"stack on expired time counts from now", license.RedeemStack, at(-5 * day), license.TypeDays, 30, at(30 * day), 30 * day},
		{"restart counts from now", license.RedeemRestart, at(10 * day), license.TypeDays, 30, at(30 * day), 20 * day},
		{"restart shorter than what is left", license.RedeemRestart, at(40 * day), license.TypeDays, 30, at(30 * day), -10 * day},
		{"lifetime key", license.RedeemStack, at(10 * day), license.TypeLifetime, 0, nil, 0},
	}
	for _, c := range cases {
		app := &license.App{ID: "app", Settings: license.DefaultSettings()}
		app.Settings.AccountRedeemMode = c.mode
		app.Settings.AccountTakesKeyDevices = true
		a := &license.Account{ID: 7, AppID: "app", Username: "alice", MaxDevices: 1, ExpiresAt: c.expires, Features: json.RawMessage(`{"a":1}`)}
		k := &license.Key{ID: 3, AppID: "app", LicenseKey: "K-1", Status: license.StatusUnused, Type: c.keyType, Duration: c.days,
			MaxDevices: 3, Features: json.RawMessage(`{"b":true}`)}
		tx := &redeemTx{}
		g, err := redeem(context.Background(), tx, app, a, k, now)
		if err != nil {
			t.Fatalf("%s: redeem: %v", c.name, err)
		}
		switch {
		case c.wantExp == nil && a.ExpiresAt != nil, c.wantExp != nil && (a.ExpiresAt == nil || !a.ExpiresAt.Equal(*c.wantExp)):
			t.Errorf("%s: account expiry %v, want %v", c.name, a.ExpiresAt, c.wantExp)
		}
		if len(tx.redemptions) != 1 {
			t.Fatalf("%s: %d redemptions written, want 1", c.name, len(tx.redemptions))
		}
		r := tx.redemptions[0]
		if r.Added != c.wantAdded || r.Lifetime != (c.keyType == license.TypeLifetime) || r.DaysAdded != c.days ||
			r.PriorExpiresAt == nil || !r.PriorExpiresAt.Equal(*c.expires) {
			t.Errorf("%s: redemption %+v, want added %v, lifetime %v, days %d, prior %v", c.name, r, c.wantAdded,
				c.keyType == license.TypeLifetime, c.days, c.expires)
		}
		if g.DaysAdded != c.days || g.Lifetime != r.Lifetime || g.Mode != c.mode {
			t.Errorf("%s: grant %+v", c.name, g)
		}
		if a.MaxDevices != 3 || a.LicenseKey != "K-1" {
			t.Errorf("%s: account seats %d, key %q; want 3 and K-1", c.name, a.MaxDevices, a.LicenseKey)
		}
		var feats map[string]any
		if err := json.Unmarshal(a.Features, &feats); err != nil || feats["a"] != float64(1) || feats["b"] != true {
			t.Errorf("%s: account features %s, want a and b merged", c.name, a.Features)
		}
		if len(tx.keys) != 1 || tx.keys[0].Status != license.StatusRedeemed {
			t.Errorf("%s: key writes %+v, want one, redeemed", c.name, tx.keys)
		}
		if len(tx.events) != 1 || tx.events[0].Type != event.KeyRedeemed || tx.events[0].Subject != event.KeySubject(3) {
			t.Errorf("%s: events %+v, want one key.redeemed about key:3", c.name, tx.events)
		}
	}
}

// A lifetime account takes no more keys, and nothing is written.
func TestRedeemOntoLifetimeAccount(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	app := &license.App{ID: "app", Settings: license.DefaultSettings()}
	a := &license.Account{ID: 7, AppID: "app", Username: "alice", MaxDevices: 1}
	k := &license.Key{ID: 3, AppID: "app", LicenseKey: "K-1", Status: license.StatusUnused, Type: license.TypeDays, Duration: 30}
	tx := &redeemTx{}
	_, err := redeem(context.Background(), tx, app, a, k, now)
	if got := apperr.CodeOf(err); got != CodeAlreadyLifetime {
		t.Fatalf("redeem onto a lifetime account: code %q (%v), want %s", got, err, CodeAlreadyLifetime)
	}
	if len(tx.keys)+len(tx.redemptions)+len(tx.events) != 0 {
		t.Errorf("refused redeem wrote keys %v, redemptions %v, events %v", tx.keys, tx.redemptions, tx.events)
	}
}
