package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// Headers are the delivery headers of one attempt (design note, "Headers"):
// keyward's own X-Webhook-* set, keyed with the destination secret as a
// string, and the Standard Webhooks set, keyed with the secret's decoded
// bytes as those libraries expect ("whsec_<base64>"). The timestamp is the
// attempt's, the same integer everywhere.
func Headers(deliveryID, secret string, attempt int, at time.Time, body []byte) map[string]string {
	t := strconv.FormatInt(at.Unix(), 10)
	legacy := hmac.New(sha256.New, []byte(secret))
	legacy.Write(body)
	v2 := hmac.New(sha256.New, []byte(secret))
	v2.Write([]byte(t + "."))
	v2.Write(body)
	std := hmac.New(sha256.New, standardKey(secret))
	std.Write([]byte(deliveryID + "." + t + "."))
	std.Write(body)
	return map[string]string{
		"Content-Type":           "application/json",
		"User-Agent":             "keyward-webhooks/1",
		"X-Webhook-Id":           deliveryID,
		"X-Webhook-Timestamp":    t,
		"X-Webhook-Attempt":      strconv.Itoa(attempt),
		"X-Webhook-Signature":    hex.EncodeToString(legacy.Sum(nil)),
		"X-Webhook-Signature-V2": "t=" + t + ",v1=" + hex.EncodeToString(v2.Sum(nil)),
		"Webhook-Id":             deliveryID,
		"Webhook-Timestamp":      t,
		"Webhook-Signature":      "v1," + base64.StdEncoding.EncodeToString(std.Sum(nil)),
	}
}

// standardKey is the HMAC key Standard Webhooks libraries derive from a
// "whsec_<base64>" secret.
func standardKey(secret string) []byte {
	if b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_")); err == nil {
		return b
	}
	return []byte(secret)
}

// Tolerance is how old a signed timestamp a receiver should accept.
const Tolerance = 300 * time.Second

// VerifyV2 checks an X-Webhook-Signature-V2 header the way a receiver should:
// the MAC of "<t>.<body>" compared in constant time, and t within Tolerance
// of now. It is what docs/webhooks.md shows receivers.
func VerifyV2(secret, header string, body []byte, now time.Time) bool {
	var t, sig string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			t = v
		case "v1":
			sig = v
		}
	}
	ts, err := strconv.ParseInt(t, 10, 64)
	if err != nil || sig == "" {
		return false
	}
	if d := now.Sub(time.Unix(ts, 0)); d > Tolerance || d < -Tolerance {
		return false
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(t + "."))
	m.Write(body)
	return hmac.Equal(got, m.Sum(nil))
}
