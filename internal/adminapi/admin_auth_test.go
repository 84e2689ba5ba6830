package adminapi_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
)

func admLogin(s *kwtest.Server, body any) *kwtest.Reply {
	s.T.Helper()
	return s.Do("POST", "/api/admin/login.php", http.Header{"Content-Type": {"application/json"}}, kwtest.JSON(s.T, body))
}

// The admin signs in with username and password and gets a JWT that opens
// the admin API.
func TestAdminLoginIssuesWorkingJWT(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		r := admLogin(s, map[string]string{"username": "admin", "password": kwtest.AdminPassword})
		if r.Status != 200 || r.Body["success"] != true {
			t.Fatalf("login: %s", r)
		}
		tok := r.Str("token")
		parts := strings.Split(tok, ".")
		if len(parts) != 3 {
			t.Fatalf("token %q is not a JWT (header.payload.signature)", tok)
		}
		hdr, err := base64.RawURLEncoding.DecodeString(parts[0])
		if err != nil {
			t.Fatalf("JWT header: %v", err)
		}
		var h map[string]any
		if err := json.Unmarshal(hdr, &h); err != nil || h["alg"] != "HS256" {
			t.Fatalf("JWT header %s: want alg HS256", hdr)
		}
		if ct := r.Header.Get("Cache-Control"); ct != "no-store" {
			t.Errorf("login reply Cache-Control %q, want no-store", ct)
		}
		lr := s.Do("GET", "/api/admin/apps.php", kwtest.Bearer(tok), nil)
		if lr.Status != 200 || lr.Body["success"] != true {
			t.Fatalf("apps with fresh token: %s", lr)
		}
		if _, ok := lr.Body["apps"].([]any); !ok {
			t.Fatalf("apps list missing: %s", lr)
		}
	})
}

// A wrong password and an unknown username get the same 401
// INVALID_CREDENTIALS reply, so the login cannot be used to probe usernames.
func TestAdminLoginRefusalsAreIdentical(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		wrong := admLogin(s, map[string]string{"username": "admin", "password": "not the password"})
		wrong.JSONFail(t, 401, "INVALID_CREDENTIALS")
		unknown := admLogin(s, map[string]string{"username": "nobody", "password": kwtest.AdminPassword})
		unknown.JSONFail(t, 401, "INVALID_CREDENTIALS")
		if string(wrong.Raw) != string(unknown.Raw) {
			t.Fatalf("wrong password and unknown user differ:\n%s\n%s", wrong.Raw, unknown.Raw)
		}
		if _, has := wrong.Body["token"]; has {
			t.Fatalf("refusal carries a token: %s", wrong)
		}
		// Case matters: the username is not matched case-insensitively and the
		// password not at all loosely.
		admLogin(s, map[string]string{"username": "ADMIN", "password": kwtest.AdminPassword}).JSONFail(t, 401, "INVALID_CREDENTIALS")
		admLogin(s, map[string]string{"username": "admin", "password": strings.ToUpper(kwtest.AdminPassword)}).JSONFail(t, 401, "INVALID_CREDENTIALS")
	})
}

// Malformed sign-in requests are 400 with a JSON error, never a token.
func TestAdminLoginMalformed(t *testing.T) {
	t.Parallel()
	s := kwtest.Start(t, kwtest.Options{})
	h := http.Header{"Content-Type": {"application/json"}}
	for name, body := range map[string]string{
		"empty body":      ``,
		"no password":     `{"username":"admin"}`,
		"no username":     `{"password":"` + kwtest.AdminPassword + `"}`,
		"empty strings":   `{"username":"","password":""}`,
		"number username": `{"username":42,"password":"x"}`,
		"not an object":   `["admin","pw"]`,
		"invalid JSON":    `{"username":"admin",`,
	} {
		t.Run(name, func(t *testing.T) {
			s.Do("POST", "/api/admin/login.php", h, []byte(body)).JSONFail(t, 400, "MISSING_FIELDS")
		})
	}
}

// Every admin route refuses a request without a valid bearer token with 401
// UNAUTHORIZED, whatever is wrong with the token.
func TestAdminBearerRequired(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine})
		good := s.AdminToken()
		parts := strings.Split(good, ".")

		// Same header and signature, payload claiming another user.
		var claims map[string]any
		raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
		if err := json.Unmarshal(raw, &claims); err != nil {
			t.Fatal(err)
		}
		claims["name"] = "mallory"
		claims["exp"] = claims["exp"].(float64) + 86400*365
		forgedPayload := parts[0] + "." + base64.RawURLEncoding.EncodeToString(kwtest.JSON(t, claims)) + "." + parts[2]

		// Signature with one character in the middle changed.
		sig := []byte(parts[2])
		mid := len(sig) / 2
		if sig[mid] == 'A' {
			sig[mid] = 'B'
		} else {
			sig[mid] = 'A'
		}
		badSig := parts[0] + "." + parts[1] + "." + string(sig)

		// alg "none" with the real claims and no signature.
		none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."

		// A token of another installation (each has its own signing key).
		other := kwtest.Start(t, kwtest.Options{}).AdminToken()

		cases := map[string]http.Header{
			"no header":          {},
			"empty bearer":       {"Authorization": {"Bearer "}},
			"basic scheme":       {"Authorization": {"Basic YWRtaW46cGFzcw=="}},
			"token without word": {"Authorization": {good}},
			"garbage":            {"Authorization": {"Bearer not-a-jwt"}},
			"forged payload":     {"Authorization": {"Bearer " + forgedPayload}},
			"tampered signature": {"Authorization": {"Bearer " + badSig}},
			"alg none":           {"Authorization": {"Bearer " + none}},
			"other installation": {"Authorization": {"Bearer " + other}},
		}
		paths := []string{"/api/admin/apps.php", "/api/admin/keys.php?app_id=x", "/api/admin/sessions.php?app_id=x", "/api/admin/audit.php"}
		for name, h := range cases {
			t.Run(name, func(t *testing.T) {
				for _, p := range paths {
					s.Do("GET", p, h, nil).JSONFail(t, 401, "UNAUTHORIZED")
				}
			})
		}
		// A refused POST changes nothing.
		s.Do("POST", "/api/admin/apps.php", http.Header{"Authorization": {"Bearer " + badSig}}, []byte(`{"name":"Sneaky"}`)).JSONFail(t, 401, "UNAUTHORIZED")
		if apps := s.MustAdmin("GET", "/api/admin/apps.php", nil).List(t, "apps"); len(apps) != 0 {
			t.Fatalf("an unauthenticated POST created an app: %v", apps)
		}
		// The genuine token still works.
		if r := s.Do("GET", "/api/admin/apps.php", kwtest.Bearer(good), nil); r.Status != 200 {
			t.Fatalf("good token refused: %s", r)
		}
	})
}

// A token lasts TokenTTL by the server clock and is refused after it.
func TestAdminTokenExpires(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Start(t, kwtest.Options{Engine: engine, Configure: func(c *config.Config) { c.TokenTTL = time.Hour }})
		tok := admLogin(s, map[string]string{"username": "admin", "password": kwtest.AdminPassword}).Str("token")
		if tok == "" {
			t.Fatal("no token")
		}
		s.Clock.Advance(59 * time.Minute)
		if r := s.Do("GET", "/api/admin/apps.php", kwtest.Bearer(tok), nil); r.Status != 200 {
			t.Fatalf("token refused before its TTL: %s", r)
		}
		s.Clock.Advance(2 * time.Minute)
		s.Do("GET", "/api/admin/apps.php", kwtest.Bearer(tok), nil).JSONFail(t, 401, "UNAUTHORIZED")
		// Signing in again gives a token valid from the new now.
		fresh := admLogin(s, map[string]string{"username": "admin", "password": kwtest.AdminPassword}).Str("token")
		if r := s.Do("GET", "/api/admin/apps.php", kwtest.Bearer(fresh), nil); r.Status != 200 {
			t.Fatalf("fresh token refused: %s", r)
		}
	})
}

// Wrong HTTP methods get a JSON 405 naming the allowed methods, before and
// regardless of authentication.
func TestAdminWrongMethod(t *testing.T) {
	t.Parallel()
	s := kwtest.Start(t, kwtest.Options{})
	cases := []struct {
		method, path, allow string
		auth                bool
	}{
		{"GET", "/api/admin/login.php", "POST", false},
		{"PUT", "/api/admin/login.php", "POST", false},
		{"PATCH", "/api/admin/apps.php", "DELETE, GET, POST, PUT", true},
		{"PATCH", "/api/admin/apps.php", "DELETE, GET, POST, PUT", false},
		{"PATCH", "/api/admin/keys.php", "DELETE, GET, POST, PUT", true},
		{"POST", "/api/admin/sessions.php", "DELETE, GET", true},
		{"PUT", "/api/admin/sessions.php", "DELETE, GET", true},
		{"DELETE", "/api/admin/audit.php", "GET", true},
		{"POST", "/api/admin/audit.php", "GET", false},
	}
	for _, c := range cases {
		h := http.Header{}
		if c.auth {
			h = kwtest.Bearer(s.AdminToken())
		}
		r := s.Do(c.method, c.path, h, nil)
		r.JSONFail(t, 405, "METHOD_NOT_ALLOWED")
		if got := r.Header.Get("Allow"); got != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, got, c.allow)
		}
	}
	// An unknown admin path is a JSON 404.
	s.Do("GET", "/api/admin/nope.php", kwtest.Bearer(s.AdminToken()), nil).JSONFail(t, 404, "NOT_FOUND")
}
