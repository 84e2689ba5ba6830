package dashboard

// Unit tests of the SVG charts (internal: they check the scales and ticks
// themselves). The page test is analytics_test.go.

import (
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestAnalyticsChartNiceScale(t *testing.T) {
	for _, c := range []struct{ max, top, step float64 }{
		{0, 1, 1}, {-3, 1, 1}, {math.NaN(), 1, 1}, {math.Inf(1), 1, 1},
		{1, 1, 1}, {3, 3, 1}, {4, 4, 1}, {7, 8, 2}, {9, 10, 5}, {10, 10, 5}, {37, 40, 10}, {120, 150, 50}, {999, 1000, 500},
	} {
		top, step := chartNiceScale(c.max)
		if top != c.top || step != c.step {
			t.Errorf("chartNiceScale(%v) = %v, %v; want %v, %v", c.max, top, step, c.top, c.step)
		}
		if top < c.max && c.max > 0 && !math.IsInf(c.max, 0) {
			t.Errorf("chartNiceScale(%v): top %v below the data", c.max, top)
		}
	}
	if got := chartTicks(10, 5); len(got) != 3 || got[0] != 0 || got[2] != 10 {
		t.Errorf("chartTicks(10, 5) = %v, want 0 5 10", got)
	}
	y := chartLinear(10, 200, 0)
	if y(0) != 200 || y(10) != 0 || y(5) != 100 {
		t.Errorf("linear: %v %v %v", y(0), y(10), y(5))
	}
	if y := chartLinear(0, 200, 0); math.IsNaN(y(0)) {
		t.Error("linear over an empty domain gives NaN")
	}
	if got := chartTimeTickIndexes(24, 5); len(got) > 5 || got[0] != 0 {
		t.Errorf("chartTimeTickIndexes(24, 5) = %v", got)
	}
	if got := chartTimeTickIndexes(3, 5); len(got) != 3 {
		t.Errorf("chartTimeTickIndexes(3, 5) = %v, want every point", got)
	}
	if chartTimeTickIndexes(0, 5) != nil {
		t.Error("ticks for no points")
	}
}

func chartHourly(start time.Time, ns ...float64) []TimePoint {
	out := make([]TimePoint, len(ns))
	for i, n := range ns {
		out[i] = TimePoint{At: start.Add(time.Duration(i) * time.Hour), N: n}
	}
	return out
}

var chartNumAttr = regexp.MustCompile(`\b(?:x|y|x1|x2|y1|y2|width|height)="([^"]*)"`)

// checkSVG fails on NaN/Inf anywhere or a non-numeric coordinate.
func chartCheckSVG(t *testing.T, out string) {
	t.Helper()
	for _, bad := range []string{"NaN", "Inf", "style=", "<script"} {
		if strings.Contains(out, bad) {
			t.Fatalf("chart contains %q: %s", bad, out)
		}
	}
	for _, m := range chartNumAttr.FindAllStringSubmatch(out, -1) {
		if m[1] == "100%" {
			continue
		}
		if !regexp.MustCompile(`^-?[0-9]+(\.[0-9])?$`).MatchString(m[1]) {
			t.Fatalf("coordinate %q: %s", m[0], out)
		}
	}
}

func TestAnalyticsChartTimeSeries(t *testing.T) {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	pts := chartHourly(start, 0, 2, 5, 1, 0, 3)
	area := string(AreaChart("c1", "Live sessions", pts, time.Hour, [2]string{"session", "sessions"}, chartBlue, "none.").HTML())
	chartCheckSVG(t, area)
	for _, want := range []string{`viewBox="0 0 480 200"`, `width="100%"`, `class="chart"`, `role="img"`, `aria-labelledby="c1-title c1-desc"`,
		`<title id="c1-title">Live sessions</title>`, `<path d="M`,
		// Words for screen readers: the range, the total and the peak.
		"Live sessions per hour from Nov 1 00:00 UTC to Nov 1 05:00 UTC: 11 sessions in all, at most 5 sessions (Nov 1 02:00 UTC)."} {
		if !strings.Contains(area, want) {
			t.Errorf("area chart lacks %q:\n%s", want, area)
		}
	}
	// Y ticks 0..6 by 2 (max 5 → step 2, top 6); x ticks are times.
	for _, tick := range []string{">0</text>", ">2</text>", ">4</text>", ">6</text>", ">Nov 1</text>", ">02:00</text>"} {
		if !strings.Contains(area, tick) {
			t.Errorf("area chart lacks tick %q", tick)
		}
	}
	bars := string(BarChart("c2", "Logins", pts, time.Hour, [2]string{"login", "logins"}, chartBlue, "none.").HTML())
	chartCheckSVG(t, bars)
	if n := strings.Count(bars, "<rect"); n != 4 { // one per non-zero step
		t.Errorf("%d bars, want 4:\n%s", n, bars)
	}
	if !strings.Contains(bars, "<title>Nov 1 02:00 UTC: 5 logins</title>") || !strings.Contains(bars, "<title>Nov 1 03:00 UTC: 1 login</title>") {
		t.Errorf("bar titles:\n%s", bars)
	}
	// Daily series are labelled with dates.
	daily := []TimePoint{{At: start, N: 1}, {At: start.AddDate(0, 0, 1), N: 2}}
	if out := string(BarChart("c3", "Trials", daily, 24*time.Hour, [2]string{"trial", "trials"}, chartBlue, "").HTML()); !strings.Contains(out, ">Nov 2</text>") ||
		!strings.Contains(out, "Trials per day from Nov 1, 2026 to Nov 2, 2026") {
		t.Errorf("daily chart:\n%s", out)
	}
}

func TestAnalyticsChartEmpty(t *testing.T) {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for name, out := range map[string]string{
		"no points":  string(AreaChart("e1", "Live sessions", nil, time.Hour, [2]string{"session", "sessions"}, chartBlue, "no data here.").HTML()),
		"all zeros":  string(AreaChart("e2", "Live sessions", chartHourly(start, 0, 0, 0), time.Hour, [2]string{"s", "s"}, chartBlue, "no data here.").HTML()),
		"zero bars":  string(BarChart("e3", "Live sessions", chartHourly(start, 0), time.Hour, [2]string{"s", "s"}, chartBlue, "no data here.").HTML()),
		"no cats":    string(HBarChart("e4", "Live sessions", nil, nil, "no data here.").HTML()),
		"zero cats":  string(HBarChart("e5", "Live sessions", []string{"a"}, []BarSeries{{Name: "n", Values: []float64{0}}}, "no data here.").HTML()),
		"no series":  string(HBarChart("e6", "Live sessions", []string{"a"}, nil, "no data here.").HTML()),
		"one series": string(AreaChart("e7", "Live sessions", chartHourly(start, 0), time.Hour, [2]string{"s", "s"}, chartBlue, "no data here.").HTML()),
	} {
		if !strings.Contains(out, `<p class="empty"`) || !strings.Contains(out, "Live sessions: no data here.") || strings.Contains(out, "<svg") || strings.Contains(out, "NaN") {
			t.Errorf("%s: %s", name, out)
		}
	}
	// A single non-zero point draws (no division by zero).
	out := string(AreaChart("e8", "Live sessions", chartHourly(start, 3), time.Hour, [2]string{"s", "s"}, chartBlue, "").HTML())
	chartCheckSVG(t, out)
	if !strings.Contains(out, "<svg") {
		t.Errorf("single point: %s", out)
	}
}

func TestAnalyticsChartHBarsEscapeLabels(t *testing.T) {
	hostile := `1.0.0<script>alert("x")</script>`
	cats := []string{hostile, `E&"'<b>`, "1.2.0"}
	out := string(HBarChart("v", "Devices by version", cats, []BarSeries{{Name: "devices", Color: chartBlue, Values: []float64{3, 1, 7}}}, "none").HTML())
	chartCheckSVG(t, out)
	if strings.Contains(out, "<script>") || strings.Contains(out, "<b>") {
		t.Fatalf("label not escaped:\n%s", out)
	}
	if !strings.Contains(out, "1.0.0&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;: 3") { // the bar's title, whole
		t.Errorf("escaped version not in the bar title:\n%s", out)
	}
	if !strings.Contains(out, "E&amp;&#34;&#39;&lt;b&gt;: 1") {
		t.Errorf("escaped code:\n%s", out)
	}
	if !strings.Contains(out, `>1.0.0&lt;script&gt;…</text>`) { // axis label shortened
		t.Errorf("shortened axis label:\n%s", out)
	}
	if n := strings.Count(out, "<rect"); n != 3 {
		t.Errorf("%d bars, want 3", n)
	}
	if !strings.Contains(out, "Devices by version. "+`1.0.0&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;: 3; E&amp;&#34;&#39;&lt;b&gt;: 1; 1.2.0: 7.`) {
		t.Errorf("description:\n%s", out)
	}

	// Grouped: two series get a legend; many categories fold into "other".
	var many []string
	var a, b []float64
	for i := range 15 {
		many = append(many, "CODE_"+string(rune('A'+i)))
		a = append(a, float64(i+1))
		b = append(b, 1)
	}
	out = string(HBarChart("f", "Refusals", many, []BarSeries{{Name: "sign-ins refused", Color: chartRed, Values: a}, {Name: "sessions ended", Color: chartAmber, Values: b}}, "").HTML())
	chartCheckSVG(t, out)
	if !strings.Contains(out, ">sign-ins refused</text>") || !strings.Contains(out, ">sessions ended</text>") {
		t.Errorf("legend missing:\n%s", out)
	}
	// 12..15 added up: 12+13+14+15 = 54 refused, 4 ended.
	if !strings.Contains(out, "other: 54 sign-ins refused, 4 sessions ended") || strings.Contains(out, "CODE_L") {
		t.Errorf("other row:\n%s", out)
	}
}
