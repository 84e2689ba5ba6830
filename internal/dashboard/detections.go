package dashboard

import (
	"github.com/keyward/keyward/wire"
	"net/http"
	"slices"
	"strings"
)

// routesDetections: what key-leak and abuse detection reported.
func (d *Dashboard) routesDetections(m *http.ServeMux) {
	d.page(m, "GET /dashboard/apps/{app}/detections", d.detectionsList)
}

// detectionKinds are detections.php's kinds, with what the page calls them.
var detectionKinds = []struct{ Value, Label string }{
	{"key.suspected_leak", "Suspected key leak"},
	{"suspicious_activity", "Suspicious activity"},
}

// detectionLimits are the lengths the page offers (the API allows up to 500).
var detectionLimits = []string{"100", "500"}

// detectionsList shows the newest detections, filtered by kind: keys used
// from more devices than the app's leak settings allow, and addresses that
// tripped the suspicious-activity thresholds.
func (d *Dashboard) detectionsList(c *Ctx) {
	kind := strings.TrimSpace(c.R.FormValue("kind"))
	limit := strings.TrimSpace(c.R.FormValue("limit"))
	if !slices.Contains(detectionLimits, limit) {
		limit = detectionLimits[0]
	}
	var out wire.DetectionListReply
	p := &listPage{Filter: map[string]string{"kind": kind, "limit": limit}}
	if err := c.Call("GET", "/api/admin/detections.php", c.AppQuery("kind", kind, "limit", limit), nil, &out); err != nil {
		if !refusedFilter(err, p) {
			c.Fail(err)
			return
		}
	}
	p.Rows = out.Detections
	p.Options = detectionLimits
	p.Extra = map[string]any{"Kinds": detectionKinds}
	c.Render("detections", Page{Title: "Detections", Nav: "detections", Data: p})
}
