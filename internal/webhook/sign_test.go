package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The fixed vector is the one the Standard Webhooks specification publishes
// (secret, message id, timestamp, payload and v1 signature); keyward's own
// two signatures of the same input were computed once outside Go:
//
//	printf '%s' '{"test": 2432232314}' | openssl dgst -sha256 -hmac "$secret"
//	printf '%s' '1614265330.{"test": 2432232314}' | openssl dgst -sha256 -hmac "$secret"
//	printf '%s' 'msg_p5jXN8AQM9LWM0D4loKWxJek.1614265330.{"test": 2432232314}' |
//	  openssl dgst -sha256 -mac HMAC -macopt hexkey:$(printf MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw | base64 -d | xxd -p -c 100) -binary | base64
const (
	vecSecret   = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vecID       = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vecUnix     = 1614265330
	vecBody     = `{"test": 2432232314}`
	vecLegacy   = "80ec8a89ce3cd22133a1066caecb4d04fea7467657c8514d717ec42c38a5c94c"
	vecV2       = "t=1614265330,v1=2e37df5d4a028c51a7f3133d64ae1e300d2c2c900f1b1d49d4369ad2530f8964"
	vecStandard = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestHeadersFixedVector(t *testing.T) {
	h := Headers(vecID, vecSecret, 3, time.Unix(vecUnix, 0), []byte(vecBody))
	want := map[string]string{
		"Content-Type":           "application/json",
		"User-Agent":             "keyward-webhooks/1",
		"X-Webhook-Id":           vecID,
		"X-Webhook-Timestamp":    "1614265330",
		"X-Webhook-Attempt":      "3",
		"X-Webhook-Signature":    vecLegacy,
		"X-Webhook-Signature-V2": vecV2,
		"Webhook-Id":             vecID,
		"Webhook-Timestamp":      "1614265330",
		"Webhook-Signature":      vecStandard,
	}
	for k, v := range want {
		if h[k] != v {
			t.Errorf("%s = %q, want %q", k, h[k], v)
		}
	}
	for k := range h {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected header %s: %q", k, h[k])
		}
	}
	if !VerifyV2(vecSecret, vecV2, []byte(vecBody), time.Unix(vecUnix+10, 0)) {
		t.Errorf("VerifyV2 refuses the fixed vector")
	}
}

// independent computations, written from the design note rather than from sign.go.
func hexMAC(key []byte, parts ...string) string {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write([]byte(p))
	}
	return hex.EncodeToString(m.Sum(nil))
}

func stdSignature(t *testing.T, secret, id, ts string, body []byte) string {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatalf("secret %q is not whsec_<base64>: %v", secret, err)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func TestHeadersMatchIndependentComputation(t *testing.T) {
	secret, err := NewSecret(strings.NewReader(strings.Repeat("0123456789abcdef", 4)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("NewSecret = %q, want the whsec_ form", secret)
	}
	at := time.Date(2026, 11, 1, 12, 0, 0, 987_000_000, time.FixedZone("CET", 3600))
	ts := strconv.FormatInt(at.Unix(), 10)
	for _, body := range [][]byte{
		[]byte(`{"event":"key.banned","timestamp":"2026-11-01T11:00:00Z","data":{"reason":"résumé"}}`),
		{},
		{0, 0xff, '\n', '.', 0xc3},
	} {
		h := Headers("whd_0123", secret, 2, at, body)
		var d []string
		check := func(name, want string) {
			if h[name] != want {
				d = append(d, name+" = "+h[name]+", want "+want)
			}
		}
		check("X-Webhook-Id", "whd_0123")
		check("X-Webhook-Attempt", "2")
		check("X-Webhook-Timestamp", ts)
		check("Webhook-Timestamp", ts)
		check("Webhook-Id", "whd_0123")
		check("X-Webhook-Signature", hexMAC([]byte(secret), string(body)))
		check("X-Webhook-Signature-V2", "t="+ts+",v1="+hexMAC([]byte(secret), ts+".", string(body)))
		check("Webhook-Signature", stdSignature(t, secret, "whd_0123", ts, body))
		if len(d) > 0 {
			t.Errorf("body %q:\n  %s", body, strings.Join(d, "\n  "))
		}
		if !VerifyV2(secret, h["X-Webhook-Signature-V2"], body, at) {
			t.Errorf("body %q: VerifyV2 refuses the header Headers made", body)
		}
	}

	// A secret that is not whsec_<base64> still signs (with its own bytes
	// as the Standard Webhooks key) instead of failing.
	h := Headers("whd_x", "plain secret", 1, at, []byte("{}"))
	if want := "v1," + base64.StdEncoding.EncodeToString(mustHex(t, hexMAC([]byte("plain secret"), "whd_x."+ts+".{}"))); h["Webhook-Signature"] != want {
		t.Errorf("Webhook-Signature with a non-base64 secret = %q, want %q", h["Webhook-Signature"], want)
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The timestamp is the attempt's: a later attempt signs a later time, and
// both signatures change with it.
func TestHeadersTimestampIsTheAttempts(t *testing.T) {
	body := []byte(`{"event":"test"}`)
	at := time.Unix(1_800_000_000, 0)
	h1 := Headers("whd_1", vecSecret, 1, at, body)
	h2 := Headers("whd_1", vecSecret, 2, at.Add(time.Minute), body)
	if h2["X-Webhook-Timestamp"] != "1800000060" || h2["Webhook-Timestamp"] != "1800000060" {
		t.Errorf("second attempt timestamps = %q/%q, want 1800000060", h2["X-Webhook-Timestamp"], h2["Webhook-Timestamp"])
	}
	if h1["X-Webhook-Signature"] != h2["X-Webhook-Signature"] {
		t.Errorf("the body-only signature changed between attempts")
	}
	if h1["X-Webhook-Signature-V2"] == h2["X-Webhook-Signature-V2"] || h1["Webhook-Signature"] == h2["Webhook-Signature"] {
		t.Errorf("timestamped signatures did not change with the timestamp")
	}
	if h1["X-Webhook-Id"] != h2["X-Webhook-Id"] {
		t.Errorf("X-Webhook-Id changed between attempts")
	}
}

func v2Header(secret string, ts int64, body string) string {
	t := strconv.FormatInt(ts, 10)
	return "t=" + t + ",v1=" + hexMAC([]byte(secret), t+".", body)
}

func TestVerifyV2(t *testing.T) {
	const secret = "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTMyYg=="
	now := time.Unix(1_800_000_000, 0)
	body := `{"event":"key.created","data":{"count":1}}`
	fresh := v2Header(secret, now.Unix(), body)
	sig := fresh[strings.Index(fresh, "v1=")+3:]
	ts := strconv.FormatInt(now.Unix(), 10)

	for _, c := range []struct {
		name   string
		secret string
		header string
		body   string
		now    time.Time
		want   bool
	}{
		{"fresh", secret, fresh, body, now, true},
		{"fields swapped and spaced", secret, " v1=" + sig + " , t=" + ts, body, now, true},
		{"uppercase hex", secret, "t=" + ts + ",v1=" + strings.ToUpper(sig), body, now, true},
		{"300 s old", secret, v2Header(secret, now.Unix()-300, body), body, now, true},
		{"300 s ahead", secret, v2Header(secret, now.Unix()+300, body), body, now, true},
		{"301 s old", secret, v2Header(secret, now.Unix()-301, body), body, now, false},
		{"301 s ahead", secret, v2Header(secret, now.Unix()+301, body), body, now, false},
		{"old timestamp, checked later", secret, fresh, body, now.Add(301 * time.Second), false},
		{"tampered body", secret, fresh, strings.Replace(body, "1", "2", 1), now, false},
		{"body with a trailing newline", secret, fresh, body + "\n", now, false},
		{"empty body", secret, fresh, "", now, false},
		{"wrong secret", "whsec_other", fresh, body, now, false},
		{"empty secret", "", fresh, body, now, false},
		{"timestamp changed", secret, "t=" + strconv.FormatInt(now.Unix()+1, 10) + ",v1=" + sig, body, now, false},
		{"legacy signature as v1", secret, "t=" + ts + ",v1=" + hexMAC([]byte(secret), body), body, now, false},
		{"empty header", secret, "", body, now, false},
		{"garbage", secret, "garbage", body, now, false},
		{"no timestamp", secret, "v1=" + sig, body, now, false},
		{"no signature", secret, "t=" + ts, body, now, false},
		{"empty signature", secret, "t=" + ts + ",v1=", body, now, false},
		{"non-numeric timestamp", secret, "t=abc,v1=" + sig, body, now, false},
		{"fractional timestamp", secret, "t=" + ts + ".0,v1=" + sig, body, now, false},
		{"non-hex signature", secret, "t=" + ts + ",v1=" + strings.Repeat("zz", 32), body, now, false},
		{"odd-length signature", secret, "t=" + ts + ",v1=" + sig[1:], body, now, false},
		{"truncated signature", secret, "t=" + ts + ",v1=" + sig[:32], body, now, false},
		{"signature with extra bytes", secret, "t=" + ts + ",v1=" + sig + "00", body, now, false},
		{"v0 instead of v1", secret, "t=" + ts + ",v0=" + sig, body, now, false},
		{"semicolons", secret, "t=" + ts + ";v1=" + sig, body, now, false},
		{"huge timestamp", secret, "t=9223372036854775807,v1=" + sig, body, now, false},
		{"timestamp out of range", secret, "t=99999999999999999999,v1=" + sig, body, now, false},
	} {
		if got := VerifyV2(c.secret, c.header, []byte(c.body), c.now); got != c.want {
			t.Errorf("%s: VerifyV2(%q, %q, %q) = %v, want %v", c.name, c.secret, c.header, c.body, got, c.want)
		}
	}
}

func FuzzVerifyV2(f *testing.F) {
	f.Add(vecSecret, vecV2, []byte(vecBody), int64(vecUnix))
	f.Add("", "", []byte{}, int64(0))
	f.Add("s", "t=1,v1=00", []byte("x"), int64(-1))
	f.Add("whsec_AAAA", "t=,v1=,t=5,v1=zz", []byte{0, 1, 2}, int64(1<<62))
	f.Add("s", "t=-9223372036854775808,v1="+strings.Repeat("a", 64), []byte("{}"), int64(-1<<63))
	f.Fuzz(func(t *testing.T, secret, header string, body []byte, unix int64) {
		now := time.Unix(unix, 0)
		VerifyV2(secret, header, body, now) // must not panic, whatever the input

		at := now
		h := Headers("whd_fuzz", secret, 1, at, body)["X-Webhook-Signature-V2"]
		if !VerifyV2(secret, h, body, now) {
			t.Fatalf("VerifyV2 refuses the header Headers built for the body: secret %q, header %q, body %q, now %d", secret, h, body, unix)
		}
		if own := v2Header(secret, unix, string(body)); own != h {
			t.Fatalf("Headers V2 = %q, independent computation %q", h, own)
		}
		if VerifyV2(secret, h, append(append([]byte{}, body...), '!'), now) {
			t.Fatalf("VerifyV2 accepts the header for a longer body: secret %q, body %q", secret, body)
		}
	})
}
