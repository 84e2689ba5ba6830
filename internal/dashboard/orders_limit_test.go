package dashboard_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// ordersShown are the e-mail addresses of the orders listed on p.
func ordersShown(p *webPage) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<td>([^<@]+@example\.com)</td>`).FindAllStringSubmatch(p.Body, -1) {
		out = append(out, m[1])
	}
	return out
}

// The orders page shows the newest 100 by default and 500 or 1000 when
// chosen; any other length is refused with a message (the API would quietly
// answer 100) and the newest 100 are shown.
func TestContentOrdersLimit(t *testing.T) {
	s, app, base := contentSite(t)
	plan := s.MustAdmin("POST", "/api/admin/pricing.php", map[string]any{"app_id": app.ID, "type": "plan", "name": "Basic", "price": 10, "currency": "USD",
		"key_type": "lifetime"}).Obj("plan")
	// 101 orders: the oldest a minute before the other 100.
	contentOrder(t, s, app.ID, plan["id"], "oldest@example.com")
	s.Clock.Advance(time.Minute)
	for i := range 100 {
		contentOrder(t, s, app.ID, plan["id"], fmt.Sprintf("buyer%d@example.com", i))
	}
	page := base + "/orders"
	selected := func(p *webPage, n string) bool {
		return strings.Contains(p.Body, `<option value="`+n+`" selected>`) && strings.Count(p.Body, " selected>") == 1
	}

	// By default the newest 100, and the help line says so.
	p := s.get(page).must(t)
	if got := ordersShown(p); len(got) != 100 || p.Has("oldest@example.com") || !selected(p, "100") || !p.Has("The list shows the newest 100 orders") {
		t.Fatalf("default: %d orders shown: %s", len(got), p.Text())
	}
	if p.flash() != "" {
		t.Fatalf("default: message %q", p.flash())
	}
	// Show 500 or 1000: every order, the choice kept in the select.
	for _, n := range []string{"500", "1000"} {
		p := s.get(page + "?limit=" + n).must(t)
		if got := ordersShown(p); len(got) != 101 || got[100] != "oldest@example.com" || !selected(p, n) || !p.Has("The list shows the newest "+n+" orders") {
			t.Fatalf("limit %s: %d orders shown: %s", n, len(got), p.Text())
		}
	}
	// Anything else is refused with a message; the newest 100 are shown.
	for _, bad := range []string{"50", "2000", "abc", "-1", "100%20OR%201"} {
		p := s.get(page + "?limit=" + bad).must(t)
		if got := ordersShown(p); len(got) != 100 || !strings.Contains(p.flash(), "choose 100, 500 or 1000") || !selected(p, "100") {
			t.Fatalf("limit %s: %d orders shown, message %q: %s", bad, len(got), p.flash(), p.Text())
		}
	}
}
