package client

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/signing"
)

// Against keyward signing with its own key: a client pinning that key logs
// in, beats and gets the kill code of a ban within one beat, every reply
// verified; a client pinning another key refuses keyward's first reply as a
// security error, before reading it.
func TestSignedKeyward(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		ctx := context.Background()
		dir := filepath.Join(t.TempDir(), "signing")
		key, err := signing.Init(dir)
		if err != nil {
			t.Fatal(err)
		}
		s := kwtest.Start(t, kwtest.Options{Engine: engine, Configure: func(c *config.Config) { c.SigningDir = dir }})
		app := s.CreateApp("Signed SDK")
		s.MustAdmin("PUT", "/api/admin/apps.php?app_id="+app.ID, map[string]any{"heartbeat_interval": 5})
		lk := app.GenerateKeys(1, "lifetime", 0, 1)[0]

		c, err := New(s.URL, app.Secret, WithClock(s.Clock.Now), WithPinnedKeys(key.PublicPEM))
		if err != nil {
			t.Fatal(err)
		}
		sess, err := c.Login(ctx, lk, "hw-1")
		if err != nil {
			t.Fatalf("pinned login: %v", err)
		}
		if _, err := c.Login(ctx, "NOPE-NOPE", "hw-1"); err == nil {
			t.Fatal("an unknown key logged in")
		} else {
			apiErr(t, err, 200, "INVALID_KEY", true) // a signed, enveloped refusal
		}
		b := runLoop(t, sess)
		if e := b.beat(t); e.Kind != EventOK || e.Err != nil {
			t.Fatalf("signed beat: %+v", e)
		}
		app.KeyAction("ban", lk, nil)
		if e := b.beat(t); e.Kind != EventKill || e.Code != CodeBanned {
			t.Fatalf("beat after the ban: %+v", e)
		}
		b.ended(t, CodeBanned)

		other, err := signing.Generate()
		if err != nil {
			t.Fatal(err)
		}
		wrong, err := New(s.URL, app.Secret, WithClock(s.Clock.Now), WithPinnedKeys(other.PublicPEM))
		if err != nil {
			t.Fatal(err)
		}
		_, err = wrong.CheckKey(ctx, lk)
		var sec *SecurityError
		if !errors.As(err, &sec) || !errors.Is(err, ErrBadSignature) {
			t.Fatalf("reply checked against another key: %v", err)
		}
		// Pinning both (a rotation under way) accepts keyward's replies.
		both, _ := New(s.URL, app.Secret, WithClock(s.Clock.Now), WithPinnedKeys(other.PublicPEM, key.PublicPEM))
		if _, err := both.CheckKey(ctx, lk); err != nil {
			t.Fatalf("rotation pins: %v", err)
		}
	})
}
