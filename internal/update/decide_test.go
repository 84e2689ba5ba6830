package update

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func v(s string) Version {
	x, err := ParseVersion(s)
	if err != nil {
		panic(err)
	}
	return x
}

func vp(s string) *Version { x := v(s); return &x }

// rel is a published, fully rolled-out universal release of channel.
func rel(version, channel string) Release {
	return Release{Version: v(version), Channel: channel, Published: true, Rollout: FullRollout,
		Salt: []byte("salt-" + version), Artifacts: []Artifact{{FileName: "app-" + version}}}
}

func with(r Release, f func(*Release)) Release { f(&r); return r }

var policy = Policy{AppID: "app"}

func TestDecide(t *testing.T) {
	win := []Artifact{{OS: "windows", Arch: "x64", FileName: "win64"}, {OS: "windows", Arch: "arm64", FileName: "winarm"}}
	cases := []struct {
		name      string
		pol       Policy
		rels      []Release
		req       Request
		want      string // offered version, "" for none
		mandatory bool
		artifact  string
	}{
		{"newest stable wins", policy, []Release{rel("1.1.0", Stable), rel("1.3.0", Stable), rel("1.2.0", Stable)},
			Request{Version: v("1.0.0")}, "1.3.0", false, "app-1.3.0"},
		{"nothing newer", policy, []Release{rel("1.0.0", Stable), rel("0.9.0", Stable)}, Request{Version: v("1.0.0")}, "", false, ""},
		{"stable does not see beta", policy, []Release{rel("1.1.0", Stable), rel("1.2.0", Beta)},
			Request{Version: v("1.0.0"), Channel: Stable}, "1.1.0", false, ""},
		{"beta sees beta and stable", policy, []Release{rel("1.3.0", Stable), rel("1.2.0", Beta)},
			Request{Version: v("1.0.0"), Channel: Beta}, "1.3.0", false, ""},
		{"alpha sees all", policy, []Release{rel("1.1.0", Stable), rel("1.2.0", Beta), rel("1.4.0", Alpha)},
			Request{Version: v("1.0.0"), Channel: Alpha}, "1.4.0", false, ""},
		{"beta does not see alpha", policy, []Release{rel("1.4.0", Alpha)}, Request{Version: v("1.0.0"), Channel: Beta}, "", false, ""},
		{"pre-release not on stable", policy, []Release{rel("2.0.0-rc.1", Stable), rel("1.1.0", Stable)},
			Request{Version: v("1.0.0")}, "1.1.0", false, ""},
		{"pre-release precedence on beta", policy, []Release{rel("2.0.0-beta.2", Beta), rel("2.0.0-beta.11", Beta)},
			Request{Version: v("2.0.0-beta.2"), Channel: Beta}, "2.0.0-beta.11", false, ""},
		{"release beats its pre-release", policy, []Release{rel("2.0.0-rc.1", Beta), rel("2.0.0", Stable)},
			Request{Version: v("2.0.0-rc.1"), Channel: Beta}, "2.0.0", false, ""},
		{"unpublished and yanked skipped", policy, []Release{with(rel("1.3.0", Stable), func(r *Release) { r.Published = false }),
			with(rel("1.2.0", Stable), func(r *Release) { r.Yanked = true }), rel("1.1.0", Stable)},
			Request{Version: v("1.0.0")}, "1.1.0", false, ""},
		{"exact platform artifact", policy, []Release{with(rel("1.1.0", Stable), func(r *Release) { r.Artifacts = win })},
			Request{Version: v("1.0.0"), OS: "windows", Arch: "arm64"}, "1.1.0", false, "winarm"},
		{"no artifact for the platform falls back", policy, []Release{with(rel("1.2.0", Stable), func(r *Release) { r.Artifacts = win }),
			rel("1.1.0", Stable)}, Request{Version: v("1.0.0"), OS: "macos", Arch: "arm64"}, "1.1.0", false, "app-1.1.0"},
		{"universal artifact serves every platform", policy, []Release{rel("1.1.0", Stable)},
			Request{Version: v("1.0.0"), OS: "linux", Arch: "x64"}, "1.1.0", false, "app-1.1.0"},
		{"os-wide artifact", policy, []Release{with(rel("1.1.0", Stable), func(r *Release) {
			r.Artifacts = []Artifact{{OS: "linux", FileName: "linux-any"}, {FileName: "universal"}}
		})}, Request{Version: v("1.0.0"), OS: "linux", Arch: "arm64"}, "1.1.0", false, "linux-any"},
		{"a caller without os or arch gets a release's only artifact", policy, []Release{with(rel("1.1.0", Stable), func(r *Release) {
			r.Artifacts = []Artifact{{OS: "windows", Arch: "x64", FileName: "win64"}}
		})}, Request{Version: v("1.0.0")}, "1.1.0", false, "win64"},
		{"but not one of several", policy, []Release{with(rel("1.1.0", Stable), func(r *Release) { r.Artifacts = win })},
			Request{Version: v("1.0.0")}, "", false, ""},
		{"a caller without arch gets its os's only artifact", policy, []Release{with(rel("1.1.0", Stable), func(r *Release) {
			r.Artifacts = []Artifact{{OS: "windows", Arch: "x64", FileName: "win64"}, {OS: "macos", Arch: "arm64", FileName: "mac"}}
		})}, Request{Version: v("1.0.0"), OS: "macos"}, "1.1.0", false, "mac"},
		{"but not one of several of its os", policy, []Release{with(rel("1.1.0", Stable), func(r *Release) { r.Artifacts = win })},
			Request{Version: v("1.0.0"), OS: "windows"}, "", false, ""},
		{"a caller that says its arch gets no other arch", policy, []Release{with(rel("1.1.0", Stable), func(r *Release) {
			r.Artifacts = []Artifact{{OS: "windows", Arch: "x64", FileName: "win64"}}
		})}, Request{Version: v("1.0.0"), OS: "windows", Arch: "arm64"}, "", false, ""},
		{"min_version gate offers the stepping stone", policy, []Release{
			with(rel("3.0.0", Stable), func(r *Release) { r.MinVersion = vp("2.0.0") }), rel("2.5.0", Stable)},
			Request{Version: v("1.0.0")}, "2.5.0", false, ""},
		{"min_version met", policy, []Release{with(rel("3.0.0", Stable), func(r *Release) { r.MinVersion = vp("2.0.0") }), rel("2.5.0", Stable)},
			Request{Version: v("2.0.0")}, "3.0.0", false, ""},
		{"release says mandatory", policy, []Release{with(rel("1.1.0", Stable), func(r *Release) { r.Mandatory = true })},
			Request{Version: v("1.0.0")}, "1.1.0", true, ""},
		{"below min_supported forces mandatory", Policy{AppID: "app", MinSupported: map[string]Version{Stable: v("1.5.0")}},
			[]Release{rel("2.0.0", Stable)}, Request{Version: v("1.0.0")}, "2.0.0", true, ""},
		{"min_supported of another channel does not apply", Policy{AppID: "app", MinSupported: map[string]Version{Beta: v("1.5.0")}},
			[]Release{rel("2.0.0", Stable)}, Request{Version: v("1.0.0")}, "2.0.0", false, ""},
		{"a skipped mandatory release makes the jump mandatory", policy, []Release{
			with(rel("2.0.0", Stable), func(r *Release) { r.Mandatory = true }), rel("2.1.0", Stable)},
			Request{Version: v("1.9.0")}, "2.1.0", true, ""},
		{"a mandatory release already installed does not", policy, []Release{
			with(rel("2.0.0", Stable), func(r *Release) { r.Mandatory = true }), rel("2.1.0", Stable)},
			Request{Version: v("2.0.0")}, "2.1.0", false, ""},
		{"a yanked or beta mandatory release does not", policy, []Release{
			with(rel("2.0.0", Stable), func(r *Release) { r.Mandatory, r.Yanked = true, true }),
			with(rel("2.0.5", Beta), func(r *Release) { r.Mandatory = true }), rel("2.1.0", Stable)},
			Request{Version: v("1.9.0")}, "2.1.0", false, ""},
		{"at min_supported is not forced", Policy{AppID: "app", MinSupported: map[string]Version{Stable: v("1.0.0")}},
			[]Release{rel("2.0.0", Stable)}, Request{Version: v("1.0.0")}, "2.0.0", false, ""},
		{"rollout 0 holds back to the older release", policy, []Release{with(rel("1.2.0", Stable), func(r *Release) { r.Rollout = 0 }),
			rel("1.1.0", Stable)}, Request{Version: v("1.0.0"), HWID: "pc"}, "1.1.0", false, ""},
		{"no hwid or key waits for 100 %", policy, []Release{with(rel("1.2.0", Stable), func(r *Release) { r.Rollout = 9999 }),
			rel("1.1.0", Stable)}, Request{Version: v("1.0.0")}, "1.1.0", false, ""},
		{"halted rollout keeps its percentage", policy, []Release{with(rel("1.2.0", Stable), func(r *Release) { r.Halted, r.Rollout = true, 0 }),
			rel("1.1.0", Stable)}, Request{Version: v("1.0.0"), HWID: "pc"}, "1.1.0", false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Decide(c.pol, c.rels, c.req)
			got := ""
			if d.Release != nil {
				got = d.Release.Version.String()
			}
			if got != c.want {
				t.Fatalf("offered %q, want %q; reasons %+v", got, c.want, d.Reasons)
			}
			if d.Release == nil {
				if d.Artifact != nil || d.Mandatory {
					t.Fatalf("no release but artifact %v mandatory %v", d.Artifact, d.Mandatory)
				}
				return
			}
			if d.Mandatory != c.mandatory {
				t.Fatalf("mandatory = %v, want %v", d.Mandatory, c.mandatory)
			}
			if c.artifact != "" && d.Artifact.FileName != c.artifact {
				t.Fatalf("artifact %q, want %q", d.Artifact.FileName, c.artifact)
			}
			if len(d.Reasons) != len(c.rels) {
				t.Fatalf("%d reasons for %d releases", len(d.Reasons), len(c.rels))
			}
		})
	}
}

// Explain: every release gets its verdict, newest first.
func TestDecideReasons(t *testing.T) {
	rels := []Release{
		rel("0.9.0", Stable),
		with(rel("1.5.0", Stable), func(r *Release) { r.Rollout = 0 }),
		rel("1.4.0", Beta),
		with(rel("1.3.0", Stable), func(r *Release) { r.Yanked = true }),
		rel("1.2.0", Stable),
		rel("1.1.0", Stable),
		with(rel("1.6.0", Stable), func(r *Release) { r.Published = false }),
	}
	d := Decide(policy, rels, Request{Version: v("1.0.0"), HWID: "pc"})
	want := []struct {
		version string
		outcome Outcome
	}{{"1.6.0", Unpublished}, {"1.5.0", OutsideRoll}, {"1.4.0", OtherChan}, {"1.3.0", Yanked}, {"1.2.0", Offered},
		{"1.1.0", Superseded}, {"0.9.0", NotNewer}}
	if len(d.Reasons) != len(want) {
		t.Fatalf("reasons %+v", d.Reasons)
	}
	for i, w := range want {
		if r := d.Reasons[i]; r.Version != w.version || r.Outcome != w.outcome {
			t.Errorf("reason %d = %+v, want %s %s", i, r, w.version, w.outcome)
		}
	}
}

// Over 100 000 random callers the share inside a rollout is within ±1 % of
// its setting; raising the setting never removes a caller; a caller's bucket
// is stable for a release and reshuffled by another release's salt.
func TestRolloutProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const callers = 100_000
	ids := make([]string, callers)
	for i := range ids {
		ids[i] = fmt.Sprintf("hwid-%016x", rng.Uint64())
	}
	r := rel("2.0.0", Stable)
	for _, bp := range []int{1, 100, 1000, 2500, 5000, 7777, 9900} {
		r.Rollout = bp
		in := 0
		for _, id := range ids {
			if ok, _ := InRollout(policy, &r, Request{HWID: id}); ok {
				in++
			}
		}
		got := float64(in) / callers
		if want := float64(bp) / FullRollout; got < want-0.01 || got > want+0.01 {
			t.Errorf("rollout %d bp: %.4f inside, want %.4f ± 0.01", bp, got, want)
		}
	}
	for range 200 {
		lo := rng.IntN(FullRollout)
		hi := lo + rng.IntN(FullRollout-lo+1)
		id := ids[rng.IntN(callers)]
		r.Rollout = lo
		before, _ := InRollout(policy, &r, Request{LicenseKey: id})
		r.Rollout = hi
		after, _ := InRollout(policy, &r, Request{LicenseKey: id})
		if before && !after {
			t.Fatalf("raising %d → %d bp removed caller %s", lo, hi, id)
		}
	}
	same, other := 0, 0
	for _, id := range ids[:1000] {
		if Bucket(r.Salt, "app", id) == Bucket(r.Salt, "app", id) {
			same++
		}
		if Bucket(r.Salt, "app", id) != Bucket([]byte("another release"), "app", id) {
			other++
		}
	}
	if same != 1000 || other < 990 {
		t.Fatalf("buckets: %d stable of 1000, %d reshuffled by another salt", same, other)
	}
}
