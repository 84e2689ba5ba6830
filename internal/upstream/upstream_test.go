package upstream

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/license"
)

// The upstream's answers are read as the admin API gives them: a 200's key
// object, the 404 for an unknown key (not the 404 of a wrong base URL),
// and every other answer an error that names the status, not the body.
func TestKeyAnswer(t *testing.T) {
	t.Parallel()
	key, err := keyAnswer(200, []byte(`{"success":true,"key":{"license_key":"A-1","devices":[]}}`), "A-1")
	if err != nil || string(key) != `{"license_key":"A-1","devices":[]}` {
		t.Fatalf("200: %s %v", key, err)
	}
	// A list reply (the hosted service documents GET keys.php as its list):
	// the entry for the key asked for, by license_key or key.
	list := `{"success":true,"keys":[{"license_key":"A-0"},{"license_key":"A-1","status":"active"},{"key":"A-2"}]}`
	if key, err := keyAnswer(200, []byte(list), "A-1"); err != nil || string(key) != `{"license_key":"A-1","status":"active"}` {
		t.Errorf("list reply: %s %v", key, err)
	}
	if key, err := keyAnswer(200, []byte(list), "A-2"); err != nil || string(key) != `{"key":"A-2"}` {
		t.Errorf("list reply by key: %s %v", key, err)
	}
	// A list without it may be an unfiltered first page: a failure, not
	// "no such key" (which would be remembered for 10 minutes).
	if _, err := keyAnswer(200, []byte(list), "B-9"); err == nil || errors.Is(err, license.ErrUpstreamNoKey) {
		t.Errorf("list without the key: %v, want a failure", err)
	}
	if _, err := keyAnswer(404, []byte(`{"success":false,"error_code":"NOT_FOUND","message":"Key not found."}`), "A-1"); !errors.Is(err, license.ErrUpstreamNoKey) {
		t.Errorf("404 key not found: %v", err)
	}
	for _, c := range []struct {
		status int
		body   string
	}{
		{404, `{"success":false,"error_code":"NOT_FOUND","message":"No such endpoint."}`},
		{404, `<html>not found</html>`},
		{200, `{"success":true,"key":null}`},
		{200, `{"success":false}`},
		{200, `not json`},
		{401, `{"success":false,"error_code":"UNAUTHORIZED","message":"secret-ish body"}`},
		{503, ``},
		{302, ``},
	} {
		_, err := keyAnswer(c.status, []byte(c.body), "A-1")
		if err == nil || errors.Is(err, license.ErrUpstreamNoKey) {
			t.Errorf("%d %s: %v, want a failure", c.status, c.body, err)
		} else if c.status == 401 && (json.Valid([]byte(err.Error())) || strings.Contains(err.Error(), "secret-ish")) {
			t.Errorf("error repeats the body: %v", err)
		}
	}
}

// A page gives its key strings and the next cursor; the last page (null
// cursor) and a cursor that does not move end the walk.
func TestKeyPage(t *testing.T) {
	t.Parallel()
	keys, next, err := keyPage(200, []byte(`{"success":true,"keys":[{"license_key":"A"},{"license_key":"B"}],"next_cursor":"7"}`), "")
	if err != nil || len(keys) != 2 || keys[1] != "B" || next != "7" {
		t.Fatalf("page: %v %q %v", keys, next, err)
	}
	if _, next, _ := keyPage(200, []byte(`{"success":true,"keys":[],"next_cursor":null}`), "7"); next != "" {
		t.Errorf("last page: next %q", next)
	}
	if _, next, _ := keyPage(200, []byte(`{"success":true,"keys":[{"license_key":"A"}],"next_cursor":"7"}`), "7"); next != "" {
		t.Errorf("a cursor that does not move: next %q", next)
	}
	if _, _, err := keyPage(500, nil, ""); err == nil {
		t.Errorf("500 is no page")
	}
}

// Neither reader panics on any answer, and a key answer is a JSON object.
func FuzzAnswers(f *testing.F) {
	f.Add(200, []byte(`{"success":true,"key":{"license_key":"A-1"}}`))
	f.Add(404, []byte(`{"success":false,"error_code":"NOT_FOUND","message":"Key not found."}`))
	f.Add(200, []byte(`{"success":true,"keys":[{"license_key":"A"}],"next_cursor":"2"}`))
	f.Add(500, []byte(`{"error_code":`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if key, err := keyAnswer(status, body, "A"); err == nil && !json.Valid(key) {
			t.Fatalf("key answer %q is not JSON", key)
		}
		keyPage(status, body, "1")
	})
}
