// Package loadtest drives a running keyward over real HTTP the way shipped
// apps do — enveloped logins, heartbeats, check-keys, update checks, a
// realistic mix of them and a thundering herd of re-logins — and measures, in
// the same run, an echo baseline: a handler that only opens and seals an
// envelope. The ratio of the two says how much of the machine's ceiling for
// enveloped requests the license logic and the database leave.
package loadtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keyward/keyward/internal/envelope"
)

// Mode is the kind of request a run measures.
type Mode string

// Modes.
const (
	Heartbeat Mode = "heartbeat" // heartbeats of live sessions (the hot path)
	Login     Mode = "login"     // logins, each one device per key, re-opening its session
	CheckKey  Mode = "check-key" // enveloped check-keys of existing keys
	Mix       Mode = "mix"       // a fleet's traffic: each request's kind drawn by Options.Mix weights
)

// Options configure a run.
type Options struct {
	// URL is the keyward base URL, e.g. http://127.0.0.1:8080, or several
	// comma-separated (processes sharing one database): the first
	// provisions (admin calls and the sessions' logins), and the measured
	// requests are spread over all, connection i sending to URL i mod n.
	URL           string
	AdminUsername string
	AdminPassword string

	Mode     Mode
	Sessions int           // live sessions opened before measuring heartbeats
	Keys     int           // keys generated (default: Sessions, at least Conns)
	Conns    int           // concurrent connections (default 32)
	Duration time.Duration // measuring time per phase (default 10s)
	Warmup   time.Duration // unmeasured time before each phase (default 1s)
	// Rounds splits the echo's and the mode's Duration into this many
	// parts, measured alternately (echo, mode, echo, mode …, each after
	// its warmup), so that a machine whose speed drifts during a run — a
	// virtual machine's neighbours — slows both alike and their ratio
	// reads the server rather than the drift (default 1).
	Rounds int
	// EchoURL is an echo baseline server (EchoHandler); empty starts one in
	// this process.
	EchoURL string
	// HalfRate adds a third phase: the mode again at half the rate its
	// first phase reached, for the latency at a load the server can carry;
	// and a fourth, the echo at that same rate, for the latency the
	// machine itself gives at it (the baseline of the third phase's p99).
	// Both send requests sealed beforehand and check the replies after the
	// phase (paced.go). Not in mode Mix.
	HalfRate bool
	// Mix weighs the kinds of Mode Mix (default DefaultMix).
	Mix []Weight
	// Herd adds a phase after the measured one (modes heartbeat and mix):
	// every live session's device logs in again at once.
	Herd bool
	// HerdTimeout bounds the herd (default 60s).
	HerdTimeout time.Duration
	// HerdConns is the herd's connection pool (default 256, at most Sessions).
	HerdConns int
	// HerdBackoff is the first retry window of a refused herd login
	// (default 500ms; doubling, capped at 8s, full jitter).
	HerdBackoff time.Duration
	// Keep leaves the provisioned app in the database (default: deleted).
	Keep bool
	// Now is the clock envelopes are sealed with (default time.Now).
	Now func() time.Time
	// Progress receives one line per provisioning step; nil discards.
	Progress io.Writer
	// Measured, when set, is called with true just before the mode's
	// measured phase (after its warmup) and with false just after it, so
	// that a profile can cover that phase alone; with Rounds, its first
	// round.
	Measured func(start bool)
	// HalfMeasured is Measured for the half-rate phase of the mode (with
	// HalfRate), so that a trace can cover that phase alone.
	HalfMeasured func(start bool)
}

// URLs splits o.URL at commas (surrounding blanks and trailing slashes
// dropped).
func (o *Options) URLs() ([]string, error) {
	var urls []string
	for _, u := range strings.Split(o.URL, ",") {
		u = strings.TrimRight(strings.TrimSpace(u), "/")
		if u == "" {
			return nil, fmt.Errorf("url: empty address in %q", o.URL)
		}
		urls = append(urls, u)
	}
	return urls, nil
}

func (o *Options) defaults() error {
	if _, err := o.URLs(); err != nil {
		return err
	}
	if o.Mode == "" {
		o.Mode = Heartbeat
	}
	switch o.Mode {
	case Heartbeat, Login, CheckKey, Mix:
	default:
		return fmt.Errorf("unknown mode %q (heartbeat, login, check-key, mix)", o.Mode)
	}
	if o.HalfRate && o.Mode == Mix {
		return errors.New("--half-rate measures one kind of request: mode heartbeat, login or check-key, not mix")
	}
	if o.Herd && !o.Mode.hasSessions() {
		return fmt.Errorf("--herd needs live sessions: mode heartbeat or mix, not %s", o.Mode)
	}
	if len(o.Mix) == 0 {
		o.Mix = DefaultMix
	}
	if o.HerdTimeout <= 0 {
		o.HerdTimeout = 60 * time.Second
	}
	if o.HerdBackoff <= 0 {
		o.HerdBackoff = 500 * time.Millisecond
	}
	if o.Conns <= 0 {
		o.Conns = 32
	}
	if o.Sessions <= 0 {
		o.Sessions = 10000
	}
	if o.Keys <= 0 {
		o.Keys = o.Sessions
		if !o.Mode.hasSessions() {
			o.Keys = max(1000, o.Conns)
		}
	}
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Rounds <= 0 {
		o.Rounds = 1
	}
	if o.Warmup < 0 {
		o.Warmup = 0
	}
	if o.HerdConns <= 0 {
		o.HerdConns = 256
	}
	o.HerdConns = min(o.HerdConns, o.Sessions)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return nil
}

func (o *Options) measured(start bool) {
	if o.Measured != nil {
		o.Measured(start)
	}
}

// hasSessions says whether the mode opens live sessions before measuring.
func (m Mode) hasSessions() bool { return m == Heartbeat || m == Mix }

// Report is the outcome of a run: the baseline and the measured mode.
type Report struct {
	Mode     Mode
	Sessions int
	Conns    int
	Rounds   int // Options.Rounds
	Echo     Result
	Target   Result
	// RoundRatios is each round's mode throughput as a fraction of the
	// echo measured just before it, in order (Rounds of them): the spread
	// a machine's own noise puts around Ratio.
	RoundRatios []float64
	// Half is the mode at half Target's rate (Options.HalfRate), or nil;
	// HalfEcho the echo at that same rate.
	Half, HalfEcho *Result
	// Kinds is Target split by kind (mode mix), in the order heartbeat,
	// login, check-key, update.
	Kinds []Result
	// UpdateRelease says the mix's update checks were answered "update
	// available" by a published release (else "no update").
	UpdateRelease bool
	// Herd is the thundering herd (Options.Herd), or nil.
	Herd *HerdResult
	// PerURL is how the measured phase's requests (Target) went over the
	// addresses of Options.URL, in its order.
	PerURL []URLCount
}

// URLCount is the requests one address got.
type URLCount struct {
	URL      string
	Requests int64
}

// Failures counts failed requests of all phases, the herd's refusals aside
// (they are retried) but not its sessions that never recovered.
func (r *Report) Failures() int64 {
	n := r.Echo.Errors + r.Target.Errors
	if r.Half != nil {
		n += r.Half.Errors
	}
	if r.HalfEcho != nil {
		n += r.HalfEcho.Errors
	}
	if r.Herd != nil {
		n += int64(r.Herd.Sessions-r.Herd.Recovered) + r.Herd.Heartbeat.Errors
	}
	return n
}

// Ratio is the measured mode's throughput as a fraction of the echo baseline.
func (r *Report) Ratio() float64 { return ratio(r.Target, r.Echo) }

// ratio is mode's throughput as a fraction of echo's (0 without an echo).
func ratio(mode, echo Result) float64 {
	if echo.RPS() == 0 {
		return 0
	}
	return mode.RPS() / echo.RPS()
}

// Print writes the report as a small table.
func (r *Report) Print(w io.Writer) {
	rounds := ""
	if r.Rounds > 1 {
		rounds = fmt.Sprintf(" (echo and %s in %d alternating rounds)", r.Mode, r.Rounds)
	}
	fmt.Fprintf(w, "mode %s, %d live sessions, %d connections, %s per phase%s\n",
		r.Mode, r.Sessions, r.Conns, r.Target.Elapsed.Round(time.Millisecond), rounds)
	fmt.Fprintf(w, "%-12s %10s %10s %10s %10s %8s\n", "phase", "requests", "req/s", "p50", "p99", "errors")
	phases := []Result{r.Echo, r.Target}
	if r.Half != nil {
		phases = append(phases, *r.Half)
	}
	if r.HalfEcho != nil {
		phases = append(phases, *r.HalfEcho)
	}
	for _, k := range r.Kinds {
		k.Name = "  " + k.Name
		phases = append(phases, k)
	}
	if r.Herd != nil {
		phases = append(phases, r.Herd.Login, r.Herd.Heartbeat)
	}
	for _, res := range phases {
		fmt.Fprintf(w, "%-12s %10d %10.0f %10s %10s %8d\n", res.Name, res.Requests, res.RPS(),
			fmtDur(res.P50), fmtDur(res.P99), res.Errors)
	}
	fmt.Fprintf(w, "%s / echo: %.0f%%\n", r.Mode, 100*r.Ratio())
	if len(r.RoundRatios) > 1 {
		fmt.Fprintf(w, "%s / echo by round:", r.Mode)
		for _, x := range r.RoundRatios {
			fmt.Fprintf(w, " %.0f%%", 100*x)
		}
		lo, hi := slices.Min(r.RoundRatios), slices.Max(r.RoundRatios)
		fmt.Fprintf(w, " (spread %.0f points)\n", 100*(hi-lo))
	}
	if len(r.PerURL) > 1 {
		fmt.Fprintf(w, "%s requests per address:", r.Mode)
		for i, u := range r.PerURL {
			sep := ","
			if i == 0 {
				sep = ""
			}
			fmt.Fprintf(w, "%s %s %d", sep, u.URL, u.Requests)
		}
		fmt.Fprintln(w)
	}
	if r.Mode == Mix {
		if r.UpdateRelease {
			fmt.Fprintf(w, "update checks: against a published release (update available)\n")
		} else {
			fmt.Fprintf(w, "update checks: no release published (no update)\n")
		}
	}
	if h := r.Herd; h != nil {
		fmt.Fprintf(w, "herd: %d/%d sessions logged in again in %s; %d attempts, %d refused, peak %d refusals/s; login p99 %s\n",
			h.Recovered, h.Sessions, h.Recover.Round(time.Millisecond), h.Attempts, h.Refusals, h.PeakRefusalRate, fmtDur(h.Login.P99))
	}
	for _, res := range phases {
		if res.FirstError != "" && !strings.HasPrefix(res.Name, "  ") {
			fmt.Fprintf(w, "first %s error: %s\n", res.Name, res.FirstError)
		}
	}
}

func fmtDur(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + "ms"
}

// Run provisions an app, keys and sessions on the keyward at o.URL through its
// admin API, measures the echo baseline and then the chosen mode, and removes
// the app again unless o.Keep.
func Run(ctx context.Context, o Options) (*Report, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	echoURL := o.EchoURL
	if echoURL == "" {
		stop, url, err := StartEcho(o.Now)
		if err != nil {
			return nil, err
		}
		defer stop()
		echoURL = url
	}
	t, err := Provision(ctx, o)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := t.Close(ctx, o.Keep); err != nil {
			fmt.Fprintf(o.Progress, "warning: %v\n", err)
		}
	}()

	rep := &Report{Mode: o.Mode, Sessions: len(t.Sessions), Conns: o.Conns, Rounds: o.Rounds}
	echo := func(ctx context.Context, i int) error { return t.Echo(ctx, echoURL, i) }
	do := func(ctx context.Context, i int) error { return t.Do(ctx, o.Mode, i) }
	warm := do
	var m *mixer
	if o.Mode == Mix {
		m = newMixer(t, o.Mix, true)
		do, warm = m.do, newMixer(t, o.Mix, false).do
	}
	round := o.Duration / time.Duration(o.Rounds)
	sent := make([]int64, len(t.urls)) // the mode's measured requests per address
	var seq sequence                   // the mode's phases go round all sessions (or keys) together
	for r := range o.Rounds {
		of := ""
		if o.Rounds > 1 {
			of = fmt.Sprintf("round %d of %d: ", r+1, o.Rounds)
		}
		fmt.Fprintf(o.Progress, "%smeasuring echo baseline for %s\n", of, round)
		roundEcho := Measure(ctx, "echo", o.Conns, o.Warmup, round, echo)
		rep.Echo.add(roundEcho)
		if r == 0 && o.Mode == Heartbeat {
			// A running fleet: every session has beaten before (each every
			// 30 s), and the measured phase is that steady state, not each
			// session's first heartbeat after its login.
			fmt.Fprintf(o.Progress, "one heartbeat from each of the %d sessions first\n", len(t.Sessions))
			if err := each(ctx, o.Conns, len(t.Sessions), do); err != nil {
				return nil, fmt.Errorf("first heartbeats: %w", err)
			}
		}
		fmt.Fprintf(o.Progress, "%smeasuring %s for %s\n", of, o.Mode, round)
		if o.Warmup > 0 {
			seq.done(Measure(ctx, "warmup", o.Conns, 0, o.Warmup, seq.phase(warm)).Requests)
		}
		t.resetCounts()
		if r == 0 {
			o.measured(true)
		}
		roundTarget := Measure(ctx, string(o.Mode), o.Conns, 0, round, seq.phase(do))
		seq.done(roundTarget.Requests)
		rep.Target.add(roundTarget)
		rep.RoundRatios = append(rep.RoundRatios, ratio(roundTarget, roundEcho))
		if r == 0 {
			o.measured(false)
		}
		for j := range sent {
			sent[j] += t.sent[j].Load()
		}
	}
	rep.Echo.lat, rep.Target.lat = nil, nil
	if m != nil {
		rep.Kinds = m.results(rep.Target.Elapsed)
		rep.UpdateRelease = t.hasRelease
	}
	for j, u := range t.urls {
		rep.PerURL = append(rep.PerURL, URLCount{URL: u, Requests: sent[j]})
	}
	if o.HalfRate && rep.Target.RPS() > 0 {
		rate := rep.Target.RPS() / 2
		fmt.Fprintf(o.Progress, "measuring %s at %.0f req/s for %s\n", o.Mode, rate, o.Duration)
		req, check, err := t.paced(o.Mode)
		if err != nil {
			return nil, err
		}
		if rep.Half, err = measurePaced(ctx, "half-rate", o, rate, t, req, check, o.HalfMeasured); err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Progress, "measuring echo at %.0f req/s for %s\n", rate, o.Duration)
		echoReq := func(i int) (string, string, []byte) { return echoURL, "", t.echoBody(i) }
		if rep.HalfEcho, err = measurePaced(ctx, "echo-half", o, rate, t, echoReq, nil, nil); err != nil {
			return nil, err
		}
	}
	if o.Herd {
		fmt.Fprintf(o.Progress, "herd: %d sessions log in again at once (timeout %s)\n", len(t.Sessions), o.HerdTimeout)
		h := t.Herd(ctx, o.HerdConns, o.HerdTimeout, o.HerdBackoff)
		rep.Herd = &h
	}
	return rep, nil
}

// sequence numbers the requests of the mode's phases so that each phase
// goes on through the sessions (or keys) from where the one before stopped,
// and the rounds together go round all of them as a fleet's heartbeats do.
// Started at the first session each time, a two-second phase at 20 000 a
// second beat the same 40 000 of 100 000 sessions in every round, each
// about every six seconds: a smaller working set than the run claims, and
// with the touch resolution (10 s at the default session timeout, see
// license.Service.touchResolution) their last-seen writes fell in every
// other round, whose ratios alternated by 20 points and more.
type sequence struct{ next int }

// phase is do with the phase's requests numbered from where the last
// phase stopped (i is the request's number within the phase).
func (s *sequence) phase(do func(context.Context, int) error) func(context.Context, int) error {
	base := s.next
	return func(ctx context.Context, i int) error { return do(ctx, base+i) }
}

// done moves the sequence past a phase of n requests.
func (s *sequence) done(n int64) { s.next += int(n) }

// measurePaced seals one paced phase at rate and runs it; measured, if not
// nil, is told when the phase (its warmup included) starts and ends.
func measurePaced(ctx context.Context, name string, o Options, rate float64, t *Target,
	req pacedRequest, check replyCheck, measured func(start bool)) (*Result, error) {
	p, err := preparePhase(o.Conns, o.Warmup, o.Duration, rate, t.keys, t.Secret, o.Now, req, check)
	if err != nil {
		return nil, err
	}
	defer p.free()
	if measured != nil {
		measured(true)
		defer measured(false)
	}
	res, err := p.measure(ctx, name)
	return &res, err
}

// StartEcho serves EchoHandler on 127.0.0.1 and returns its URL and a stop function.
func StartEcho(now func() time.Time) (stop func(), url string, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	srv := &http.Server{Handler: EchoHandler(now), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return func() { srv.Close() }, "http://" + ln.Addr().String() + "/", nil
}

// Target is a provisioned app on a keyward: its secret, keys, and the live
// sessions opened on them.
type Target struct {
	c *client
	// urls are the addresses the measured requests are spread over (the
	// first is c's); conns is the connection count they are spread by.
	urls  []string
	conns int
	// sent counts the requests sent to each of urls since resetCounts.
	sent     []atomic.Int64
	token    string
	AppID    string
	Secret   string
	keys     envelope.Keys
	Keys     []Text
	Sessions []Session
	locks    []sync.Mutex // one per session: a login replaces its id
	// hasRelease says a release newer than 1.0.0 is published (mode mix).
	hasRelease bool
}

// Session is a live session and the key it runs on.
type Session struct {
	ID, Key Text
}

// Text is a short string kept in an array, so that a slice of them holds no
// pointers. The load tool keeps a key and a session id per session: as
// strings, 200 000 objects at 100 000 sessions that an in-process server's
// collector marked every cycle (16.2 ms of marking a cycle instead of 19.0
// at 100 000 sessions), which a server on its own does not have.
type Text struct {
	n uint8
	b [maxText]byte
}

// maxText is the longest Text: session ids are 36-character UUIDs and
// generated keys are shorter than 40 characters.
const maxText = 71

// TextOf returns s as a Text; an s longer than maxText is an error.
func TextOf(s string) (Text, error) {
	var t Text
	if len(s) > maxText {
		return t, fmt.Errorf("%q: longer than the load tool's %d characters", s, maxText)
	}
	t.n = uint8(copy(t.b[:], s))
	return t, nil
}

func (t *Text) String() string { return string(t.b[:t.n]) }

// set makes t hold s (see TextOf).
func (t *Text) set(s string) error {
	v, err := TextOf(s)
	if err == nil {
		*t = v
	}
	return err
}

// Provision signs in to the admin API, creates an app, generates o.Keys
// lifetime keys, and (in heartbeat mode) opens o.Sessions sessions over
// o.Conns connections.
func Provision(ctx context.Context, o Options) (*Target, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	urls, _ := o.URLs()
	c := newClient(urls[0], o.Conns, o.Now)
	var login struct{ Token string }
	if err := c.admin(ctx, "", "POST", "/api/admin/login.php",
		map[string]string{"username": o.AdminUsername, "password": o.AdminPassword}, &login); err != nil {
		return nil, fmt.Errorf("admin sign-in: %w", err)
	}
	var created struct {
		App struct {
			ID     string `json:"app_id"`
			Secret string `json:"secret"`
		}
	}
	name := "loadtest " + time.Now().UTC().Format(time.RFC3339)
	if err := c.admin(ctx, login.Token, "POST", "/api/admin/apps.php", map[string]any{"name": name, "version": "1.0.0"}, &created); err != nil {
		return nil, fmt.Errorf("create app: %w", err)
	}
	t := &Target{c: c, urls: urls, conns: o.Conns, sent: make([]atomic.Int64, len(urls)), token: login.Token, AppID: created.App.ID, Secret: created.App.Secret, keys: envelope.Derive(created.App.Secret)}
	fail := func(err error) (*Target, error) {
		t.Close(ctx, o.Keep)
		return nil, err
	}

	perKey := 1
	if o.Mode.hasSessions() {
		perKey = (o.Sessions + o.Keys - 1) / o.Keys
	}
	fmt.Fprintf(o.Progress, "app %s: generating %d keys\n", t.AppID, o.Keys)
	for len(t.Keys) < o.Keys {
		n := min(10000, o.Keys-len(t.Keys))
		var gen struct {
			Keys []struct {
				LicenseKey string `json:"license_key"`
			}
		}
		if err := c.admin(ctx, t.token, "POST", "/api/admin/keys.php", map[string]any{"app_id": t.AppID, "count": n,
			"key_type": "lifetime", "max_devices": perKey, "note": "loadtest"}, &gen); err != nil {
			return fail(fmt.Errorf("generate keys: %w", err))
		}
		for _, k := range gen.Keys {
			key, err := TextOf(k.LicenseKey)
			if err != nil {
				return fail(fmt.Errorf("generate keys: %w", err))
			}
			t.Keys = append(t.Keys, key)
		}
	}
	if o.Mode == Mix && weighs(o.Mix, KindUpdate) {
		fmt.Fprintf(o.Progress, "publishing release 1.0.1 for the update checks\n")
		if err := t.publishRelease(ctx); err != nil {
			return fail(err)
		}
	}
	if !o.Mode.hasSessions() {
		return t, nil
	}

	fmt.Fprintf(o.Progress, "opening %d sessions\n", o.Sessions)
	t.Sessions = make([]Session, o.Sessions)
	t.locks = make([]sync.Mutex, o.Sessions)
	open := func(ctx context.Context, i int) error {
		key := t.Keys[i%len(t.Keys)]
		r, err := t.login(ctx, key.String(), deviceID(i))
		if err != nil {
			return err
		}
		id, err := TextOf(r.SessionID)
		if err != nil {
			return fmt.Errorf("login: session id %w", err)
		}
		t.Sessions[i] = Session{ID: id, Key: key}
		return nil
	}
	keepAlive := func(ctx context.Context, i int) error {
		_, err := t.c.sealed(ctx, t.keys, t.Secret, t.c.base+"/api/auth/heartbeat.php", heartbeatBody(t.Sessions[i]))
		return err
	}
	// Opening many sessions takes minutes on a slow database (100 000 on
	// PostgreSQL: about three, the default session timeout): the sessions
	// opened so far get a heartbeat at least every keepAliveEvery, so none
	// expires before it is measured.
	beaten := t.c.now()
	for start := 0; start < o.Sessions; start += openChunk {
		end := min(start+openChunk, o.Sessions)
		err := each(ctx, o.Conns, end-start, func(ctx context.Context, j int) error { return open(ctx, start+j) })
		if err != nil {
			return fail(fmt.Errorf("open sessions: %w", err))
		}
		if end < o.Sessions && t.c.now().Sub(beaten) >= keepAliveEvery {
			fmt.Fprintf(o.Progress, "%d sessions open; one heartbeat each, so none expires meanwhile\n", end)
			beaten = t.c.now()
			if err := each(ctx, o.Conns, end, keepAlive); err != nil {
				return fail(fmt.Errorf("keep sessions alive: %w", err))
			}
		}
	}
	return t, nil
}

// Sessions are opened openChunk at a time, and those open get a heartbeat
// between chunks once keepAliveEvery has passed (a third of keyward's
// default session timeout). Variables for the test of it.
var (
	openChunk      = 10_000
	keepAliveEvery = time.Minute
)

func weighs(ws []Weight, k Kind) bool {
	for _, w := range ws {
		if w.Kind == k && w.Weight > 0 {
			return true
		}
	}
	return false
}

func cmp(first, err error) error {
	if first == nil {
		return err
	}
	return first
}

// login logs a device in through the first address (provisioning).
func (t *Target) login(ctx context.Context, key, hwid string) (*reply, error) {
	return t.c.sealedLogin(ctx, t, t.c.base, key, hwid)
}

// base is the address connection conn (a Measure i: i mod conns is its
// goroutine) sends to: address conn mod len(urls).
func (t *Target) base(conn int) int {
	if len(t.urls) > 1 {
		return (conn % t.conns) % len(t.urls)
	}
	return 0
}

// url is where connection conn sends path, counted.
func (t *Target) url(conn int, path string) string {
	j := t.base(conn)
	t.sent[j].Add(1)
	return t.urls[j] + path
}

func (t *Target) resetCounts() {
	for j := range t.sent {
		t.sent[j].Store(0)
	}
}

// request is the i-th request of mode: heartbeats cycle through the
// sessions, logins and check-keys through the keys. check, if not nil, is
// what a successful reply must also say.
func (t *Target) request(mode Mode, i int) (path string, inner []byte, check replyCheck, err error) {
	switch mode {
	case Heartbeat:
		if len(t.Sessions) == 0 {
			return "", nil, nil, errors.New("no sessions provisioned")
		}
		return "/api/auth/heartbeat.php", heartbeatBody(t.Sessions[i%len(t.Sessions)]), nil, nil
	case Login:
		k := i % len(t.Keys)
		inner, _ := json.Marshal(map[string]string{"license_key": t.Keys[k].String(), "hwid": "loadtest-login-" + strconv.Itoa(k)})
		return "/api/auth/login.php", inner, nil, nil
	case CheckKey:
		inner, _ := json.Marshal(map[string]string{"license_key": t.Keys[i%len(t.Keys)].String()})
		return "/api/auth/check-key.php", inner, validKey, nil
	}
	return "", nil, nil, fmt.Errorf("unknown mode %q", mode)
}

func validKey(r *reply) error {
	if r.Valid == nil || !*r.Valid {
		return errors.New("check-key: key reported not valid")
	}
	return nil
}

// Do sends the i-th request of mode (see request); with several addresses,
// the request goes to the one of i's connection (see Options.URL).
func (t *Target) Do(ctx context.Context, mode Mode, i int) error {
	return t.send(ctx, mode, i, i)
}

// checkKey checks key k through connection conn's address.
func (t *Target) checkKey(ctx context.Context, conn, k int) error {
	return t.send(ctx, CheckKey, conn, k)
}

// send sends the i-th request of mode through connection conn's address.
func (t *Target) send(ctx context.Context, mode Mode, conn, i int) error {
	path, inner, check, err := t.request(mode, i)
	if err != nil {
		return err
	}
	r, err := t.c.sealed(ctx, t.keys, t.Secret, t.url(conn, path), inner)
	if err == nil && check != nil {
		err = check(r)
	}
	return err
}

// paced is request for measurePaced: the i-th request of mode and the
// address of i's connection, uncounted.
func (t *Target) paced(mode Mode) (pacedRequest, replyCheck, error) {
	_, _, check, err := t.request(mode, 0)
	if err != nil {
		return nil, nil, err
	}
	return func(i int) (string, string, []byte) {
		path, inner, _, _ := t.request(mode, i)
		return t.urls[t.base(i)], path, inner
	}, check, nil
}

// Echo sends the i-th heartbeat body to the echo baseline at url.
func (t *Target) Echo(ctx context.Context, url string, i int) error {
	_, err := t.c.sealed(ctx, t.keys, t.Secret, url, t.echoBody(i))
	return err
}

// echoBody is the i-th echo request's inner body: the heartbeat's.
func (t *Target) echoBody(i int) []byte {
	s := echoSession
	if len(t.Sessions) > 0 {
		s = t.Sessions[i%len(t.Sessions)]
	}
	return heartbeatBody(s)
}

// echoSession is the echo's session when none is open (modes login and
// check-key).
var echoSession = func() Session {
	echo, _ := TextOf("echo")
	return Session{ID: echo, Key: echo}
}()

func heartbeatBody(s Session) []byte {
	b, _ := json.Marshal(map[string]string{"session_id": s.ID.String(), "license_key": s.Key.String()})
	return b
}

// Close deletes the provisioned app (unless keep) and releases connections.
func (t *Target) Close(ctx context.Context, keep bool) error {
	defer t.c.close()
	if keep || t.AppID == "" {
		return nil
	}
	if err := t.c.admin(context.WithoutCancel(ctx), t.token, "DELETE", "/api/admin/apps.php?app_id="+t.AppID, nil, nil); err != nil {
		return fmt.Errorf("delete the load test app %s: %w", t.AppID, err)
	}
	return nil
}
