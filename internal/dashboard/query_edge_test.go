package dashboard_test

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/keyward/keyward/internal/kwtest"
)

// syncLog is a log destination safe for the server's goroutines.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *syncLog) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// A dashboard page whose query string, or path segment, is not clean text
// (NUL, invalid UTF-8, control characters) answers 400 with the dashboard's
// own error page naming the parameter and MISSING_FIELDS, signed in or not,
// on both engines, and logs no error.
func TestDashboardBadQuery(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		var logs syncLog
		s := newSite(t, kwtest.Options{Engine: engine, Log: slog.New(slog.NewTextHandler(&logs, nil))})
		app := s.CreateApp("Edge")
		key := app.GenerateKeys(1, "days", 30, 1)[0]

		check := func(path, param string) {
			t.Helper()
			p := s.get(path)
			if p.Status != http.StatusBadRequest {
				t.Errorf("GET %s: %d, want 400: %s", path, p.Status, p.Text())
				return
			}
			if ct := p.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
				t.Errorf("GET %s: Content-Type %q, want the HTML error page", path, ct)
			}
			if !p.Has("MISSING_FIELDS") || (param != "" && !p.Has(param)) {
				t.Errorf("GET %s: page %q does not name %s and MISSING_FIELDS", path, p.Text(), param)
			}
			if p.Header.Get("Content-Security-Policy") == "" {
				t.Errorf("GET %s: the error page lacks the dashboard's headers", path)
			}
		}
		check("/dashboard/login?next=%00", "next")
		s.signIn()
		base := "/dashboard/apps/" + app.ID
		for _, c := range []struct{ path, param string }{
			{"/dashboard/?app=%00", "app"},
			{base + "/keys?status=%ff", "status"},
			{base + "/keys?q=a%00b", "q"},
			{base + "/keys?cursor=%01", "cursor"},
			{base + "/audit?action=%00", "action"},
			{"/dashboard/audit?target=%c3%28", "target"},
			{base + "/sessions?hwid=%00", "hwid"},
			{base + "/analytics?from=%00", "from"},
			{base + "/detections?cursor=%00", "cursor"},
			{base + "/content/orders?limit=%0a", "limit"},
			{base + "/resellers?cursor=%7f", "cursor"},
			// A path segment the page passes on to the admin API.
			{base + "/keys/" + url.PathEscape(key+"\x00"), ""},
		} {
			check(c.path, c.param)
		}
		if strings.Contains(logs.String(), "level=ERROR") {
			t.Errorf("bad dashboard queries logged errors:\n%s", logs.String())
		}
	})
}
