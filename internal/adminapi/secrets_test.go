package adminapi_test

import (
	"database/sql"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
)

// Secrets at rest (keyward issue 20, item 11): app secrets, TOTP secrets,
// webhook signing secrets, the JWT keys and stored login replies are sealed
// under the secret key file. A raw read of each column never shows the
// plaintext, after creation and after the start-up migration of rows written
// in plaintext by an older keyward, and everything keeps working: client
// login with the app secret, a replayed login, TOTP sign-in, JWTs, webhook
// signatures. Helpers start with sec.

// secDB is a plain database/sql handle on a test server's database.
type secDB struct {
	*sql.DB
	pg bool
}

// secRaw opens a plain database/sql handle on s's database.
func secRaw(t *testing.T, s *kwtest.Server) secDB {
	t.Helper()
	return secDB{s.RawDB(t), s.DatabaseURL != ""}
}

// q turns ? placeholders into $n on PostgreSQL.
func (d secDB) q(query string) string {
	for i := 1; d.pg && strings.Contains(query, "?"); i++ {
		query = strings.Replace(query, "?", "$"+strconv.Itoa(i), 1)
	}
	return query
}

// exec runs a statement, failing the test on error.
func (d secDB) exec(t *testing.T, query string, args ...any) {
	t.Helper()
	if _, err := d.Exec(d.q(query), args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// secValues reads one text column of the rows a query selects.
func secValues(t *testing.T, raw secDB, q string, args ...any) []string {
	t.Helper()
	rows, err := raw.Query(raw.q(q), args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v sql.NullString
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v.String)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// secSecrets is what one test stored: the plaintexts a raw read must not show.
type secSecrets struct {
	appID, appSecret, admin, totp, session string
	hookID                                 int64
	hook                                   string
}

// secAssertSealed fails unless every secret column read raw is sealed
// ("kw1:…") and shows none of the plaintexts.
func secAssertSealed(t *testing.T, when string, raw secDB, sec secSecrets) {
	t.Helper()
	check := func(what string, vals []string, min int, plains ...string) {
		t.Helper()
		if len(vals) < min {
			t.Fatalf("%s: %s: %d rows, want at least %d", when, what, len(vals), min)
		}
		for _, v := range vals {
			if !strings.HasPrefix(v, "kw1:") {
				t.Errorf("%s: %s stored as %q, want a sealed kw1: value", when, what, v)
			}
			for _, p := range plains {
				if p != "" && strings.Contains(v, p) {
					t.Errorf("%s: %s holds the plaintext %q", when, what, p)
				}
			}
		}
	}
	check("apps.secret", secValues(t, raw, `SELECT secret FROM apps WHERE id = ?`, sec.appID), 1, sec.appSecret)
	check("admin_users.totp_secret", secValues(t, raw, `SELECT totp_secret FROM admin_users WHERE username = ?`, sec.admin), 1, sec.totp)
	check("webhook_destinations.secret", secValues(t, raw, `SELECT secret FROM webhook_destinations WHERE id = ?`, sec.hookID), 1,
		sec.hook, strings.TrimPrefix(sec.hook, "whsec_"))
	// jwt_key, customer_jwt_key and the key check.
	check("server_secrets.value", secValues(t, raw, `SELECT value FROM server_secrets`), 2)
	check("envelope_replays.reply", secValues(t, raw, `SELECT reply FROM envelope_replays WHERE app_id = ? AND reply IS NOT NULL`, sec.appID), 1,
		sec.session, "session_id")
}

// secLogin posts one login envelope twice (the second is a replay) and
// returns the session id, failing unless both answers carry it.
func secLogin(t *testing.T, app *kwtest.App, env []byte) string {
	t.Helper()
	r1 := app.PostEnvelope("/api/auth/login.php", env)
	r2 := app.PostEnvelope("/api/auth/login.php", env)
	if !r1.Sealed || r1.Body["success"] != true || r1.Str("session_id") == "" {
		t.Fatalf("login: %s", r1)
	}
	if !r2.Sealed || r2.Str("session_id") != r1.Str("session_id") {
		t.Fatalf("replayed login answered %s, want the first reply (session %s)", r2, r1.Str("session_id"))
	}
	return r1.Str("session_id")
}

// secWebhookSigned queues a test delivery to destination id, sends it and
// fails unless the receiver got it signed with secret.
func secWebhookSigned(t *testing.T, s *kwtest.Server, rx *whReceiver, id int64, secret string) {
	t.Helper()
	n := rx.Count()
	whTest(t, s, id)
	whRun(t, s)
	got := rx.Since(n)
	if len(got) == 0 {
		t.Fatal("receiver got no request, want the test delivery")
	}
	for _, req := range got {
		if bad := whBadSignatures(req, secret); len(bad) > 0 {
			t.Fatalf("webhook signatures %v do not verify with the destination secret", bad)
		}
	}
}

func TestSecretsAtRest(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		raw := secRaw(t, s)
		app := s.CreateApp("Sealed")
		key := app.GenerateKeys(1, "lifetime", 0, 1)[0]
		env := app.Seal(map[string]any{"license_key": key, "hwid": "hw-sealed"}).Marshal()
		sec := secSecrets{appID: app.ID, appSecret: app.Secret, admin: "sealer"}
		sec.session = secLogin(t, app, env)
		if r := app.Heartbeat(sec.session, key); r.Body["success"] != true {
			t.Fatalf("heartbeat: %s", r)
		}

		tok := s.TwoFactorUser(t, sec.admin)
		sec.totp, _ = s.EnableTwoFactor(t, tok)
		tfSignedIn(t, s, "TOTP sign-in", tfSecond(s, s.TwoFactorStep1(t, sec.admin), kwtest.TOTP(t, sec.totp, s.Clock.Now())))

		rx := whNewReceiver(t)
		sec.hookID, sec.hook = whCreate(t, s, map[string]any{"app_id": app.ID, "url": rx.URL, "events": []string{"key.created"}})
		secWebhookSigned(t, s, rx, sec.hookID, sec.hook)

		secAssertSealed(t, "after create", raw, sec)

		// An older keyward wrote every secret in plaintext: put the
		// plaintexts back, then start another process on the database.
		raw.exec(t, `UPDATE apps SET secret = ? WHERE id = ?`, app.Secret, app.ID)
		raw.exec(t, `UPDATE admin_users SET totp_secret = ? WHERE username = ?`, sec.totp, sec.admin)
		raw.exec(t, `UPDATE webhook_destinations SET secret = ? WHERE id = ?`, sec.hook, sec.hookID)
		for _, name := range []string{"jwt_key", "customer_jwt_key"} {
			for _, v := range secValues(t, raw, `SELECT value FROM server_secrets WHERE name = ?`, name) {
				plain, err := kwtest.SecretKeys.OpenString("server_secrets.value", name, v)
				if err != nil {
					t.Fatalf("open %s: %v", name, err)
				}
				raw.exec(t, `UPDATE server_secrets SET value = ? WHERE name = ?`, plain, name)
			}
		}
		mac := secValues(t, raw, `SELECT mac FROM envelope_replays WHERE app_id = ?`, app.ID)[0]
		reply := secValues(t, raw, `SELECT reply FROM envelope_replays WHERE app_id = ?`, app.ID)[0]
		plainReply, err := kwtest.SecretKeys.OpenString("envelope_replays.reply", app.ID+"/"+mac, reply)
		if err != nil || !strings.Contains(plainReply, sec.session) {
			t.Fatalf("open the stored login reply: %q, %v", plainReply, err)
		}
		raw.exec(t, `UPDATE envelope_replays SET reply = ? WHERE app_id = ? AND mac = ?`, plainReply, app.ID, mac)

		s2 := kwtest.Start(t, kwtest.Options{Engine: engine, DatabaseURL: s.DatabaseURL, DataDir: s.DataDir, Clock: s.Clock})
		secAssertSealed(t, "after the start-up migration", raw, sec)

		// Everything still works on the migrated rows.
		app2 := s2.NewApp(app.ID, app.Secret)
		if got := secLogin(t, app2, env); got != sec.session {
			t.Fatalf("replayed login on the migrated reply opened session %s, want %s", got, sec.session)
		}
		if r := app2.Heartbeat(sec.session, key); r.Body["success"] != true {
			t.Fatalf("heartbeat after migration: %s", r)
		}
		if p := s2.AdminAs(tok, "GET", tfProfile, nil); p.Status != 200 {
			t.Fatalf("a JWT signed before the migration is refused after it: %s", p)
		}
		s2.Clock.Advance(30 * time.Second)
		tfSignedIn(t, s2, "TOTP sign-in after migration", tfSecond(s2, s2.TwoFactorStep1(t, sec.admin), kwtest.TOTP(t, sec.totp, s2.Clock.Now())))
		secWebhookSigned(t, s2, rx, sec.hookID, sec.hook)
	})
}
