package client

import (
	"testing"
	"time"

	kwenv "github.com/keyward/keyward/internal/envelope"
)

// The SDK's copy of the envelope and keyward's internal/envelope
// interoperate in both directions, and agree on MACs, refusals and the
// clock window.
func TestEnvelopeInterop(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	mine, theirs := deriveKeys(fakeSecret), kwenv.Derive(fakeSecret)
	if mine.enc != theirs.Enc || mine.mac != theirs.MAC {
		t.Fatal("derived keys differ")
	}
	for _, msg := range []string{"", "{}", `{"license_key":"ABC","hwid":"é+/"}`, string(make([]byte, 4096))} {
		e, err := mine.seal([]byte(msg), now)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := kwenv.Parse(e.marshal())
		if err != nil {
			t.Fatal(err)
		}
		plain, _, err := theirs.Verify(parsed, now.Add(299*time.Second))
		if err != nil || string(plain) != msg {
			t.Fatalf("server cannot open the SDK's envelope: %v", err)
		}
		if _, _, err := theirs.Verify(parsed, now.Add(301*time.Second)); err != kwenv.ErrClockSkew {
			t.Fatalf("server window: %v", err)
		}
		se, err := theirs.Seal([]byte(msg), now)
		if err != nil {
			t.Fatal(err)
		}
		back, err := parseEnvelope(se.Marshal())
		if err != nil {
			t.Fatal(err)
		}
		got, err := mine.open(back, now.Add(-299*time.Second))
		if err != nil || string(got) != msg {
			t.Fatalf("SDK cannot open the server's envelope: %v", err)
		}
		if _, err := mine.open(back, now.Add(-301*time.Second)); err != errEnvClockSkew {
			t.Fatalf("SDK window: %v", err)
		}
		if mine.sign(e.P, e.T) != theirs.Sign(e.P, e.T) {
			t.Fatal("MACs differ")
		}
		if !isEnvelope(se.Marshal()) || kwenv.IsEnvelope([]byte(msg)) != isEnvelope([]byte(msg)) {
			t.Fatal("isEnvelope differs")
		}
		bad := back
		bad.S = theirs.Sign(bad.P, bad.T+1)
		if _, err := mine.open(bad, now); err != errEnvBadMAC {
			t.Fatalf("bad MAC: %v", err)
		}
	}
	for _, raw := range []string{`{"p":"x","t":"1","s":"y"}`, `{"p":"x","t":1.5,"s":"y"}`, `{"p":"x","s":"y"}`, `[]`, `{"p":"x","t":1,"s":"y"} {}`} {
		_, e1 := parseEnvelope([]byte(raw))
		_, e2 := kwenv.Parse([]byte(raw))
		if (e1 == nil) != (e2 == nil) {
			t.Errorf("%s: SDK %v, server %v", raw, e1, e2)
		}
	}
}
