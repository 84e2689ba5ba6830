package portal_test

import (
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

const cuFiles = "/api/customer/license-files.php"

// cuSeats are the machines of key.php's seats, by hwid, after checking
// seats_in_use and max_devices.
func cuSeats(t *testing.T, v *kwtest.Reply, inUse, max int) map[string]map[string]any {
	t.Helper()
	v.OK(t)
	seats := v.Obj("seats")
	if seats == nil || seats["seats_in_use"] != float64(inUse) || seats["max_devices"] != float64(max) {
		t.Fatalf("seats %v, want %d of %d in use", v.Body["seats"], inUse, max)
	}
	ms, _ := seats["machines"].([]any)
	if len(ms) != inUse {
		t.Fatalf("%d machines listed, %d seats in use: %v", len(ms), inUse, ms)
	}
	out := map[string]map[string]any{}
	for _, m := range ms {
		mm := m.(map[string]any)
		out[mm["hwid"].(string)] = mm
	}
	return out
}

// TestCustomerFloatingSeats: the customer portal shows a floating key's
// seats and license files and returns a borrowed seat. With 3 seats, two
// machines logged in and one holding a borrowed license file, key.php shows
// 3 of 3 seats (the sessions with their heartbeats, the borrow with its
// file id and no heartbeat) and the file; a fourth machine is refused until
// the customer returns the borrow through license-files.php, after which it
// logs in; the return is audited as the customer's. Another key's file, an
// unknown id, an account's token are 404 and change nothing; bad requests
// are 400. A key that is not floating shows its files and no seats.
func TestCustomerFloatingSeats(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine, ReapEvery: time.Hour})
		app := s.CreateApp("Team seats")
		app.OfflineOn(t, 24)
		key := app.FloatingKey(t, 3)
		other := app.FloatingKey(t, 3)

		_, fr := app.MustFile(t, key, "laptop")
		borrow := fr.Str("session_id")
		issuedAt := s.Clock.Now()
		s.Clock.Advance(time.Minute)
		app.Login(key, "m-1")
		app.Login(key, "m-2")
		app.LoginReply(key, "m-3").SeatsFull(t, 3)

		tok := cuToken(t, s, app.ID, key)
		v := s.BearerDo(tok, "GET", kwtest.PathCustomerKey, nil)
		if k := v.Obj("key"); k["floating"] != true || k["max_devices"] != float64(3) {
			t.Fatalf("key view %v", k)
		}
		ms := cuSeats(t, v, 3, 3)
		for _, h := range []string{"m-1", "m-2"} {
			m := ms[h]
			if m == nil || m["borrowed"] != false || m["session_id"] == nil || m["file_id"] != nil || m["valid_until"] != nil ||
				m["last_heartbeat_at"] == nil || !kwtest.WireTime(t, "since", m["since"]).Equal(s.Clock.Now()) {
				t.Fatalf("seat of %s: %v", h, m)
			}
		}
		if m := ms["laptop"]; m == nil || m["borrowed"] != true || m["file_id"] != borrow || m["session_id"] != nil ||
			m["last_heartbeat_at"] != nil || !kwtest.WireTime(t, "since", m["since"]).Equal(issuedAt) ||
			!kwtest.WireTime(t, "valid_until", m["valid_until"]).Equal(issuedAt.Add(24*time.Hour)) {
			t.Fatalf("borrowed seat: %v", m)
		}
		files := v.List(t, "license_files")
		if len(files) != 1 || files[0]["id"] != borrow || files[0]["hwid"] != "laptop" || files[0]["returned_at"] != nil ||
			files[0]["revoked_at"] != nil || files[0]["floating"] != true {
			t.Fatalf("license files %v", files)
		}
		// The seats the portal shows are the ones the admin detail counts.
		if d := app.KeyView(t, key); d["seats_in_use"] != float64(3) || d["borrowed_seats"] != float64(1) {
			t.Fatalf("admin detail seats_in_use %v borrowed_seats %v", d["seats_in_use"], d["borrowed_seats"])
		}

		// Another key's borrowed file is not this customer's: 404, still held.
		_, or := app.MustFile(t, other, "desk")
		otherBorrow := or.Str("session_id")
		kwtest.ExpectCode(t, s.BearerDo(tok, "POST", cuFiles, map[string]any{"id": otherBorrow, "action": "return"}), 404, "NOT_FOUND")
		if of := app.KeyFiles(t, other); len(of) != 1 || of[0]["returned_at"] != nil {
			t.Fatalf("other key's file after a refused return: %v", of)
		}
		kwtest.ExpectCode(t, s.BearerDo(tok, "POST", cuFiles, map[string]any{"id": "no-such-file", "action": "return"}), 404, "NOT_FOUND")
		kwtest.ExpectCode(t, s.BearerDo(tok, "POST", cuFiles, map[string]any{"id": borrow, "action": "revoke"}), 400, "MISSING_FIELDS")
		kwtest.ExpectCode(t, s.BearerDo(tok, "POST", cuFiles, map[string]any{"action": "return"}), 400, "MISSING_FIELDS")
		kwtest.ExpectCode(t, s.BearerDo(tok, "POST", cuFiles, map[string]any{"id": 7, "action": "return"}), 400, "MISSING_FIELDS")
		kwtest.ExpectCode(t, s.BearerDo("", "POST", cuFiles, map[string]any{"id": borrow, "action": "return"}), 401, "UNAUTHORIZED")
		kwtest.ExpectCode(t, s.BearerDo(tok, "GET", cuFiles, nil), 405, "METHOD_NOT_ALLOWED")
		app.LoginReply(key, "m-3").SeatsFull(t, 3)

		// The customer returns the borrow: its seat frees at once.
		r := s.BearerDo(tok, "POST", cuFiles+"?action=return", map[string]any{"id": borrow})
		r.OK(t)
		if f := r.Obj("file"); f["id"] != borrow || f["returned_at"] == nil {
			t.Fatalf("return reply %s", r)
		}
		app.Login(key, "m-3")
		ms = cuSeats(t, s.BearerDo(tok, "GET", kwtest.PathCustomerKey, nil), 3, 3)
		if ms["laptop"] != nil || ms["m-3"] == nil {
			t.Fatalf("seats after the return: %v", ms)
		}
		// Returning again is fine.
		s.BearerDo(tok, "POST", cuFiles, map[string]any{"id": borrow, "action": "return"}).OK(t)
		var returned bool
		for _, e := range s.MustAdmin("GET", "/api/admin/audit.php?app_id="+app.ID+"&limit=500", nil).Body["entries"].([]any) {
			e := e.(map[string]any)
			actor := e["actor"].(map[string]any)
			if e["action"] == "license_file.return" {
				if e["target"] != borrow || actor["kind"] != "customer" || returned {
					t.Fatalf("return audit entry %v", e)
				}
				returned = true
			}
		}
		if !returned {
			t.Fatal("no license_file.return audit entry")
		}

		// A key that is not floating: its files, no seats.
		fixed := app.GenerateKeys(1, "lifetime", 0, 2)[0]
		app.MustFile(t, fixed, "pc")
		v = s.BearerDo(cuToken(t, s, app.ID, fixed), "GET", kwtest.PathCustomerKey, nil)
		v.OK(t)
		if _, ok := v.Body["seats"]; ok || v.Obj("key")["floating"] != false || len(v.List(t, "license_files")) != 1 {
			t.Fatalf("fixed key view %s", v)
		}
		plain := app.GenerateKeys(1, "lifetime", 0, 1)[0]
		v = s.BearerDo(cuToken(t, s, app.ID, plain), "GET", kwtest.PathCustomerKey, nil)
		if fs, ok := v.Body["license_files"].([]any); !ok || len(fs) != 0 {
			t.Fatalf("a key without files: license_files = %v", v.Body["license_files"])
		}
	})
}
