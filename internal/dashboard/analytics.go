package dashboard

import (
	"github.com/keyward/keyward/wire"
	"net/http"
	"sort"
	"time"
)

// routesAnalytics: charts of sessions, activations, trials, failures and versions.
func (d *Dashboard) routesAnalytics(m *http.ServeMux) {
	d.page(m, "GET /dashboard/apps/{app}/analytics", d.analyticsPage)
}

// analyticsRange is one choice of the range selector.
type analyticsRange struct {
	Value, Label string
	Span         time.Duration
	Step         string // the API's step: hour or day
}

var analyticsRanges = []analyticsRange{
	{"24h", "Last 24 hours", 24 * time.Hour, "hour"},
	{"7d", "Last 7 days", 7 * 24 * time.Hour, "day"},
	{"30d", "Last 30 days", 30 * 24 * time.Hour, "day"},
	{"90d", "Last 90 days", 90 * 24 * time.Hour, "day"},
}

func anTimePoints(ps []wire.Point) []TimePoint {
	out := make([]TimePoint, 0, len(ps))
	for _, p := range ps {
		at, _ := time.Parse(time.RFC3339, p.At)
		out = append(out, TimePoint{At: at, N: float64(p.N)})
	}
	return out
}

func anTotal(ps []wire.Point) float64 {
	var n int64
	for _, p := range ps {
		n += p.N
	}
	return float64(n)
}

// anStatTile is one figure of the tiles above the charts.
type anStatTile struct {
	Label string
	Value float64
	Class string
}

func (d *Dashboard) analyticsPage(c *Ctx) {
	sel := analyticsRanges[1]
	for _, r := range analyticsRanges {
		if r.Value == c.R.URL.Query().Get("range") {
			sel = r
		}
	}
	// The range ends with the current hour or day (UTC), included.
	unit := 24 * time.Hour
	if sel.Step == "hour" {
		unit = time.Hour
	}
	to := d.now().UTC().Truncate(unit).Add(unit)
	from := to.Add(-sel.Span)
	var out wire.AnalyticsReply
	q := c.AppQuery("from", from.Format(time.RFC3339), "to", to.Format(time.RFC3339), "step", sel.Step)
	if err := c.Call("GET", "/api/admin/analytics.php", q, nil, &out); err != nil {
		c.Fail(err)
		return
	}
	r := out.Analytics
	step := 24 * time.Hour
	if r.Step == "hour" {
		step = time.Hour
	}
	empty := "nothing in this range."

	tiles := []anStatTile{
		{Label: "Live sessions now", Value: float64(r.ActiveNow)},
		{Label: "Logins", Value: anTotal(r.Logins)},
		{Label: "Activations", Value: anTotal(r.Activations)},
		{Label: "New trials", Value: anTotal(r.Trials)},
	}
	var failed int64
	for _, n := range r.LoginFailures {
		failed += n
	}
	tiles = append(tiles, anStatTile{Label: "Refused sign-ins", Value: float64(failed)})
	statuses := anSortedKeys(r.KeysByStatus)
	var keyTiles []anStatTile
	for _, s := range statuses {
		class := ""
		switch s {
		case "active":
			class = "ok"
		case "banned", "revoked", "expired":
			class = "bad"
		case "paused":
			class = "warn"
		}
		keyTiles = append(keyTiles, anStatTile{Label: s, Value: float64(r.KeysByStatus[s]), Class: class})
	}

	// Refusals by code: sign-ins refused and sessions ended by a heartbeat,
	// grouped per code, most frequent first.
	codes := map[string]int64{}
	for k, n := range r.LoginFailures {
		codes[k] += n
	}
	for k, n := range r.HeartbeatRefusals {
		codes[k] += n
	}
	codeList := anSortedKeys(codes)
	sort.SliceStable(codeList, func(i, j int) bool { return codes[codeList[i]] > codes[codeList[j]] })
	login := BarSeries{Name: "sign-ins refused", Color: chartRed}
	beat := BarSeries{Name: "sessions ended", Color: chartAmber}
	for _, k := range codeList {
		login.Values = append(login.Values, float64(r.LoginFailures[k]))
		beat.Values = append(beat.Values, float64(r.HeartbeatRefusals[k]))
	}
	var versions []string
	devices := BarSeries{Name: "devices", Color: chartBlue}
	for _, v := range r.Versions {
		versions = append(versions, v.Version)
		devices.Values = append(devices.Values, float64(v.Devices))
	}

	// The last step is the current one: the live count now is a sample of
	// it too (the sampler may not have run in it yet).
	active := anTimePoints(r.ActiveSessions)
	if n := len(active); n > 0 && active[n-1].N < float64(r.ActiveNow) {
		active[n-1].N = float64(r.ActiveNow)
	}
	charts := []*Chart{
		AreaChart("chart-active", "Live sessions", active, step, [2]string{"session", "sessions"}, chartBlue,
			"no sessions were sampled in this range."),
		BarChart("chart-logins", "Logins", anTimePoints(r.Logins), step, [2]string{"login", "logins"}, chartBlue, empty),
		BarChart("chart-activations", "Activations", anTimePoints(r.Activations), step, [2]string{"activation", "activations"}, chartGreen, empty),
		BarChart("chart-trials", "New trials", anTimePoints(r.Trials), step, [2]string{"trial", "trials"}, chartAmber, empty),
		HBarChart("chart-failures", "Refusals by error code", codeList, []BarSeries{login, beat}, "no sign-in was refused and no session was ended."),
		HBarChart("chart-versions", "Devices by version", versions, []BarSeries{devices}, "no client checked for updates in this range."),
	}
	c.Render("analytics", Page{Title: "Analytics", Nav: "analytics", Data: map[string]any{
		"Ranges": analyticsRanges, "Range": sel.Value, "From": r.From, "To": r.To,
		"Tiles": tiles, "KeyTiles": keyTiles, "Charts": charts,
	}})
}

func anSortedKeys(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
