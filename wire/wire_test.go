package wire_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/wire"
)

func encode(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	return string(b)
}

func TestAtEncodesWholeSecondsUTC(t *testing.T) {
	local := time.Date(2026, 11, 1, 13, 0, 0, 987654321, time.FixedZone("CET", 3600))
	if got, want := encode(t, wire.At(local)), `"2026-11-01T12:00:00Z"`; got != want {
		t.Errorf("At = %s, want %s", got, want)
	}
	if got := wire.AtPtr(nil); got != nil {
		t.Errorf("AtPtr(nil) = %v, want nil", got)
	}
	if got, want := encode(t, wire.KeyInfo{}), `"expires_at":null`; !strings.Contains(got, want) {
		t.Errorf("KeyInfo{} = %s, want it to contain %s", got, want)
	}
}

// Presence is part of the contract: fields that are sometimes absent are
// absent, fields that are always sent are sent even when empty.
func TestPresence(t *testing.T) {
	for _, tc := range []struct {
		name         string
		v            any
		has, hasNone []string
	}{
		{"pricing both lists, empty", wire.PricingReply{Success: true, Levels: []wire.Plan{}, Plans: []wire.Plan{}},
			[]string{`"levels":[]`, `"plans":[]`}, nil},
		{"pricing type=plans", wire.PricingReply{Success: true, Plans: []wire.Plan{}}, []string{`"plans":[]`}, []string{`"levels"`}},
		{"no update", wire.UpdateCheckReply{Success: true}, []string{`"update_available":false`}, []string{`"update"`}},
		{"account login without key", wire.AccountLoginReply{}, []string{`"session_id":""`}, []string{`"license_key"`}},
		{"account login with key", wire.AccountLoginReply{LicenseKey: "K"}, []string{`"license_key":"K"`}, nil},
		{"account user without key", wire.AccountUser{}, []string{`"expires_at":null`, `"days_remaining":null`}, []string{`"license_key"`}},
		{"texts", wire.TextsReply{Success: true, Texts: map[string]string{}}, []string{`"texts":{}`}, []string{`"text"`}},
		{"named text unset", wire.TextReply{Success: true, Texts: map[string]string{}}, []string{`"text":null`}, nil},
		{"fulfil without keys", wire.FulfillReply{}, []string{`"license_keys":null`, `"fulfilled_at":null`}, []string{`"license_key"`}},
		{"redeem", wire.RedeemReply{}, []string{`"license_key":""`, `"expires_at":null`}, nil},
		{"no subscription", wire.SubscriptionCheckReply{Success: true}, []string{`"subscription":null`, `"active":false`}, nil},
		{"trial", wire.TrialReply{TrialKey: "T", LicenseKey: "T"}, []string{`"trial_key":"T"`, `"license_key":"T"`, `"hwid":""`}, nil},
		{"customer key sign-in", wire.CustomerKeyReply{Key: &wire.CustomerKey{}},
			[]string{`"key":{`, `"activated_at":null`, `"days_remaining":null`}, []string{`"account"`}},
		{"customer key without files or seats", wire.CustomerKeyReply{Key: &wire.CustomerKey{}}, []string{`"floating":false`},
			[]string{`"seats"`, `"license_files"`}},
		{"customer key sign-in, files", wire.CustomerKeyReply{Key: &wire.CustomerKey{}, LicenseFiles: []wire.LicenseFile{}},
			[]string{`"license_files":[]`}, []string{`"seats"`}},
		{"customer seat borrowed alone", wire.CustomerSeat{}, []string{`"last_heartbeat_at":null`, `"session_id":null`, `"file_id":null`,
			`"valid_until":null`, `"borrowed":false`}, nil},
		{"customer account sign-in", wire.CustomerKeyReply{Account: &wire.CustomerAccount{}},
			[]string{`"account":{`, `"redeemed_keys":null`, `"expires_at":null`}, []string{`"key"`}},
		{"customer order", wire.CustomerOrder{}, []string{`"subscription_id":null`, `"fulfilled_at":null`, `"license_keys":null`}, nil},
		{"reseller last page", wire.ResellerLedgerReply{Entries: []wire.LedgerEntry{}}, []string{`"next_cursor":null`, `"entries":[]`}, nil},
		{"reseller without products", wire.ResellerMeReply{}, []string{`"products":null`, `"app":{"id":"","name":""}`}, nil},
		{"admin plan", wire.AdminPlan{Active: true, Order: 2}, []string{`"active":true`, `"order":2`, `"price_cents":0`, `"features":null`}, []string{`"Plan"`}},
		{"admin subscription", wire.Subscription{LicenseKey: "K"},
			[]string{`"license_key":"K"`, `"email":""`, `"renewal_order_id":null`, `"cancel_at_period_end":false`}, nil},
		{"admin slide", wire.AdminSlide{}, []string{`"starts_at":null`, `"active":false`, `"created_at":""`}, []string{`"Slide"`}},
		{"admin changelog draft", wire.AdminChangelogEntry{}, []string{`"published_at":null`, `"published":false`}, nil},
		{"admin account", wire.AdminAccount{}, []string{`"license_key":""`, `"last_login_at":null`, `"features":null`}, nil},
		{"account action", wire.AccountReply{}, nil, []string{`"temporary_password"`}},
		{"trial of a deleted key", wire.Trial{}, []string{`"license_key":null`, `"status":null`, `"expires_at":null`}, nil},
		{"accounts last page", wire.AccountListReply{}, []string{`"next_cursor":null`}, nil},
	} {
		got := encode(t, tc.v)
		for _, s := range tc.has {
			if !strings.Contains(got, s) {
				t.Errorf("%s: %s lacks %s", tc.name, got, s)
			}
		}
		for _, s := range tc.hasNone {
			if strings.Contains(got, s) {
				t.Errorf("%s: %s has %s", tc.name, got, s)
			}
		}
	}
}

func TestKillCodes(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range wire.KillCodes {
		if seen[c] || c == "" {
			t.Errorf("kill code %q repeated or empty", c)
		}
		seen[c] = true
	}
	if len(seen) != 8 || seen[wire.CodeHWIDMismatch] || seen[wire.CodeInvalidKey] {
		t.Errorf("KillCodes = %v, want the eight session kill codes only", wire.KillCodes)
	}
}
