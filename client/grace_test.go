package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"testing"
	"time"
)

// trustFake is a fake whose login and heartbeat replies carry trust_until
// (an hour after its clock), with signing on or off.
func trustFake(t testing.TB, signed bool) (*fake, []byte) {
	key, _ := signingKeys(t)
	f := newFake(t)
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	f.now = func() time.Time { return now }
	if signed {
		f.signer = key
	}
	until := now.Add(time.Hour).Format(time.RFC3339)
	f.answer = func(path string, inner map[string]any) (int, any, bool, http.Header) {
		switch path {
		case "/api/auth/login.php":
			return 200, map[string]any{"success": true, "session_id": "sess-1", "heartbeat_interval": 30,
				"user": map[string]any{"license_key": inner["license_key"]}, "trust_until": until}, true, nil
		case "/api/auth/heartbeat.php":
			return 200, map[string]any{"success": true, "message": "Heartbeat OK", "trust_until": until}, true, nil
		}
		return 503, []byte("down"), false, nil
	}
	return f, publicPEM(t, key)
}

// An unsigned reply never gives trust, whatever trust_until it carries:
// anyone between the app and the server could have written it. The same
// reply signed with the pinned key does.
func TestUnsignedTrustUntilIgnored(t *testing.T) {
	ctx := context.Background()
	f, _ := trustFake(t, false)
	c := f.client(t, WithClock(f.now))
	if _, err := c.Login(ctx, "K", "hw"); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Trust(); ok {
		t.Fatal("an unsigned trust_until was kept")
	}
	_, err := c.CheckKey(ctx, "K") // the fake answers 503
	if v := c.Verdict("K", err); v.Status != Refused || !errors.Is(v.Err, ErrNoTrust) {
		t.Fatalf("verdict on an unsigned trust_until: %+v", v)
	}

	sf, pub := trustFake(t, true)
	sc := sf.client(t, WithClock(sf.now), WithPinnedKeys(pub))
	if _, err := sc.Login(ctx, "K", "hw"); err != nil {
		t.Fatal(err)
	}
	_, err = sc.CheckKey(ctx, "K")
	if v := sc.Verdict("K", err); v.Status != Grace || !v.Until.Equal(sf.now().Add(time.Hour)) {
		t.Fatalf("verdict on a signed trust_until: %+v", v)
	}
}

// memStore is a Store in memory.
type memStore struct{ b []byte }

func (m *memStore) Load() ([]byte, error) { return m.b, nil }
func (m *memStore) Save(b []byte) error   { m.b = append([]byte(nil), b...); return nil }

// The stored trust record is untrusted bytes: whatever they are, loading
// them never panics, and anything adopted verified with the pinned key and
// names a future trust_until from a signed exchange.
func FuzzTrustRecord(f *testing.F) {
	sf, pub := trustFake(f, true)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte(`{"v":1,"exchange":{"nonce":"","method":"POST","path":"/api/auth/login.php","request":"","status":200,"reply":"","signature":""},"seen":0}`))
	f.Add([]byte(`{"v":1,"exchange":null,"seen":-1}`))
	f.Add([]byte(`[`))
	st := &memStore{}
	sc, err := New(sf.srv.URL, fakeSecret, WithClock(sf.now), WithPinnedKeys(pub), WithStore(st))
	if err == nil {
		if _, err := sc.Login(context.Background(), "K", "hw"); err == nil && len(st.b) > 0 {
			f.Add(st.b) // a genuine record
			var m map[string]any
			json.Unmarshal(st.b, &m)
			m["seen"] = 1 << 40
			b, _ := json.Marshal(m)
			f.Add(b)
		}
	}
	c, err := New("http://127.0.0.1:9", fakeSecret, WithPinnedKeys(pub))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := c.parseTrustRecord(b)
		if err != nil {
			return
		}
		if st.ex == nil || st.Until.IsZero() || st.Seen.Before(st.ServerTime) {
			t.Fatalf("adopted %+v", st)
		}
		if err := VerifyReplySignature(c.pins, ReplyCanonical(st.ex.Nonce, st.ex.Method, st.ex.Path, st.ex.Request, st.ex.Status, st.ex.Reply), st.ex.Signature); err != nil {
			t.Fatalf("adopted an exchange that does not verify: %v", err)
		}
	})
}

// FileStore: Load of a missing file is empty, Save replaces atomically,
// Save(nil) removes, and a file over the bound is refused.
func TestFileStore(t *testing.T) {
	p := FileStore(filepath.Join(t.TempDir(), "t.json"))
	if b, err := p.Load(); b != nil || err != nil {
		t.Fatalf("missing file: %q %v", b, err)
	}
	if err := p.Save([]byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := p.Save([]byte("two")); err != nil {
		t.Fatal(err)
	}
	if b, err := p.Load(); string(b) != "two" || err != nil {
		t.Fatalf("after two saves: %q %v", b, err)
	}
	if err := p.Save(nil); err != nil {
		t.Fatal(err)
	}
	if b, err := p.Load(); b != nil || err != nil {
		t.Fatalf("after removal: %q %v", b, err)
	}
	if err := p.Save(make([]byte, maxTrustRecord+1)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Load(); err == nil {
		t.Fatal("an oversized file was read")
	}
	if err := p.Save(nil); err != nil || p.Save(nil) != nil {
		t.Fatal("removing twice")
	}
}
