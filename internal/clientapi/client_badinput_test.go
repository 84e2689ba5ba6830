package clientapi_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/envelope"
	"github.com/keyward/keyward/internal/kwtest"
)

// Bad input against every client route: each is refused with a 4xx JSON
// failure carrying the expected error_code and a message free of internals,
// and none of them changes anything.

// clRoute describes one client route for the bad-input table.
type clRoute struct {
	path string
	// transport: "env" (envelope only), "mirror" (check-key) or "plain".
	transport string
	// wrongTypes and missing are inner bodies that must be refused with
	// MISSING_FIELDS before anything happens.
	wrongTypes []map[string]any
	missing    []map[string]any
}

func clRoutes(unused, active, sid string) []clRoute {
	return []clRoute{
		{path: kwtest.PathLogin, transport: "env",
			wrongTypes: []map[string]any{
				{"license_key": 12345, "hwid": "pc"},
				{"license_key": unused, "hwid": map[string]any{"id": "pc"}},
				{"license_key": unused, "hwid": 7},
				{"license_key": []any{unused}, "hwid": "pc"},
				{"license_key": true, "hwid": "pc"},
				{"license_key": unused, "hwid": strings.Repeat("x", 257)},
				// NUL characters (JSON \u0000) cannot be stored by PostgreSQL.
				{"license_key": unused, "hwid": "pc\x00"},
				{"license_key": unused + "\x00", "hwid": "pc"},
			},
			missing: []map[string]any{{}, {"license_key": unused}, {"hwid": "pc"}, {"license_key": "", "hwid": "pc"}}},
		{path: kwtest.PathHeartbeat, transport: "env",
			wrongTypes: []map[string]any{
				{"session_id": 1, "license_key": active},
				{"session_id": sid, "license_key": 42},
				{"session_id": sid, "license_key": map[string]any{}},
				{"session_id": []any{sid}},
				{"session_id": sid + "\x00", "license_key": active},
				{"session_id": sid, "license_key": active + "\x00"},
			},
			missing: []map[string]any{{}, {"license_key": active}, {"session_id": ""}}},
		{path: kwtest.PathLogout, transport: "env",
			wrongTypes: []map[string]any{{"session_id": 99}, {"session_id": map[string]any{"id": sid}}, {"session_id": false},
				{"session_id": sid + "\x00"}},
			missing: []map[string]any{{}, {"license_key": active}, {"session_id": nil}}},
		{path: kwtest.PathCheckKey, transport: "mirror",
			wrongTypes: []map[string]any{{"license_key": 1}, {"license_key": map[string]any{}}, {"license_key": []any{}},
				{"license_key": "\x00" + active}},
			missing: []map[string]any{{}, {"hwid": "pc"}, {"license_key": "  "}}},
		{path: kwtest.PathValidate, transport: "plain",
			wrongTypes: []map[string]any{{"license_key": 1.5}, {"license_key": []any{active}}, {"license_key": active + "\x00"}},
			missing:    []map[string]any{{}, {"license_key": nil}}},
		{path: kwtest.PathRequestHWID, transport: "plain",
			wrongTypes: []map[string]any{
				{"license_key": 5},
				{"license_key": active, "username": 5},
				{"license_key": active, "hwid": map[string]any{}},
				{"license_key": active, "reason": []any{"x"}},
				{"license_key": active, "reason": "New\x00PC"},
				{"license_key": active, "hwid": "\x00"},
				{"license_key": active + "\x00"},
				{"username": "a\x00b"},
			},
			missing: []map[string]any{{}, {"reason": "New PC"}, {"hwid": "pc"}}},
		{path: kwtest.PathSelfReset, transport: "plain",
			wrongTypes: []map[string]any{
				{"key": 5},
				{"key": active, "reason": 5},
				{"license_key": map[string]any{}},
				{"key": true, "license_key": active},
				{"key": active, "reason": "x\x00"},
				{"key": active + "\x00"},
			},
			missing: []map[string]any{{}, {"reason": "Reset from app"}, {"key": "", "reason": "x"}}},
	}
}

func TestClientBadInput(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Bad")
		keys := a.GenerateKeys(2, "lifetime", 0, 1)
		unused, active := keys[0], keys[1]
		sid := a.Login(active, "pc")

		for _, rt := range clRoutes(unused, active, sid) {
			t.Run(rt.path, func(t *testing.T) {
				a := clAppOn(t, a)
				s := a.S

				// Wrong methods: 405 JSON with Allow, secret or not.
				for _, m := range []string{"GET", "PUT", "DELETE", "PATCH", "OPTIONS"} {
					for _, h := range []http.Header{kwtest.AppHeader(a.Secret), nil} {
						r := s.Do(m, rt.path, h, []byte(`{"license_key":"`+active+`"}`))
						r.Refused(t, m, 405, "METHOD_NOT_ALLOWED")
						if r.Header.Get("Allow") != "POST" {
							t.Fatalf("%s: Allow = %q", m, r.Header.Get("Allow"))
						}
					}
				}
				if resp, err := kwtest.HTTP.Head(s.URL + rt.path); err != nil || resp.StatusCode != 405 {
					t.Fatalf("HEAD: %v %v", resp, err)
				} else {
					resp.Body.Close()
				}

				// Missing secret: plain 401 INVALID_APP, whatever the body.
				for _, body := range [][]byte{nil, []byte(`{}`), a.Seal(map[string]any{"license_key": active}).Marshal()} {
					s.Do("POST", rt.path, http.Header{"Content-Type": {"application/json"}}, body).Refused(t, "no secret",
						401, "INVALID_APP")

				}

				// Not JSON, or JSON that is not an object.
				for _, body := range []string{`{"license_key":`, `not json`, `{'license_key':'x'}`, `[]`, `[{"license_key":"x"}]`,
					`"license_key"`, `null`, `42`, `true`, "\xff\xfe{}", `{"license_key":"x"} trailing`} {
					r := s.Do("POST", rt.path, kwtest.AppHeader(a.Secret), []byte(body))
					if rt.transport == "env" {
						r.Refused(t, body, 400, "CRYPTO_ERROR")
					} else {
						r.Refused(t, body, 400, "MISSING_FIELDS")
					}
					if envelope.IsEnvelope(r.Raw) {
						t.Fatalf("%q: refusal enveloped", body)
					}
				}

				// Wrong field types and missing fields: MISSING_FIELDS, sealed
				// when the request was.
				for _, group := range [][]map[string]any{rt.wrongTypes, rt.missing} {
					for _, inner := range group {
						what := string(kwtest.JSON(t, inner))
						if len(what) > 80 {
							what = what[:80]
						}
						if rt.transport != "plain" {
							r := a.Env(rt.path, inner)
							if !r.Sealed {
								t.Fatalf("%s sealed: reply not sealed: %s", what, r)
							}
							r.Refused(t, what+" sealed", 200, "MISSING_FIELDS")
						}
						if rt.transport != "env" {
							r := a.Plain(rt.path, inner)
							if r.Sealed {
								t.Fatalf("%s: plain request got a sealed reply", what)
							}
							r.Refused(t, what, 400, "MISSING_FIELDS")
						}
					}
				}

				// Bodies over 64 KiB: BODY_TOO_LARGE, with or without a length.
				big := []byte(`{"license_key":"` + active + `","pad":"` + strings.Repeat("a", kwtest.ClientBodyLimit) + `"}`)
				s.Do("POST", rt.path, kwtest.AppHeader(a.Secret), big).Refused(t, "large", 400, "BODY_TOO_LARGE")
				clChunked(t, s, rt.path, a.Secret, big).Refused(t, "large chunked", 400, "BODY_TOO_LARGE")
				huge := bytes.Repeat([]byte(" "), 4<<20)
				clChunked(t, s, rt.path, a.Secret, huge).Refused(t, "huge", 400, "BODY_TOO_LARGE")
			})
		}

		// Nothing changed: the unused key is unused and unbound, the active
		// key keeps its one device and one live session, nothing was queued
		// or reset.
		k := a.KeyView(t, unused)
		if k["status"] != "unused" || len(k["devices"].([]any)) != 0 || k["activated_at"] != nil {
			t.Fatalf("unused key changed: %v", k)
		}
		k = a.KeyView(t, active)
		if len(k["devices"].([]any)) != 1 || len(k["sessions"].([]any)) != 1 || k["last_self_reset_at"] != nil {
			t.Fatalf("active key changed: %v", k)
		}
		a.BeatOK(t, sid, active)
		if n := len(a.Sessions(t, "")); n != 1 {
			t.Fatalf("%d live sessions, want 1", n)
		}
		evs, err := s.DB.Events(context.Background(), 0, 10000)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			// A burst of rejected envelopes is reported, by design (abuse detection).
			burst := e.Type == "suspicious_activity" && e.Data["reason"] == "envelope_failures"
			if e.AppID == a.ID && e.Type != "key.created" && e.Type != "key.activated" && !burst {
				t.Fatalf("bad input caused event %s %v", e.Type, e.Data)
			}
		}
	})
}

// clChunked POSTs body with no Content-Length (chunked) and decodes the reply.
func clChunked(t testing.TB, s *kwtest.Server, path, secret string, body []byte) *kwtest.Reply {
	t.Helper()
	req, err := http.NewRequest("POST", s.URL+path, io.MultiReader(bytes.NewReader(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = kwtest.AppHeader(secret)
	return s.Send(req)
}

// The body limit is exactly 64 KiB: a body of that size is read, one byte
// more is refused.
func TestClientBodyLimitBoundary(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Limit")
		key := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		sized := func(n int) []byte {
			head := `{"license_key":"` + key + `","pad":"`
			return []byte(head + strings.Repeat("a", n-len(head)-2) + `"}`)
		}
		for _, path := range []string{kwtest.PathCheckKey, kwtest.PathValidate} {
			at := sized(kwtest.ClientBodyLimit)
			if len(at) != kwtest.ClientBodyLimit {
				t.Fatalf("built %d bytes", len(at))
			}
			s.Do("POST", path, kwtest.AppHeader(a.Secret), at).OK(t)
			s.Do("POST", path, kwtest.AppHeader(a.Secret), sized(kwtest.ClientBodyLimit+1)).Refused(t, path, 400, "BODY_TOO_LARGE")
		}
		// An envelope just under the limit is read and verified.
		inner := map[string]any{"license_key": key, "hwid": "pc", "pad": strings.Repeat("p", 47<<10)}
		env := a.Seal(inner).Marshal()
		if len(env) > kwtest.ClientBodyLimit || len(env) < kwtest.ClientBodyLimit-2048 {
			t.Fatalf("envelope of %d bytes", len(env))
		}
		a.PostEnvelope(kwtest.PathLogin, env).OK(t)
	})
}
