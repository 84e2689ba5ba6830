package license

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// mergeKey: the file's fields win where it gives them; a file's unused
// keeps an activation made here; a redeemed key keeps its status unless
// banned; status changes go through the admin actions.
func TestMergeKey(t *testing.T) {
	now := time.Date(2026, 11, 10, 0, 0, 0, 0, time.UTC)
	act, exp := ts("2026-11-01T00:00:00Z"), ts("2026-12-01T00:00:00Z")
	active := Key{ID: 1, LicenseKey: "K", Status: StatusActive, Type: TypeDays, Duration: 30, MaxDevices: 2, Note: "n",
		Features: []byte(`{"a":1}`), ActivatedAt: act, ExpiresAt: exp}
	unused := Key{ID: 2, LicenseKey: "K", Status: StatusUnused, Type: TypeDays, Duration: 30, MaxDevices: 1}
	with := func(k Key, f func(*Key)) Key { f(&k); return k }
	cases := []struct {
		name    string
		key     Key
		devs    []string
		csv     string // header + one row
		actions []string
		fields  string // changed fields, in order
		check   func(n Key) bool
		problem string // field of the problem
	}{
		{name: "status only: ban", key: active, csv: "key,status\nK,banned", actions: []string{ActionBan}, fields: "status",
			check: func(n Key) bool { return n.Status == StatusBanned && n.ExpiresAt.Equal(*exp) && n.Note == "n" }},
		{name: "unban to active", key: with(active, func(k *Key) { k.Status = StatusBanned }), csv: "key,status\nK,Active",
			actions: []string{ActionUnban}, fields: "status"},
		{name: "paused to banned", key: with(active, func(k *Key) { k.Status = StatusPaused }), csv: "key,status\nK,revoked",
			actions: []string{ActionBan}, fields: "status"},
		{name: "banned to paused", key: with(active, func(k *Key) { k.Status = StatusBanned }), csv: "key,status\nK,suspended",
			actions: []string{ActionUnban, ActionPause}, fields: "status"},
		{name: "paused to active", key: with(active, func(k *Key) { k.Status = StatusPaused }), csv: "key,status\nK,active",
			actions: []string{ActionResume}, fields: "status"},
		{name: "unused in the file, activated here", key: active, csv: "key,status,expires,note\nK,unused,,n", fields: ""},
		{name: "activated in the file", key: unused, csv: "key,status,activated_at,expires_at\nK,active,2026-11-05,2026-12-05",
			fields: "status,activated_at,expires_at",
			check:  func(n Key) bool { return n.Status == StatusActive && n.ExpiresAt.Equal(*ts("2026-12-05T00:00:00Z")) }},
		{name: "activated without expiry: from the duration", key: unused, csv: "key,status\nK,active",
			fields: "status,activated_at,expires_at",
			check:  func(n Key) bool { return n.ActivatedAt.Equal(now) && n.ExpiresAt.Equal(now.Add(30*24*time.Hour)) }},
		{name: "to lifetime", key: active, csv: "key,expires\nK,never", fields: "key_type,duration,expires_at",
			check: func(n Key) bool { return n.Type == TypeLifetime && n.ExpiresAt == nil && n.Duration == 0 }},
		{name: "extended", key: active, csv: "key,expires_at\nK,2027-01-01 00:00:00", fields: "expires_at"},
		{name: "seats, note, features", key: active, csv: "key,seats,note,features\nK,3,,\"{\"\"b\"\":true}\"",
			fields: "max_devices,note,features", check: func(n Key) bool { return n.Note == "" && string(n.Features) == `{"b":true}` }},
		{name: "devices added", key: active, devs: []string{"pc-1"}, csv: "key,hwids\nK,pc-1;pc-2", fields: "hwids"},
		{name: "redeemed keeps its status", key: with(active, func(k *Key) { k.Status = StatusRedeemed }),
			csv: "key,status,expires\nK,active,2030-01-01", fields: ""},
		{name: "redeemed banned", key: with(active, func(k *Key) { k.Status = StatusRedeemed }),
			csv: "key,status,expires\nK,banned,2030-01-01", actions: []string{ActionBan}, fields: "status",
			check: func(n Key) bool { return n.ExpiresAt.Equal(*exp) }},
		{name: "made redeemed", key: active, csv: "key,status\nK,redeemed", problem: "status"},
		{name: "expired without expiry", key: unused, csv: "key,status\nK,expired", problem: "expires_at"},
		{name: "active days, no expiry, no duration", key: with(unused, func(k *Key) { k.Duration = 0 }),
			csv: "key,status\nK,active", problem: "expires_at"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := ParseKeyCSV(strings.NewReader(c.csv + "\n"))
			if p.ErrorCount != 0 || len(p.Rows) != 1 {
				t.Fatalf("parse: %v", p.Errors)
			}
			var devs []Device
			for _, h := range c.devs {
				devs = append(devs, Device{HWID: h})
			}
			k := c.key
			m, field, msg := mergeKey(&k, devs, &p.Rows[0], now)
			if field != c.problem || (msg != "") != (c.problem != "") {
				t.Fatalf("problem %q %q, want on %q", field, msg, c.problem)
			}
			if c.problem != "" {
				return
			}
			var fields []string
			for _, f := range m.changes {
				fields = append(fields, f.Field)
			}
			if strings.Join(fields, ",") != c.fields || !reflect.DeepEqual(m.actions, c.actions) {
				t.Fatalf("changes %v, actions %v; want %s, %v", m.changes, m.actions, c.fields, c.actions)
			}
			if c.check != nil && !c.check(m.next) {
				t.Fatalf("next = %+v", m.next)
			}
			if !reflect.DeepEqual(k, c.key) {
				t.Fatal("mergeKey changed the key it was given")
			}
		})
	}
}
