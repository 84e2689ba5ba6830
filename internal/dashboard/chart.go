package dashboard

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Charts drawn on the server as inline SVG: no script, no styles (only
// presentation attributes, which the CSP allows), scaled by their viewBox to
// the width of the page. Every text node and attribute goes through
// html/template, so labels that come from clients (versions, error codes)
// are shown escaped. Each chart states its figures in words in <title> and
// <desc> for screen readers.

// Chart palette (the stylesheet's accent, bad, ok and warn colours).
const (
	chartBlue       = "#2456c7"
	chartRed        = "#b42318"
	chartGreen      = "#067647"
	chartAmber      = "#9a6700"
	chartGrey       = "#5b6577"
	chartGridColour = "#d9dde4"
)

// Chart is a drawn chart, ready for the svg template.
type Chart struct {
	ID, Title, Desc string
	W, H            float64
	// Empty, when set, is shown instead of a drawing (no data).
	Empty  string
	Grid   []chartLine
	Axis   []chartLine
	Labels []chartLabel
	Bars   []chartBar
	Paths  []chartPath
	Legend []chartLegend
}

type chartLine struct{ X1, Y1, X2, Y2 float64 }

type chartLabel struct {
	X, Y   float64
	Anchor string
	Text   string
}

type chartBar struct {
	X, Y, W, H float64
	Fill       string
	Title      string
}

type chartPath struct{ D, Fill, Opacity, Stroke string }

type chartLegend struct {
	X, Y        float64
	Fill, Label string
}

// TimePoint is one step of a series over time.
type TimePoint struct {
	At time.Time
	N  float64
}

// BarSeries is one series of a horizontal bar chart: a value per category.
type BarSeries struct {
	Name, Color string
	Values      []float64
}

var chartSVG = template.Must(template.New("svg").Funcs(template.FuncMap{"f": chartCoord,
	"add1": func(x float64) float64 { return x + 14 }, "add2": func(y float64) float64 { return y + 9 }}).Parse(
	`{{if .Empty}}<p class="empty" id="{{.ID}}">{{.Title}}: {{.Empty}}</p>{{else}}` +
		`<svg viewBox="0 0 {{f .W}} {{f .H}}" width="100%" class="chart" role="img" aria-labelledby="{{.ID}}-title {{.ID}}-desc" id="{{.ID}}">` +
		`<title id="{{.ID}}-title">{{.Title}}</title><desc id="{{.ID}}-desc">{{.Desc}}</desc>` +
		`{{range .Grid}}<line x1="{{f .X1}}" y1="{{f .Y1}}" x2="{{f .X2}}" y2="{{f .Y2}}" stroke="` + chartGridColour + `" stroke-width="1"/>{{end}}` +
		`{{range .Paths}}<path d="{{.D}}" fill="{{.Fill}}"{{if .Opacity}} fill-opacity="{{.Opacity}}"{{end}} stroke="{{.Stroke}}" stroke-width="2" stroke-linejoin="round"/>{{end}}` +
		`{{range .Bars}}<rect x="{{f .X}}" y="{{f .Y}}" width="{{f .W}}" height="{{f .H}}" fill="{{.Fill}}"><title>{{.Title}}</title></rect>{{end}}` +
		`{{range .Axis}}<line x1="{{f .X1}}" y1="{{f .Y1}}" x2="{{f .X2}}" y2="{{f .Y2}}" stroke="` + chartGrey + `" stroke-width="1"/>{{end}}` +
		`{{range .Labels}}<text x="{{f .X}}" y="{{f .Y}}" text-anchor="{{.Anchor}}">{{.Text}}</text>{{end}}` +
		`{{range .Legend}}<rect x="{{f .X}}" y="{{f .Y}}" width="10" height="10" fill="{{.Fill}}"/><text x="{{f (add1 .X)}}" y="{{f (add2 .Y)}}">{{.Label}}</text>{{end}}` +
		`</svg>{{end}}`))

// chartCoord writes a coordinate with at most one decimal (never NaN: a
// non-finite value is drawn at 0).
func chartCoord(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

// HTML renders the chart (its text escaped by html/template).
func (c *Chart) HTML() template.HTML {
	var b bytes.Buffer
	if err := chartSVG.Execute(&b, c); err != nil {
		return template.HTML(`<p class="empty">The chart could not be drawn.</p>`)
	}
	return template.HTML(b.String())
}

// chartNiceScale returns the top of an axis from 0 covering max, and the step
// between its ticks (1, 2 or 5 × a power of ten; whole numbers, about
// four ticks).
func chartNiceScale(max float64) (top, step float64) {
	if !(max > 0) || math.IsInf(max, 0) {
		return 1, 1
	}
	raw := max / 4
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step = mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	if step < 1 {
		step = 1
	}
	top = math.Ceil(max/step) * step
	return top, step
}

// ticks lists the tick values 0, step, … top.
func chartTicks(top, step float64) []float64 {
	var out []float64
	for v := 0.0; v <= top+step/2 && len(out) < 50; v += step {
		out = append(out, v)
	}
	return out
}

// linear maps [0, top] of the domain to [r0, r1].
func chartLinear(top, r0, r1 float64) func(float64) float64 {
	if !(top > 0) {
		top = 1
	}
	return func(v float64) float64 { return r0 + (r1-r0)*v/top }
}

// chartTimeTickIndexes picks at most want evenly spaced indexes of n points,
// always the first.
func chartTimeTickIndexes(n, want int) []int {
	if n <= 0 || want <= 0 {
		return nil
	}
	if n <= want {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	every := int(math.Ceil(float64(n) / float64(want)))
	var out []int
	for i := 0; i < n; i += every {
		out = append(out, i)
	}
	return out
}

// timeLabel formats a point's time for an axis: hours for hourly series
// (with the date at midnight), dates for daily ones.
func chartTimeLabel(t time.Time, step time.Duration) string {
	t = t.UTC()
	if step < 24*time.Hour {
		if t.Hour() == 0 {
			return t.Format("Jan 2")
		}
		return t.Format("15:04")
	}
	return t.Format("Jan 2")
}

// timeWords formats a point's time for the description.
func chartTimeWords(t time.Time, step time.Duration) string {
	if step < 24*time.Hour {
		return t.UTC().Format("Jan 2 15:04 UTC")
	}
	return t.UTC().Format("Jan 2, 2006")
}

func chartCount(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// plural words a count: "1 login", "3 logins".
func chartPlural(v float64, one, many string) string {
	if v == 1 {
		return "1 " + one
	}
	return chartCount(v) + " " + many
}

const (
	chartW                                       = 480.0
	chartPadL, chartPadR, chartPadT, chartPadB   = 44.0, 10.0, 10.0, 28.0
	chartTimeH                                   = 200.0
	chartHBarLabelW, chartHBarRowGap, chartHBarH = 130.0, 8.0, 14.0
	chartMaxRows, chartMaxLabel, chartNTicks     = 12, 14, 5
)

// timeChart lays out the axes of a chart over time; plot draws the data.
func chartTimeAxes(id, title string, pts []TimePoint, step time.Duration, unit [2]string, emptyMsg string) (c *Chart, x func(float64) float64, y func(float64) float64, slot float64) {
	c = &Chart{ID: id, Title: title, W: chartW, H: chartTimeH}
	var total, max float64
	maxAt := -1
	for i, p := range pts {
		total += p.N
		if p.N > max || maxAt < 0 {
			max, maxAt = p.N, i
		}
	}
	if len(pts) == 0 || total == 0 {
		c.Empty = emptyMsg
		return c, nil, nil, 0
	}
	top, tstep := chartNiceScale(max)
	plotL, plotR, plotT, plotB := chartPadL, chartW-chartPadR, chartPadT, chartTimeH-chartPadB
	slot = (plotR - plotL) / float64(len(pts))
	x = func(i float64) float64 { return plotL + slot*i }
	y = chartLinear(top, plotB, plotT)
	for _, v := range chartTicks(top, tstep) {
		c.Grid = append(c.Grid, chartLine{plotL, y(v), plotR, y(v)})
		c.Labels = append(c.Labels, chartLabel{X: plotL - 4, Y: y(v) + 4, Anchor: "end", Text: chartCount(v)})
	}
	c.Axis = append(c.Axis, chartLine{plotL, plotB, plotR, plotB}, chartLine{plotL, plotT, plotL, plotB})
	for _, i := range chartTimeTickIndexes(len(pts), chartNTicks) {
		cx := x(float64(i)) + slot/2
		c.Axis = append(c.Axis, chartLine{cx, plotB, cx, plotB + 4})
		c.Labels = append(c.Labels, chartLabel{X: cx, Y: plotB + 20, Anchor: "middle", Text: chartTimeLabel(pts[i].At, step)})
	}
	per := "day"
	if step < 24*time.Hour {
		per = "hour"
	}
	c.Desc = fmt.Sprintf("%s per %s from %s to %s: %s in all, at most %s (%s).", title, per,
		chartTimeWords(pts[0].At, step), chartTimeWords(pts[len(pts)-1].At, step), chartPlural(total, unit[0], unit[1]),
		chartPlural(max, unit[0], unit[1]), chartTimeWords(pts[maxAt].At, step))
	return c, x, y, slot
}

// AreaChart draws a series over time as a line over a filled area.
func AreaChart(id, title string, pts []TimePoint, step time.Duration, unit [2]string, color, emptyMsg string) *Chart {
	c, x, y, slot := chartTimeAxes(id, title, pts, step, unit, emptyMsg)
	if c.Empty != "" {
		return c
	}
	var line strings.Builder
	for i, p := range pts {
		cmd := "L"
		if i == 0 {
			cmd = "M"
		}
		fmt.Fprintf(&line, "%s%s %s ", cmd, chartCoord(x(float64(i))+slot/2), chartCoord(y(p.N)))
	}
	d := strings.TrimSpace(line.String())
	base := chartCoord(y(0))
	area := d + " L" + chartCoord(x(float64(len(pts)-1))+slot/2) + " " + base + " L" + chartCoord(x(0)+slot/2) + " " + base + " Z"
	c.Paths = append(c.Paths, chartPath{D: area, Fill: color, Opacity: "0.18", Stroke: "none"}, chartPath{D: d, Fill: "none", Stroke: color})
	return c
}

// BarChart draws a series over time as vertical bars.
func BarChart(id, title string, pts []TimePoint, step time.Duration, unit [2]string, color, emptyMsg string) *Chart {
	c, x, y, slot := chartTimeAxes(id, title, pts, step, unit, emptyMsg)
	if c.Empty != "" {
		return c
	}
	gap := math.Min(slot*0.2, 4)
	for i, p := range pts {
		if p.N <= 0 {
			continue
		}
		c.Bars = append(c.Bars, chartBar{X: x(float64(i)) + gap/2, Y: y(p.N), W: slot - gap, H: y(0) - y(p.N), Fill: color,
			Title: chartTimeWords(p.At, step) + ": " + chartPlural(p.N, unit[0], unit[1])})
	}
	return c
}

// shorten cuts a label to chartMaxLabel for the axis (the bar's own title
// and the description keep it whole).
func chartShorten(s string) string {
	if utf8.RuneCountInString(s) <= chartMaxLabel {
		return s
	}
	r := []rune(s)
	return string(r[:chartMaxLabel-1]) + "…"
}

// HBarChart draws categories as horizontal bars, one bar per series in each
// category's row (grouped), with a legend when there are several series.
// Beyond chartMaxRows categories the rest are added up as "other".
func HBarChart(id, title string, cats []string, series []BarSeries, emptyMsg string) *Chart {
	c := &Chart{ID: id, Title: title, W: chartW}
	if len(cats) > chartMaxRows {
		kept := append(append([]string{}, cats[:chartMaxRows-1]...), "other")
		out := make([]BarSeries, len(series))
		for i, s := range series {
			vals := append([]float64{}, s.Values[:chartMaxRows-1]...)
			var rest float64
			for _, v := range s.Values[chartMaxRows-1:] {
				rest += v
			}
			out[i] = BarSeries{Name: s.Name, Color: s.Color, Values: append(vals, rest)}
		}
		cats, series = kept, out
	}
	var max, total float64
	for _, s := range series {
		for _, v := range s.Values {
			total += v
			max = math.Max(max, v)
		}
	}
	if len(cats) == 0 || len(series) == 0 || total == 0 {
		c.Empty = emptyMsg
		return c
	}
	legendH := 0.0
	if len(series) > 1 {
		legendH = 20
	}
	rowH := chartHBarH*float64(len(series)) + chartHBarRowGap
	plotL, plotR, plotT := chartHBarLabelW, chartW-chartPadR-20, chartPadT+legendH
	plotB := plotT + rowH*float64(len(cats))
	c.H = plotB + chartPadB
	top, tstep := chartNiceScale(max)
	x := chartLinear(top, plotL, plotR)
	for _, v := range chartTicks(top, tstep) {
		c.Grid = append(c.Grid, chartLine{x(v), plotT, x(v), plotB})
		c.Labels = append(c.Labels, chartLabel{X: x(v), Y: plotB + 20, Anchor: "middle", Text: chartCount(v)})
	}
	c.Axis = append(c.Axis, chartLine{plotL, plotT, plotL, plotB}, chartLine{plotL, plotB, plotR, plotB})
	var words []string
	for i, cat := range cats {
		rowT := plotT + rowH*float64(i) + chartHBarRowGap/2
		c.Labels = append(c.Labels, chartLabel{X: plotL - 6, Y: rowT + rowH/2, Anchor: "end", Text: chartShorten(cat)})
		var parts []string
		for j, s := range series {
			v := s.Values[i]
			label := chartCount(v)
			if len(series) > 1 {
				label = chartCount(v) + " " + s.Name
			}
			parts = append(parts, label)
			if v <= 0 {
				continue
			}
			by := rowT + chartHBarH*float64(j)
			c.Bars = append(c.Bars, chartBar{X: plotL, Y: by, W: x(v) - plotL, H: chartHBarH - 2, Fill: s.Color, Title: cat + ": " + label})
			c.Labels = append(c.Labels, chartLabel{X: x(v) + 4, Y: by + chartHBarH - 4, Anchor: "start", Text: chartCount(v)})
		}
		words = append(words, cat+": "+strings.Join(parts, ", "))
	}
	if len(series) > 1 {
		lx := 10.0
		for _, s := range series {
			c.Legend = append(c.Legend, chartLegend{X: lx, Y: chartPadT - 4, Fill: s.Color, Label: s.Name})
			lx += 24 + 9*float64(utf8.RuneCountInString(s.Name))
		}
	}
	c.Desc = title + ". " + strings.Join(words, "; ") + "."
	return c
}
