package loadtest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/loadtest"
)

// TestRunMix drives a real server briefly in mode mix with every kind
// weighed enough to occur, and checks that each kind ran without a failure,
// that the update checks met a published release, that the session count
// stayed what was provisioned, and that the report prints each kind.
func TestRunMix(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		srv := kwtest.Start(t, kwtest.Options{Engine: engine})
		rep, err := loadtest.Run(context.Background(), loadtest.Options{
			URL: srv.URL, AdminUsername: "admin", AdminPassword: kwtest.AdminPassword,
			Mode: loadtest.Mix, Sessions: 30, Conns: 4, Duration: 400 * time.Millisecond, Warmup: 50 * time.Millisecond,
			Mix: []loadtest.Weight{{Kind: loadtest.KindHeartbeat, Weight: 4}, {Kind: loadtest.KindLogin, Weight: 2},
				{Kind: loadtest.KindCheckKey, Weight: 2}, {Kind: loadtest.KindUpdate, Weight: 2}},
			Now: srv.Clock.Now,
		})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Target.Name != "mix" || rep.Sessions != 30 {
			t.Errorf("phase %q, %d sessions", rep.Target.Name, rep.Sessions)
		}
		if rep.Target.Requests == 0 || rep.Target.Errors != 0 {
			t.Errorf("mix: %d requests, %d errors (first: %s)", rep.Target.Requests, rep.Target.Errors, rep.Target.FirstError)
		}
		want := []string{"heartbeat", "login", "check-key", "update"}
		if len(rep.Kinds) != len(want) {
			t.Fatalf("kinds %+v, want %v", rep.Kinds, want)
		}
		var sum int64
		for i, k := range rep.Kinds {
			if k.Name != want[i] || k.Requests == 0 || k.Errors != 0 || k.P50 <= 0 || k.P99 < k.P50 {
				t.Errorf("kind %d: %+v", i, k)
			}
			sum += k.Requests
		}
		if sum != rep.Target.Requests {
			t.Errorf("kinds add up to %d requests, total %d", sum, rep.Target.Requests)
		}
		if !rep.UpdateRelease {
			t.Error("no release was published for the update checks")
		}
		var out strings.Builder
		rep.Print(&out)
		for _, s := range append(want, "mix / echo:", "update available") {
			if !strings.Contains(out.String(), s) {
				t.Errorf("report lacks %q:\n%s", s, out.String())
			}
		}
		if len(srv.MustAdmin("GET", "/api/admin/apps.php", nil).Body["apps"].([]any)) != 0 {
			t.Error("app left behind after the run")
		}
	})
}

// TestRunMixWithoutUpdates leaves update checks out of the mix: no release
// is published and only the weighed kinds are reported.
func TestRunMixWithoutUpdates(t *testing.T) {
	srv := kwtest.Start(t, kwtest.Options{})
	rep, err := loadtest.Run(context.Background(), loadtest.Options{
		URL: srv.URL, AdminUsername: "admin", AdminPassword: kwtest.AdminPassword,
		Mode: loadtest.Mix, Sessions: 10, Conns: 2, Duration: 200 * time.Millisecond,
		Mix: []loadtest.Weight{{Kind: loadtest.KindHeartbeat, Weight: 1}, {Kind: loadtest.KindUpdate, Weight: 0}},
		Now: srv.Clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.UpdateRelease || len(rep.Kinds) != 1 || rep.Kinds[0].Name != "heartbeat" || rep.Kinds[0].Errors != 0 {
		t.Errorf("release %v, kinds %+v", rep.UpdateRelease, rep.Kinds)
	}
}

// TestRunHerd runs the herd after a short mix: every session's device logs
// in again, the recovery time is reported, heartbeats of the recovered
// sessions went on without failures, and the report says so.
func TestRunHerd(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		srv := kwtest.Start(t, kwtest.Options{Engine: engine})
		rep, err := loadtest.Run(context.Background(), loadtest.Options{
			URL: srv.URL, AdminUsername: "admin", AdminPassword: kwtest.AdminPassword,
			Mode: loadtest.Mix, Sessions: 40, Conns: 4, Duration: 200 * time.Millisecond,
			Herd: true, HerdConns: 8, HerdTimeout: time.Minute, HerdBackoff: 10 * time.Millisecond,
			Now: srv.Clock.Now,
		})
		if err != nil {
			t.Fatal(err)
		}
		h := rep.Herd
		if h == nil {
			t.Fatal("no herd in the report")
		}
		if h.Sessions != 40 || h.Recovered != 40 {
			t.Errorf("%d of %d sessions recovered, want 40 of 40", h.Recovered, h.Sessions)
		}
		if h.Recover <= 0 || h.Attempts < 40 || h.Login.Requests != h.Attempts || h.Login.P99 <= 0 {
			t.Errorf("herd %+v", h)
		}
		if h.Attempts-h.Refusals != 40 {
			t.Errorf("%d attempts, %d refused: want exactly 40 successes", h.Attempts, h.Refusals)
		}
		if h.Heartbeat.Errors != 0 {
			t.Errorf("%d heartbeat errors during the herd (first: %s)", h.Heartbeat.Errors, h.Heartbeat.FirstError)
		}
		if rep.Failures() != 0 {
			t.Errorf("%d failures", rep.Failures())
		}
		var out strings.Builder
		rep.Print(&out)
		if !strings.Contains(out.String(), "herd: 40/40 sessions logged in again in ") {
			t.Errorf("report lacks the herd line:\n%s", out.String())
		}
	})
}

// TestHerdNeedsSessions refuses a herd in a mode without live sessions
// before anything is provisioned.
func TestHerdNeedsSessions(t *testing.T) {
	_, err := loadtest.Run(context.Background(), loadtest.Options{URL: "http://127.0.0.1:1", Mode: loadtest.Login, Herd: true})
	if err == nil || !strings.Contains(err.Error(), "--herd needs live sessions") {
		t.Fatalf("err = %v", err)
	}
}

// TestHalfRateRefusesMix refuses --half-rate in mode mix (the paced phase
// sends one kind of request) before anything is provisioned.
func TestHalfRateRefusesMix(t *testing.T) {
	_, err := loadtest.Run(context.Background(), loadtest.Options{URL: "http://127.0.0.1:1", Mode: loadtest.Mix, HalfRate: true})
	if err == nil || !strings.Contains(err.Error(), "--half-rate measures one kind of request") {
		t.Fatalf("err = %v", err)
	}
}

// TestParseMix checks the --mix syntax: the default spelled out, kinds left
// out, and each kind of bad input refused with a message naming it.
func TestParseMix(t *testing.T) {
	ws, err := loadtest.ParseMix("heartbeat=95, login=2,check-key=2,update=1")
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 4 || ws[0] != (loadtest.Weight{Kind: loadtest.KindHeartbeat, Weight: 95}) || ws[3] != (loadtest.Weight{Kind: loadtest.KindUpdate, Weight: 1}) {
		t.Errorf("parsed %+v", ws)
	}
	if ws, err := loadtest.ParseMix("login=1"); err != nil || len(ws) != 1 {
		t.Errorf("login=1: %+v, %v", ws, err)
	}
	for in, want := range map[string]string{
		"":                        "not kind=weight",
		"heartbeat":               "not kind=weight",
		"echo=1":                  "unknown kind",
		"login=1,login=2":         "given twice",
		"login=-1":                "whole number",
		"login=x":                 "whole number",
		"login=99999999999999999": "whole number",
		"login=0,update=0":        "all weights are 0",
	} {
		if _, err := loadtest.ParseMix(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", in, err, want)
		}
	}
}

// FuzzParseMix: any input parses to weights that are known kinds, in range,
// with a positive total — or is an error; never a panic.
func FuzzParseMix(f *testing.F) {
	for _, s := range []string{"heartbeat=95,login=2,check-key=2,update=1", "login=1", "", "=", ",,", "update=0,login=1000000", "heartbeat=1,heartbeat=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ws, err := loadtest.ParseMix(s)
		if err != nil {
			return
		}
		total := 0
		for _, w := range ws {
			if w.Weight < 0 || w.Weight > 1000000 {
				t.Fatalf("%q: weight %d", s, w.Weight)
			}
			total += w.Weight
		}
		if total <= 0 {
			t.Fatalf("%q: total %d", s, total)
		}
	})
}
