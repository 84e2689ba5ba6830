package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/store"
	"github.com/keyward/keyward/internal/webhook"
)

// hit is one request a webhook receiver got.
type hit struct {
	ID, StdID, Attempt, Timestamp string
	Body                          []byte
	SignatureOK                   bool
}

// hookReceiver is a webhook endpoint on 127.0.0.1 that records every
// request and checks its X-Webhook-Signature-V2 against secret.
type hookReceiver struct {
	*httptest.Server
	secret atomic.Value // string
	now    func() time.Time
	delay  time.Duration
	// block, when set, is called for each request before it is answered.
	block func(r *http.Request, n int)

	mu   sync.Mutex
	hits []hit
}

func newHookReceiver(t *testing.T, now func() time.Time, delay time.Duration) *hookReceiver {
	t.Helper()
	rc := &hookReceiver{now: now, delay: delay}
	rc.secret.Store("")
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		secret, _ := rc.secret.Load().(string)
		h := hit{ID: r.Header.Get("X-Webhook-Id"), StdID: r.Header.Get("Webhook-Id"), Attempt: r.Header.Get("X-Webhook-Attempt"),
			Timestamp: r.Header.Get("X-Webhook-Timestamp"), Body: body,
			SignatureOK: webhook.VerifyV2(secret, r.Header.Get("X-Webhook-Signature-V2"), body, rc.now())}
		rc.mu.Lock()
		rc.hits = append(rc.hits, h)
		n := len(rc.hits)
		rc.mu.Unlock()
		if rc.block != nil {
			rc.block(r, n)
		}
		if rc.delay > 0 {
			time.Sleep(rc.delay)
		}
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "ok")
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *hookReceiver) snapshot() []hit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.hits)
}

// licenseKeys returns data.license_keys of a key.created body.
func licenseKeys(t *testing.T, body []byte) []string {
	t.Helper()
	var v struct {
		Event string `json:"event"`
		Data  struct {
			LicenseKeys []string `json:"license_keys"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("webhook body is not JSON: %v: %s", err, body)
	}
	if v.Event != "key.created" {
		t.Errorf("webhook event = %q, want key.created: %s", v.Event, body)
	}
	return v.Data.LicenseKeys
}

// createWebhook adds a destination of app for key.created and returns its
// id and secret.
func createWebhook(s *kwtest.Server, appID, url string) (int64, string) {
	s.T.Helper()
	w := s.MustAdmin("POST", "/api/admin/webhooks.php", map[string]any{"app_id": appID, "url": url,
		"events": []string{"key.created"}}).Obj("webhook")
	secret, _ := w["secret"].(string)
	id, _ := w["id"].(float64)
	if secret == "" || id == 0 {
		s.T.Fatalf("created webhook = %v, want an id and a secret", w)
	}
	return int64(id), secret
}

func TestWebhooksTwoDispatchersPostgres(t *testing.T) {
	t.Parallel()
	twoDispatchers(t, startPostgresPair)
}

func TestWebhooksTwoDispatchersSQLite(t *testing.T) {
	t.Parallel()
	twoDispatchers(t, startSQLitePair)
}

// Two keyward processes dispatch the same outbox at once: every event is
// fanned out once and every delivery arrives exactly once, and both
// processes did part of the sending.
//
// Each dispatcher runs Dispatcher.FanOut then Dispatcher.SendDue in a loop
// — what Dispatcher.Run does — so that the deliveries each process claimed
// can be counted (the requests themselves do not say which process sent
// them); both Runs are called concurrently at the end and must send nothing
// more.
func twoDispatchers(t *testing.T, start func(*testing.T) (a, b *kwtest.Server)) {
	const events = 200
	a, b := start(t)
	rc := newHookReceiver(t, a.Clock.Now, 20*time.Millisecond)
	app := a.CreateApp("Hooks")
	appB := b.NewApp(app.ID, app.Secret)
	destID, secret := createWebhook(a, app.ID, rc.URL+"/hook")
	rc.secret.Store(secret)

	raise := func(from, to int) []string {
		var keys []string
		for i := from; i < to; i++ {
			c := app
			if i%2 == 1 {
				c = appB
			}
			keys = append(keys, c.GenerateKeys(1, "days", 30, 1)...)
		}
		return keys
	}
	// Half the events wait in the outbox; the other half arrive while both
	// dispatchers run.
	keys := raise(0, events/2)

	ctx := context.Background()
	stop := make(chan struct{})
	var claimed [2]atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, 2)
	for i, s := range []*kwtest.Server{a, b} {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := s.Dispatcher.FanOut(ctx); err != nil {
					errc <- fmt.Errorf("server %d FanOut: %w", i, err)
					return
				}
				n, err := s.Dispatcher.SendDue(ctx)
				if err != nil {
					errc <- fmt.Errorf("server %d SendDue: %w", i, err)
					return
				}
				claimed[i].Add(int64(n))
				if n == 0 {
					time.Sleep(2 * time.Millisecond)
				}
			}
		})
	}
	keys = append(keys, raise(events/2, events)...)

	succeeded := func() int {
		ds, err := a.Webhooks.Deliveries(ctx, webhook.DeliveryFilter{DestinationID: destID, Status: webhook.Succeeded, Limit: 500})
		if err != nil {
			t.Fatalf("Deliveries: %v", err)
		}
		return len(ds)
	}
	deadline := time.Now().Add(60 * time.Second)
	for succeeded() < events && time.Now().Before(deadline) {
		select {
		case err := <-errc:
			close(stop)
			wg.Wait()
			t.Fatal(err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}

	// One more concurrent Run of each must find nothing to send.
	before := len(rc.snapshot())
	var runErr [2]error
	var rw sync.WaitGroup
	for i, s := range []*kwtest.Server{a, b} {
		rw.Go(func() { runErr[i] = s.Dispatcher.Run(ctx) })
	}
	rw.Wait()
	if runErr[0] != nil || runErr[1] != nil {
		t.Fatalf("Dispatcher.Run: %v / %v", runErr[0], runErr[1])
	}

	hits := rc.snapshot()
	if len(hits) != before {
		t.Errorf("a final Run sent %d more requests, want none", len(hits)-before)
	}
	perID := map[string]int{}
	delivered := map[string]int{}
	for _, h := range hits {
		perID[h.ID]++
		if !h.SignatureOK {
			t.Errorf("delivery %s attempt %s: X-Webhook-Signature-V2 does not verify", h.ID, h.Attempt)
		}
		if h.StdID != h.ID || h.Attempt != "1" {
			t.Errorf("delivery %s: webhook-id %q, attempt %q; want the same id, attempt 1", h.ID, h.StdID, h.Attempt)
		}
		for _, k := range licenseKeys(t, h.Body) {
			delivered[k]++
		}
	}
	for id, n := range perID {
		if n != 1 {
			t.Errorf("delivery %s arrived %d times, want exactly once", id, n)
		}
	}
	if len(perID) != events || len(hits) != events {
		t.Errorf("receiver got %d requests for %d deliveries, want %d of each", len(hits), len(perID), events)
	}
	for _, k := range keys {
		if delivered[k] != 1 {
			t.Errorf("the key.created event of %s arrived %d times, want once", k, delivered[k])
		}
	}
	if n := succeeded(); n != events {
		t.Errorf("succeeded deliveries = %d, want %d", n, events)
	}
	all, err := a.Webhooks.Deliveries(ctx, webhook.DeliveryFilter{DestinationID: destID, Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range all {
		if d.Status != webhook.Succeeded || d.Attempts != 1 {
			t.Errorf("delivery %s: status %s after %d attempts, want succeeded after 1", d.ID, d.Status, d.Attempts)
		}
	}
	ca, cb := claimed[0].Load(), claimed[1].Load()
	t.Logf("deliveries claimed: server A %d, server B %d", ca, cb)
	if ca+cb != events {
		t.Errorf("claims: A %d + B %d = %d, want %d (every delivery claimed once)", ca, cb, ca+cb, events)
	}
	if ca == 0 || cb == 0 {
		t.Errorf("claims: A %d, B %d; want both dispatchers to have sent some", ca, cb)
	}
}

// ---- a real crash ----

// keywardBinary builds cmd/keyward once per test binary.
var keywardBinary = sync.OnceValues(func() (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("no go tool: %w", err)
	}
	out, err := exec.Command(goTool, "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("go env GOMOD: not inside the module")
	}
	dir, err := os.MkdirTemp("", "keyward-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "keyward")
	build := exec.Command(goTool, "build", "-o", bin, "./cmd/keyward")
	build.Dir = filepath.Dir(gomod)
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/keyward: %v\n%s", err, out)
	}
	return bin, nil
})

// keywardProcess is `keyward serve` running as a child process.
type keywardProcess struct {
	cmd    *exec.Cmd
	URL    string
	output *kwtest.LogBuffer
	done   chan struct{}
}

var listeningRE = regexp.MustCompile(`listening on (http://\S+)`)

// startKeyward runs `keyward serve` on a free port over dataDir (SQLite),
// with extra KEYWARD_* settings, and returns once it listens.
func startKeyward(t *testing.T, bin, dataDir string, env ...string) *keywardProcess {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data", dataDir, "--bcrypt-cost", "4", "--log-level", "debug")
	for _, e := range os.Environ() { // the test's own KEYWARD_* (a database URL…) must not leak in
		if !strings.HasPrefix(e, "KEYWARD_") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, "KEYWARD_ADMIN_PASSWORD="+kwtest.AdminPassword, "KEYWARD_WEBHOOK_ALLOW_NETWORKS=127.0.0.0/8")
	cmd.Env = append(cmd.Env, env...)
	p := &keywardProcess{cmd: cmd, output: &kwtest.LogBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.output
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start keyward: %v", err)
	}
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			p.output.Write([]byte(line + "\n"))
			if m := listeningRE.FindStringSubmatch(line); m != nil {
				select {
				case urlc <- m[1]:
				default:
				}
			}
		}
		cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.kill() })
	select {
	case p.URL = <-urlc:
	case <-p.done:
		t.Fatalf("keyward exited before listening: %s", p.output)
	case <-time.After(15 * time.Second):
		p.kill()
		t.Fatalf("keyward did not listen within 15 s: %s", p.output)
	}
	return p
}

// kill sends SIGKILL (no shutdown, no flushing) and waits for the exit.
func (p *keywardProcess) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Kill()
	<-p.done
}

// stop asks for a graceful shutdown.
func (p *keywardProcess) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.kill()
	}
}

// client returns a kwtest admin client of the process (only the HTTP
// helpers of kwtest.Server are used: there is no in-process server).
func (p *keywardProcess) client(t *testing.T) *kwtest.Server {
	return &kwtest.Server{T: t, URL: p.URL, Clock: kwtest.NewClock()}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool, detail func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; %s", what, timeout, detail())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// A keyward killed with SIGKILL while a delivery is on the wire (and with
// events in the outbox not yet fanned out) loses nothing: the next process
// on the same data directory sends the interrupted delivery again — same
// X-Webhook-Id, attempt 2, same body — and delivers the waiting events.
//
// The claim's lease (webhook.DispatchConfig.Lease, 80 s by default) is not
// configurable from the command line, so instead of waiting a minute the
// test expires it through the store between the two processes (the lease
// is what keeps a live process's claim from being taken twice; a dead
// process's lease only delays the retry). Set KEYWARD_TEST_WAIT_LEASE=1 to
// wait for the real lease instead (about 90 s).
func TestWebhooksCrashMidDelivery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the keyward binary")
	}
	t.Parallel()
	bin, err := keywardBinary()
	if err != nil {
		t.Skipf("cannot build keyward (%v); the storage-level conformance tests cover the outbox instead", err)
	}
	waitLease := os.Getenv("KEYWARD_TEST_WAIT_LEASE") != ""
	dataDir := t.TempDir()

	arrived := make(chan struct{})
	release := make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	rc := newHookReceiver(t, time.Now, 0)
	rc.block = func(r *http.Request, n int) {
		if n != 1 {
			return
		}
		close(arrived)
		select { // hold the first request until the sender is dead
		case <-release:
		case <-r.Context().Done():
		}
	}

	// First process: a long receiver timeout, so the held request is still
	// in flight when the process dies.
	p1 := startKeyward(t, bin, dataDir, "KEYWARD_WEBHOOK_TIMEOUT=60s", "KEYWARD_WEBHOOK_RETRIES=1s,1s,1s")
	c1 := p1.client(t)
	app := c1.CreateApp("Crash")
	destID, secret := createWebhook(c1, app.ID, rc.URL+"/hook")
	rc.secret.Store(secret)
	first := app.GenerateKeys(1, "days", 30, 1)
	select {
	case <-arrived:
	case <-time.After(15 * time.Second):
		t.Fatalf("the first delivery did not arrive within 15 s; keyward output:\n%s", p1.output)
	}
	// The dispatcher is now stuck on the wire: these events stay in the outbox.
	waiting := append(app.GenerateKeys(1, "days", 30, 1), app.GenerateKeys(2, "days", 30, 1)...)
	p1.kill()
	unblock()

	// What the crash left: the delivery claimed (attempt 1, leased), no
	// attempt recorded, two events not fanned out.
	db, err := store.Open(context.Background(), store.Options{DataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	ws := db.WebhookStore()
	ctx := context.Background()
	ds, err := ws.Deliveries(ctx, webhook.DeliveryFilter{DestinationID: destID, Limit: 10})
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].Status != webhook.Pending || ds[0].Attempts != 1 || ds[0].LockedUntil.IsZero() {
		db.Close()
		t.Fatalf("deliveries after the kill = %+v; want one pending, leased, attempt 1", ds)
	}
	crashed := ds[0]
	if as, err := ws.Attempts(ctx, crashed.ID); err != nil || len(as) != 0 {
		t.Errorf("attempts recorded for the interrupted delivery = %v, %v; want none", as, err)
	}
	errPeek := errors.New("peek only")
	var undispatched int
	err = ws.InTx(ctx, func(tx webhook.Tx) error {
		evs, err := tx.UndispatchedEvents(ctx, 100)
		undispatched = len(evs)
		if err != nil {
			return err
		}
		return errPeek // roll back: only looking
	})
	if !errors.Is(err, errPeek) {
		t.Errorf("reading the outbox: %v", err)
	}
	if undispatched != 2 {
		t.Errorf("events not fanned out after the kill = %d, want 2", undispatched)
	}
	if !waitLease {
		err = ws.InTx(ctx, func(tx webhook.Tx) error {
			d, err := tx.DeliveryForUpdate(ctx, crashed.ID)
			if err != nil {
				return err
			}
			d.LockedUntil = time.Time{}
			return tx.UpdateDelivery(ctx, d)
		})
		if err != nil {
			t.Fatalf("expiring the lease: %v", err)
		}
	}
	db.Close()

	// Second process on the same data directory.
	p2 := startKeyward(t, bin, dataDir, "KEYWARD_WEBHOOK_RETRIES=1s,1s,1s")
	defer p2.stop()
	timeout := 20 * time.Second
	if waitLease {
		timeout = 120 * time.Second
	}
	describe := func() string {
		var b strings.Builder
		for _, h := range rc.snapshot() {
			fmt.Fprintf(&b, "\n  %s attempt %s %s", h.ID, h.Attempt, h.Body)
		}
		return "requests:" + b.String() + "\nkeyward output:\n" + p2.output.String()
	}
	waitFor(t, "the interrupted delivery and the waiting events", timeout, func() bool {
		ids := map[string]bool{}
		for _, h := range rc.snapshot()[1:] {
			ids[h.ID] = true
		}
		return len(ids) == 3
	}, describe)
	// One more dispatcher tick: nothing is sent twice.
	time.Sleep(1500 * time.Millisecond)

	hits := rc.snapshot()
	if hits[0].ID != crashed.ID || hits[0].Attempt != "1" {
		t.Errorf("first request: %s attempt %s, want %s attempt 1", hits[0].ID, hits[0].Attempt, crashed.ID)
	}
	perID := map[string][]hit{}
	for _, h := range hits {
		perID[h.ID] = append(perID[h.ID], h)
		if !h.SignatureOK {
			t.Errorf("request %s attempt %s: X-Webhook-Signature-V2 does not verify", h.ID, h.Attempt)
		}
	}
	if len(perID) != 3 || len(hits) != 4 {
		t.Errorf("receiver got %d requests for %d deliveries, want 4 for 3 (the interrupted one twice); %s", len(hits), len(perID), describe())
	}
	retry := perID[crashed.ID]
	if len(retry) != 2 || retry[1].Attempt != "2" || !bytes.Equal(retry[0].Body, retry[1].Body) {
		t.Errorf("interrupted delivery %s: %d requests, want attempt 1 then attempt 2 with the same body; %s", crashed.ID, len(retry), describe())
	} else {
		ts1, _ := strconv.ParseInt(retry[0].Timestamp, 10, 64)
		ts2, _ := strconv.ParseInt(retry[1].Timestamp, 10, 64)
		if ts1 == 0 || ts2 < ts1 {
			t.Errorf("attempt timestamps %q then %q: want the retry's fresh and not earlier", retry[0].Timestamp, retry[1].Timestamp)
		}
	}
	if got := licenseKeys(t, retry[0].Body); !slices.Equal(got, first) {
		t.Errorf("interrupted delivery carries keys %v, want %v", got, first)
	}
	var got []string
	for id, hs := range perID {
		if id == crashed.ID {
			continue
		}
		if len(hs) != 1 || hs[0].Attempt != "1" {
			t.Errorf("delivery %s: %d requests (attempt %s), want one, attempt 1", id, len(hs), hs[0].Attempt)
		}
		got = append(got, licenseKeys(t, hs[0].Body)...)
	}
	slices.Sort(got)
	slices.Sort(waiting)
	if !slices.Equal(got, waiting) {
		t.Errorf("keys of the deliveries after the restart = %v, want the waiting events' %v", got, waiting)
	}

	// The log through the second process: three succeeded deliveries; the
	// interrupted one has one recorded attempt, number 2.
	c2 := p2.client(t)
	waitFor(t, "three succeeded deliveries in the log", 5*time.Second, func() bool {
		r := c2.MustAdmin("GET", fmt.Sprintf("/api/admin/webhooks.php?action=deliveries&id=%d&status=succeeded", destID), nil)
		list, _ := r.Body["deliveries"].([]any)
		return len(list) == 3
	}, describe)
	r := c2.MustAdmin("GET", "/api/admin/webhooks.php?action=delivery&delivery_id="+crashed.ID, nil)
	d := r.Obj("delivery")
	as, _ := r.Body["attempts"].([]any)
	if d["status"] != webhook.Succeeded || d["attempts"] != float64(2) || len(as) != 1 || as[0].(map[string]any)["attempt"] != float64(2) ||
		as[0].(map[string]any)["status_code"] != float64(200) {
		t.Errorf("interrupted delivery in the log = %v, attempts %v; want succeeded after 2 with attempt 2 (200) recorded", d, as)
	}
}
