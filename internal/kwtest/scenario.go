package kwtest

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// A Scenario is one row of a surface's scenario table: a request and what
// must come back (status, error_code, fields). Path and every string in Body
// may name the fixture's values as {app}, {key}, {key2}, {session}; they are
// filled in before the request is sent.
type Scenario struct {
	Name   string
	Method string
	Path   string
	// As says how the request authenticates: AsNone, AsApp (X-App-Secret),
	// AsAdmin (the test admin's token), AsCustomer or AsReseller (the
	// fixture's portal tokens).
	As Caller
	// Body is sent as JSON (a []byte or string as it is; nil: no body).
	Body any
	// Envelope seals Body (a client route). An enveloped answer to a
	// request with the app secret is opened before it is checked.
	Envelope bool
	// Header adds request headers.
	Header http.Header

	Status int
	// Code is the wanted error_code; "" wants success true.
	Code string
	// Fields are top-level reply fields and the values they must have
	// after JSON decoding (numbers are float64); Present only asks that the
	// field is there.
	Fields map[string]any
	// Absent lists top-level fields the reply must not have.
	Absent []string
	// Bare marks an answer that is not a keyward reply object (probes,
	// the OpenAPI document): success and error_code are not checked.
	Bare bool
	// ContentType, when set, is the prefix the answer's Content-Type must have.
	ContentType string
	// Sealed says the answer must be (true) or must not be (false) an
	// envelope; nil leaves it open.
	Sealed *bool
}

// Caller is how a scenario's request authenticates.
type Caller int

// The callers of a scenario.
const (
	AsNone Caller = iota
	AsApp
	AsAdmin
	AsCustomer
	AsReseller
)

// Present matches any value of a field in Scenario.Fields.
var Present = presentT{}

type presentT struct{}

// Yes and No are for Scenario.Sealed.
var (
	Yes = func() *bool { b := true; return &b }()
	No  = func() *bool { b := false; return &b }()
)

// Fixture is what scenario tables run against: a server with one app, two
// active-able keys (Key, Key2), a session opened with Key, a customer portal
// token for Key2 and a reseller of the app.
type Fixture struct {
	S        *Server
	App      *App
	Key      string
	Key2     string
	Session  string
	Customer string
	Reseller string
}

// NewFixture starts a server on engine and fills a Fixture.
func NewFixture(t *testing.T, engine string) *Fixture {
	t.Helper()
	s := Start(t, Options{Engine: engine})
	app := s.CreateApp("Scenarios")
	keys := app.GenerateKeys(2, "days", 30, 2)
	f := &Fixture{S: s, App: app, Key: keys[0], Key2: keys[1]}
	f.Session = app.Login(f.Key, "scenario-pc")
	r := s.Do("POST", "/api/customer/login.php", http.Header{"Content-Type": {"application/json"}},
		toBytes(t, map[string]any{"app_id": app.ID, "license_key": f.Key2}))
	if f.Customer = r.Str("token"); r.Status != 200 || f.Customer == "" {
		t.Fatalf("customer login: %s", r)
	}
	r = s.MustAdmin("POST", "/api/admin/resellers.php", map[string]any{"app_id": app.ID, "name": "Scenario Seller",
		"products": []map[string]any{{"id": "month", "name": "Month", "key_type": "days", "duration_value": 30, "price": 1}}})
	if f.Reseller = r.Str("token"); f.Reseller == "" {
		t.Fatalf("reseller: %s", r)
	}
	return f
}

// fill replaces the fixture's placeholders in s.
func (f *Fixture) fill(s string) string {
	return strings.NewReplacer("{app}", f.App.ID, "{key}", f.Key, "{key2}", f.Key2, "{session}", f.Session).Replace(s)
}

// fillAll fills placeholders in every string of a JSON-like value.
func (f *Fixture) fillAll(v any) any {
	switch x := v.(type) {
	case string:
		return f.fill(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = f.fillAll(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = f.fillAll(e)
		}
		return out
	}
	return v
}

// Run sends every scenario as a subtest, in order (rows may build on
// earlier rows), and checks its answer.
func (f *Fixture) Run(t *testing.T, table []Scenario) {
	t.Helper()
	for _, sc := range table {
		t.Run(sc.Name, func(t *testing.T) { f.run(t, sc) })
	}
}

func (f *Fixture) run(t *testing.T, sc Scenario) {
	t.Helper()
	s := f.S
	prev := s.T
	s.T = t
	defer func() { s.T = prev }()
	path := f.fill(sc.Path)
	h := http.Header{"Content-Type": {"application/json"}}
	switch sc.As {
	case AsApp:
		h.Set("X-App-Secret", f.App.Secret)
	case AsAdmin:
		h.Set("Authorization", "Bearer "+s.AdminToken())
	case AsCustomer:
		h.Set("Authorization", "Bearer "+f.Customer)
	case AsReseller:
		h.Set("Authorization", "Bearer "+f.Reseller)
	}
	for k, v := range sc.Header {
		h[k] = v
	}
	body := sc.Body
	if _, raw := body.([]byte); !raw && body != nil {
		body = f.fillAll(normalise(t, body))
	}
	var r *Reply
	if sc.Envelope {
		r = s.Do(sc.Method, path, h, f.App.Seal(body).Marshal())
	} else {
		r = s.Do(sc.Method, path, h, toBytes(t, body))
	}
	if sc.As == AsApp || sc.Envelope {
		f.App.open(r) // sealed answers (enveloped routes, sealed GETs) are opened
	}
	if r.Status != sc.Status {
		t.Fatalf("%s %s: status %d, want %d: %s", sc.Method, path, r.Status, sc.Status, r)
	}
	if ct := r.Header.Get("Content-Type"); sc.ContentType != "" && !strings.HasPrefix(ct, sc.ContentType) {
		t.Errorf("%s %s: Content-Type %q, want %s…", sc.Method, path, ct, sc.ContentType)
	}
	switch {
	case sc.Bare:
	case sc.Code == "":
		if r.Body["success"] != true {
			t.Fatalf("%s %s: want success true: %s", sc.Method, path, r)
		}
	case r.Body["success"] != false || r.Body["error_code"] != sc.Code:
		t.Fatalf("%s %s: want success false, error_code %s: %v", sc.Method, path, sc.Code, r.Body)
	}
	if sc.Sealed != nil && r.Sealed != *sc.Sealed {
		t.Errorf("%s %s: sealed %v, want %v", sc.Method, path, r.Sealed, *sc.Sealed)
	}
	for k, want := range sc.Fields {
		got, ok := r.Body[k]
		if !ok {
			t.Errorf("%s %s: no field %q: %v", sc.Method, path, k, r.Body)
			continue
		}
		if _, any := want.(presentT); any {
			continue
		}
		if s, isStr := want.(string); isStr {
			want = f.fill(s)
		}
		if !reflect.DeepEqual(got, normalise(t, want)) {
			t.Errorf("%s %s: %s = %#v, want %#v", sc.Method, path, k, got, want)
		}
	}
	for _, k := range sc.Absent {
		if _, ok := r.Body[k]; ok {
			t.Errorf("%s %s: field %q must be absent: %v", sc.Method, path, k, r.Body)
		}
	}
}

// normalise gives v the shape JSON decoding would (float64 numbers,
// map[string]any objects), so table values compare with decoded replies.
func normalise(t testing.TB, v any) any {
	switch v.(type) {
	case nil, string, bool, float64:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
