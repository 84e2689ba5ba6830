package clientapi_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

const flFlags = "/api/admin/feature-flags.php"

// flFeatures decodes a reply's features object.
func flFeatures(t testing.TB, what string, body map[string]any) map[string]any {
	t.Helper()
	f, ok := body["features"].(map[string]any)
	if !ok {
		t.Fatalf("%s: features = %#v, want an object", what, body["features"])
	}
	return f
}

func flWant(t testing.TB, what string, got, want map[string]any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("%s: features %s, want %s", what, g, w)
	}
}

// App-defined flags give every key their defaults; a key's, a trial's and an
// account's own values win; login, check-key, trial and account-login all
// return the merged map.
func TestFeatureFlagsInReplies(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Flags")
		for _, f := range []map[string]any{
			{"app_id": a.ID, "name": "pro", "type": "bool", "default": false, "description": "Pro tools"},
			{"app_id": a.ID, "name": "max_projects", "type": "number", "default": 3},
			{"app_id": a.ID, "name": "theme", "type": "string"},
		} {
			s.MustAdmin("PUT", flFlags, f)
		}
		list := s.MustAdmin("GET", flFlags+"?app_id="+a.ID, nil).List(t, "feature_flags")
		if len(list) != 3 || list[2]["name"] != "theme" || list[2]["default"] != "" {
			t.Fatalf("feature_flags = %v", list)
		}

		plain := a.GenerateKeys(1, "days", 30, 1)[0]
		vip := uaKeys(t, a, 1, "days", 30, 1, map[string]any{"pro": true, "extra": "yes"})[0]
		defaults := map[string]any{"pro": false, "max_projects": float64(3), "theme": ""}
		withVIP := map[string]any{"pro": true, "max_projects": float64(3), "theme": "", "extra": "yes"}

		flWant(t, "login, plain key", flFeatures(t, "login", a.LoginReply(plain, "pc").Body), defaults)
		flWant(t, "login, vip key", flFeatures(t, "login", a.LoginReply(vip, "pc").Body), withVIP)
		flWant(t, "check-key plain", flFeatures(t, "check-key", a.Plain(kwtest.PathCheckKey, map[string]any{"license_key": vip}).Body), withVIP)
		flWant(t, "check-key sealed", flFeatures(t, "check-key", a.Env(kwtest.PathCheckKey, map[string]any{"license_key": plain}).Body), defaults)

		a.SetSettings(t, map[string]any{"trial_enabled": true, "trial_features": map[string]any{"max_projects": 1}, "accounts_enabled": true,
			"account_signup_days": 5})

		flWant(t, "trial", flFeatures(t, "trial", a.Plain("/api/auth/trial.php", map[string]any{"hwid": "trial-pc"}).Body),
			map[string]any{"pro": false, "max_projects": float64(1), "theme": ""})
		a.SignUp(t, "fern", "password1", "")
		flWant(t, "account without keys", flFeatures(t, "account-login", uaSignIn(a, "fern", "password1", "pc").Body), defaults)
		uaRedeemOK(t, a, "fern", "password1", uaKeys(t, a, 1, "days", 30, 1, map[string]any{"theme": "dark"})[0])
		flWant(t, "account after a redeem", flFeatures(t, "account-login", uaSignIn(a, "fern", "password1", "pc").Body),
			map[string]any{"pro": false, "max_projects": float64(3), "theme": "dark"})

		// Redefining a default reaches every key without its own value.
		s.MustAdmin("PUT", flFlags, map[string]any{"app_id": a.ID, "name": "max_projects", "type": "number", "default": 10})
		flWant(t, "after the new default", flFeatures(t, "check-key", a.Plain(kwtest.PathCheckKey, map[string]any{"license_key": plain}).Body),
			map[string]any{"pro": false, "max_projects": float64(10), "theme": ""})
		// Deleting a flag removes its default; keys keep their own values.
		s.MustAdmin("DELETE", flFlags, map[string]any{"app_id": a.ID, "name": "pro"})
		flWant(t, "after deleting pro", flFeatures(t, "check-key", a.Plain(kwtest.PathCheckKey, map[string]any{"license_key": vip}).Body),
			map[string]any{"pro": true, "max_projects": float64(10), "theme": "", "extra": "yes"})
	})
}

// Flag types are enforced where values are set: definitions and their
// defaults, key features at generation and edit, trial features. Refusals
// change nothing.
func TestFeatureFlagsValidation(t *testing.T) {
	t.Parallel()
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		s := kwtest.Boot(t, engine, nil)
		a := s.CreateApp("Typed")
		s.MustAdmin("PUT", flFlags, map[string]any{"app_id": a.ID, "name": "pro", "type": "bool"})
		for _, bad := range []map[string]any{
			{"app_id": a.ID, "name": "x", "type": "date"},
			{"app_id": a.ID, "name": "x", "type": "bool", "default": "yes"},
			{"app_id": a.ID, "name": "x", "type": "number", "default": true},
			{"app_id": a.ID, "name": "bad name", "type": "bool"},
			{"app_id": a.ID, "name": "x", "type": "string", "default": map[string]any{"a": 1}},
		} {
			s.Admin("PUT", flFlags, bad).JSONFail(t, 400, "MISSING_FIELDS")
		}
		s.Admin("PUT", flFlags, map[string]any{"name": "x", "type": "bool"}).JSONFail(t, 400, "MISSING_FIELDS")
		s.Admin("PUT", flFlags, map[string]any{"app_id": "nope", "name": "x", "type": "bool"}).JSONFail(t, 404, "NOT_FOUND")
		s.Admin("DELETE", flFlags, map[string]any{"app_id": a.ID, "name": "nope"}).JSONFail(t, 404, "NOT_FOUND")
		if n := len(s.MustAdmin("GET", flFlags+"?app_id="+a.ID, nil).List(t, "feature_flags")); n != 1 {
			t.Fatalf("%d flags after refused edits, want 1", n)
		}

		s.Admin("POST", "/api/admin/keys.php", map[string]any{"app_id": a.ID, "count": 1, "key_type": "lifetime",
			"features": map[string]any{"pro": "yes"}}).JSONFail(t,
			400, "MISSING_FIELDS")

		k := a.GenerateKeys(1, "lifetime", 0, 1)[0]
		s.Admin("PUT", "/api/admin/keys.php", map[string]any{"app_id": a.ID, "license_key": k,
			"features": map[string]any{"pro": 1}}).JSONFail(t,
			400, "MISSING_FIELDS")

		s.Admin("PUT", "/api/admin/apps.php?app_id="+a.ID, map[string]any{"settings": map[string]any{
			"trial_features": map[string]any{"pro": "no"}}}).JSONFail(t,
			400, "MISSING_FIELDS")

		// Undefined flags stay free-form.
		s.MustAdmin("PUT", "/api/admin/keys.php", map[string]any{"app_id": a.ID, "license_key": k, "features": map[string]any{"pro": true, "beta": 2}})
		flWant(t, "edited key", flFeatures(t, "check-key", a.Plain(kwtest.PathCheckKey, map[string]any{"license_key": k}).Body),
			map[string]any{"pro": true, "beta": float64(2)})
	})
}
