package loadtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Kind is one kind of request in a mix.
type Kind string

// Kinds of a mix.
const (
	KindHeartbeat Kind = "heartbeat"
	KindLogin     Kind = "login"
	KindCheckKey  Kind = "check-key"
	KindUpdate    Kind = "update"
)

// kinds is the fixed order kinds are reported in.
var kinds = []Kind{KindHeartbeat, KindLogin, KindCheckKey, KindUpdate}

// Weight is a kind's share of a mix.
type Weight struct {
	Kind   Kind
	Weight int
}

// DefaultMix is what a vendor's fleet sends: mostly heartbeats of running
// apps, a few logins and key checks, and the odd update check.
var DefaultMix = []Weight{{KindHeartbeat, 95}, {KindLogin, 2}, {KindCheckKey, 2}, {KindUpdate, 1}}

// ParseMix reads "heartbeat=95,login=2,check-key=2,update=1": each kind at
// most once, weights 0–1000000, at least one above 0. Kinds left out weigh 0.
func ParseMix(s string) ([]Weight, error) {
	var ws []Weight
	seen := map[Kind]bool{}
	total := 0
	for _, part := range strings.Split(s, ",") {
		name, num, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("mix: %q is not kind=weight", part)
		}
		k := Kind(strings.TrimSpace(name))
		if !slices.Contains(kinds, k) {
			return nil, fmt.Errorf("mix: unknown kind %q (heartbeat, login, check-key, update)", k)
		}
		if seen[k] {
			return nil, fmt.Errorf("mix: %s given twice", k)
		}
		seen[k] = true
		w, err := strconv.Atoi(strings.TrimSpace(num))
		if err != nil || w < 0 || w > 1000000 {
			return nil, fmt.Errorf("mix: weight of %s must be a whole number 0–1000000", k)
		}
		total += w
		ws = append(ws, Weight{k, w})
	}
	if total == 0 {
		return nil, errors.New("mix: all weights are 0")
	}
	return ws, nil
}

// kindStats gathers one kind's requests of a mix phase.
type kindStats struct {
	mu    sync.Mutex
	lat   []time.Duration
	errs  int64
	first string
}

func (k *kindStats) add(d time.Duration, err error) {
	k.mu.Lock()
	k.lat = append(k.lat, d)
	if err != nil {
		k.errs++
		if k.first == "" {
			k.first = err.Error()
		}
	}
	k.mu.Unlock()
}

func (k *kindStats) result(name string, elapsed time.Duration) Result {
	k.mu.Lock()
	defer k.mu.Unlock()
	all := slices.Clone(k.lat)
	slices.Sort(all)
	return Result{Name: name, Requests: int64(len(all)), Errors: k.errs, Elapsed: elapsed,
		P50: percentile(all, 50), P99: percentile(all, 99), FirstError: k.first}
}

// mixer picks each request's kind by weight and records it per kind.
type mixer struct {
	t     *Target
	ws    []Weight
	total int
	stats map[Kind]*kindStats // nil: not recording (warmup)
}

func newMixer(t *Target, ws []Weight, record bool) *mixer {
	m := &mixer{t: t, ws: ws}
	for _, w := range ws {
		m.total += w.Weight
	}
	if record {
		m.stats = map[Kind]*kindStats{}
		for _, k := range kinds {
			m.stats[k] = &kindStats{}
		}
	}
	return m
}

func (m *mixer) pick() Kind {
	n := rand.IntN(m.total)
	for _, w := range m.ws {
		if n < w.Weight {
			return w.Kind
		}
		n -= w.Weight
	}
	return m.ws[len(m.ws)-1].Kind
}

// do sends one request of a randomly weighted kind through the address of
// i's connection.
func (m *mixer) do(ctx context.Context, i int) error {
	k := m.pick()
	t0 := time.Now()
	err := m.t.doKind(ctx, k, i)
	if m.stats != nil {
		m.stats[k].add(time.Since(t0), err)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", k, err)
	}
	return nil
}

// results lists the kinds that had a weight, in report order.
func (m *mixer) results(elapsed time.Duration) []Result {
	var out []Result
	for _, k := range kinds {
		if i := slices.IndexFunc(m.ws, func(w Weight) bool { return w.Kind == k }); i >= 0 && m.ws[i].Weight > 0 {
			out = append(out, m.stats[k].result(string(k), elapsed))
		}
	}
	return out
}

// doKind sends one request of kind k through the address of connection
// conn (see Target.url). Heartbeats and logins go to a random
// live session under its lock: a login in the mix is that session's device
// logging in again, which opens a new session and retires its old one (the
// server's rule for a one-device key), so the session count stays the same
// and later heartbeats use the new id.
func (t *Target) doKind(ctx context.Context, k Kind, conn int) error {
	switch k {
	case KindHeartbeat, KindLogin:
		if len(t.Sessions) == 0 {
			return errors.New("no sessions provisioned")
		}
		i := rand.IntN(len(t.Sessions))
		t.locks[i].Lock()
		defer t.locks[i].Unlock()
		if k == KindHeartbeat {
			_, err := t.c.sealed(ctx, t.keys, t.Secret, t.url(conn, "/api/auth/heartbeat.php"), heartbeatBody(t.Sessions[i]))
			return err
		}
		r, err := t.c.sealedLogin(ctx, t, t.url(conn, ""), t.Sessions[i].Key.String(), deviceID(i))
		if err != nil {
			return err
		}
		return t.Sessions[i].ID.set(r.SessionID)
	case KindCheckKey:
		return t.checkKey(ctx, conn, rand.IntN(len(t.Keys)))
	case KindUpdate:
		i := rand.IntN(len(t.Keys))
		inner, _ := json.Marshal(map[string]string{"v": "1.0.0", "hwid": deviceID(i), "license_key": t.Keys[i].String()})
		r, err := t.c.sealed(ctx, t.keys, t.Secret, t.url(conn, "/api/update/check.php"), inner)
		if err != nil {
			return err
		}
		if r.UpdateAvailable == nil || *r.UpdateAvailable != t.hasRelease {
			return fmt.Errorf("update check: update_available %v, want %v", r.UpdateAvailable != nil && *r.UpdateAvailable, t.hasRelease)
		}
		return nil
	}
	return fmt.Errorf("unknown kind %q", k)
}

func deviceID(i int) string { return "loadtest-device-" + strconv.Itoa(i) }

// publishRelease publishes version 1.0.1 with a tiny artifact, so that the
// mix's update checks (from 1.0.0) are answered "update available" by the
// full rule walk rather than the short "no releases" answer.
func (t *Target) publishRelease(ctx context.Context) error {
	var created struct {
		Release struct {
			ID json.Number `json:"id"`
		}
	}
	if err := t.c.admin(ctx, t.token, "POST", "/api/admin/updates.php", map[string]any{"app_id": t.AppID,
		"version": "1.0.1", "channel": "stable", "changelog": "loadtest"}, &created); err != nil {
		return fmt.Errorf("create release: %w", err)
	}
	id := created.Release.ID.String()
	if err := t.c.adminRaw(ctx, t.token, "PUT", "/api/admin/updates.php?action=upload&app_id="+t.AppID+"&id="+id+
		"&file_name=loadtest.bin", "application/octet-stream", []byte("loadtest artifact\n"), nil); err != nil {
		return fmt.Errorf("upload artifact: %w", err)
	}
	if err := t.c.admin(ctx, t.token, "POST", "/api/admin/updates.php", map[string]any{"app_id": t.AppID,
		"action": "publish", "id": created.Release.ID}, nil); err != nil {
		return fmt.Errorf("publish release: %w", err)
	}
	t.hasRelease = true
	return nil
}

// HerdResult is the outcome of a thundering herd: every live session's
// device logging in again at once.
type HerdResult struct {
	Sessions  int           // sessions that had to log in again
	Recovered int           // of them, logged in successfully before the timeout
	Recover   time.Duration // time until the last one succeeded (or the timeout)
	Attempts  int64         // login attempts, retries included
	Refusals  int64         // failed attempts (refusals, 429, 5xx, transport)
	// PeakRefusalRate is the most refusals in any one second of the herd.
	PeakRefusalRate int64
	Login           Result // every login attempt of the herd
	Heartbeat       Result // heartbeats of recovered sessions meanwhile
}

// herdBackoff is the wait before retry n (0-based): full jitter over an
// exponential window from base, capped at 8 s — how a well-behaved client
// backs off (no shipped SDK defines one; see docs/performance.md).
func herdBackoff(base time.Duration, n int) time.Duration {
	w := base << min(n, 16)
	if w > 8*time.Second || w <= 0 {
		w = 8 * time.Second
	}
	return time.Duration(rand.Int64N(int64(w)) + 1)
}

// Herd has every live session's device log in again at once, each over a
// connection pool of conns (retrying failures with herdBackoff from
// backoff), while conns heartbeat workers keep heartbeating the sessions
// that have recovered. It stops at timeout. With several addresses, session
// i logs in through address i mod n and heartbeat worker w sends to address
// w mod n, so a session is often kept alive by another process than the one
// it logged in on.
func (t *Target) Herd(ctx context.Context, conns int, timeout, backoff time.Duration) HerdResult {
	n := len(t.Sessions)
	hc := newClient(t.c.base, conns, t.c.now) // base unused: every call names its address
	defer hc.close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var (
		// back lists the sessions logged in again, in order, for the
		// heartbeat workers to pick from (-1: a slot claimed, not yet set).
		back      = make([]atomic.Int32, n)
		done      atomic.Int64
		attempts  atomic.Int64
		refusals  atomic.Int64
		lastOK    atomic.Int64 // ns since start of the last success
		logins    kindStats
		beats     kindStats
		bucketsMu sync.Mutex
		buckets   = map[int64]int64{} // refusals per second of the herd
	)
	for i := range back {
		back[i].Store(-1)
	}
	start := time.Now()
	var hb sync.WaitGroup
	hbCtx, stopHB := context.WithCancel(ctx)
	for w := 0; w < conns; w++ {
		hb.Add(1)
		hbURL := t.urls[w%len(t.urls)] + "/api/auth/heartbeat.php"
		go func() {
			defer hb.Done()
			for hbCtx.Err() == nil {
				m := done.Load()
				if m == 0 {
					time.Sleep(time.Millisecond) // nothing to heartbeat yet
					continue
				}
				i := int(back[rand.Int64N(m)].Load())
				if i < 0 {
					continue // claimed a moment ago, set in a moment
				}
				t.locks[i].Lock()
				s := t.Sessions[i]
				t.locks[i].Unlock()
				t0 := time.Now()
				_, err := t.c.sealed(hbCtx, t.keys, t.Secret, hbURL, heartbeatBody(s))
				if hbCtx.Err() != nil {
					return // cut off by the end of the herd, not a failure
				}
				beats.add(time.Since(t0), err)
			}
		}()
	}

	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			key := t.Sessions[i].Key.String()
			for try := 0; ctx.Err() == nil; try++ {
				attempts.Add(1)
				t0 := time.Now()
				r, err := hc.sealedLogin(ctx, t, t.urls[i%len(t.urls)], key, deviceID(i))
				if ctx.Err() != nil {
					return
				}
				logins.add(time.Since(t0), err)
				if err == nil {
					t.locks[i].Lock()
					err = t.Sessions[i].ID.set(r.SessionID)
					t.locks[i].Unlock()
					if err != nil {
						return // not recovered: the report counts it
					}
					back[done.Add(1)-1].Store(int32(i))
					for at := int64(time.Since(start)); ; {
						prev := lastOK.Load()
						if prev >= at || lastOK.CompareAndSwap(prev, at) {
							break
						}
					}
					return
				}
				refusals.Add(1)
				sec := int64(time.Since(start) / time.Second)
				bucketsMu.Lock()
				buckets[sec]++
				bucketsMu.Unlock()
				select {
				case <-ctx.Done():
				case <-time.After(herdBackoff(backoff, try)):
				}
			}
		}(i)
	}
	wg.Wait()
	stopHB()
	hb.Wait()
	elapsed := time.Since(start)

	res := HerdResult{Sessions: n, Recovered: int(done.Load()), Attempts: attempts.Load(), Refusals: refusals.Load(),
		Login: logins.result("herd-login", elapsed), Heartbeat: beats.result("herd-beat", elapsed)}
	res.Recover = time.Duration(lastOK.Load())
	if res.Recovered < n {
		res.Recover = elapsed
	}
	for _, c := range buckets {
		res.PeakRefusalRate = max(res.PeakRefusalRate, c)
	}
	return res
}

// sealedLogin logs device hwid in on key at the keyward at base, over c
// (the herd has its own connection pool).
func (c *client) sealedLogin(ctx context.Context, t *Target, base, key, hwid string) (*reply, error) {
	inner, _ := json.Marshal(map[string]string{"license_key": key, "hwid": hwid})
	return c.sealed(ctx, t.keys, t.Secret, base+"/api/auth/login.php", inner)
}
