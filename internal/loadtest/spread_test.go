package loadtest_test

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/loadtest"
)

// counter is a reverse proxy in front of one keyward that counts the
// requests it passed on, by path: what that address got.
type counter struct {
	*httptest.Server
	mu     sync.Mutex
	byPath map[string]int
}

func countingProxy(t *testing.T, target string) *counter {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	c := &counter{byPath: map[string]int{}}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.ErrorLog = log.New(io.Discard, "", 0) // the herd's last heartbeats are cut off
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.byPath[r.URL.Path]++
		c.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *counter) n(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byPath[path]
}

// TestRunSpreadsOverAddresses drives two keyward servers on one database
// through one address list: provisioning (the admin calls and the sessions'
// logins) goes to the first address only, the measured requests reach both,
// and sessions work across them — every heartbeat the second server answers
// is of a session opened on the first, and in mode mix a session logged in
// again on one is kept alive by the other — without a single failure.
func TestRunSpreadsOverAddresses(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		clock := kwtest.NewClock()
		a := kwtest.Start(t, kwtest.Options{Engine: engine, Clock: clock})
		b := kwtest.Start(t, kwtest.Options{DatabaseURL: a.DatabaseURL, DataDir: a.DataDir, Clock: clock})
		const sessions = 12
		for _, mode := range []loadtest.Mode{loadtest.Heartbeat, loadtest.Mix} {
			t.Run(string(mode), func(t *testing.T) {
				pa, pb := countingProxy(t, a.URL), countingProxy(t, b.URL)
				rep, err := loadtest.Run(context.Background(), loadtest.Options{
					URL:           pa.URL + ", " + pb.URL + "/",
					AdminUsername: "admin", AdminPassword: kwtest.AdminPassword,
					Mode: mode, Sessions: sessions, Conns: 4, Duration: 300 * time.Millisecond, Warmup: 0,
					Mix:  []loadtest.Weight{{Kind: loadtest.KindHeartbeat, Weight: 1}, {Kind: loadtest.KindLogin, Weight: 1}},
					Herd: mode == loadtest.Mix, HerdConns: 4,
					Now: clock.Now,
				})
				if err != nil {
					t.Fatal(err)
				}
				if rep.Target.Requests == 0 || rep.Target.Errors != 0 {
					t.Fatalf("%s: %d requests, %d errors (first: %s)", mode, rep.Target.Requests, rep.Target.Errors, rep.Target.FirstError)
				}
				// Provisioning went through the first address only.
				if pb.n("/api/admin/login.php") != 0 || pb.n("/api/admin/keys.php") != 0 || pa.n("/api/admin/keys.php") == 0 {
					t.Errorf("admin calls: first %v, second %v", pa.byPath, pb.byPath)
				}
				// Both addresses served the measured load.
				if pa.n("/api/auth/heartbeat.php") == 0 || pb.n("/api/auth/heartbeat.php") == 0 {
					t.Errorf("heartbeats: first %d, second %d", pa.n("/api/auth/heartbeat.php"), pb.n("/api/auth/heartbeat.php"))
				}
				switch mode {
				case loadtest.Heartbeat:
					// Every session logged in on the first; the second
					// answered heartbeats of them without an error.
					if pa.n("/api/auth/login.php") != sessions || pb.n("/api/auth/login.php") != 0 {
						t.Errorf("logins: first %d, second %d, want %d and 0", pa.n("/api/auth/login.php"), pb.n("/api/auth/login.php"), sessions)
					}
				case loadtest.Mix:
					if pb.n("/api/auth/login.php") == 0 {
						t.Error("the second address got none of the mix's logins")
					}
					h := rep.Herd
					if h == nil || h.Recovered != sessions || h.Heartbeat.Errors != 0 {
						t.Errorf("herd: %+v", h)
					}
				}
				if len(rep.PerURL) != 2 || rep.PerURL[0].URL != pa.URL || rep.PerURL[1].URL != pb.URL ||
					rep.PerURL[0].Requests == 0 || rep.PerURL[1].Requests == 0 ||
					rep.PerURL[0].Requests+rep.PerURL[1].Requests != rep.Target.Requests {
					t.Errorf("per address %+v, %d requests in all", rep.PerURL, rep.Target.Requests)
				}
				var out strings.Builder
				rep.Print(&out)
				if !strings.Contains(out.String(), "requests per address: "+pa.URL) {
					t.Errorf("report lacks the spread:\n%s", out.String())
				}
			})
		}
	})
}

// TestRunRefusesEmptyAddress makes sure a malformed address list is an
// error before anything is sent.
func TestRunRefusesEmptyAddress(t *testing.T) {
	_, err := loadtest.Run(context.Background(), loadtest.Options{URL: "http://127.0.0.1:1,,http://127.0.0.1:2"})
	if err == nil || !strings.Contains(err.Error(), "empty address") {
		t.Fatalf("err = %v, want an empty address refusal", err)
	}
}
