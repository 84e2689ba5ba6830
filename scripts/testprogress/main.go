// Command testprogress turns the event stream of `go test -json` (on
// standard input) into progress a person can follow: a line per package as
// it finishes, every interval a line saying what is still running and how
// many tests have passed, the complete output of every failed test, and a
// summary at the end, including how many PostgreSQL halves did not run.
// It exits 1 when a test, a package or a build failed.
//
//	go test -json ./... | go run ./scripts/testprogress
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// event is one line of `go test -json` (see `go doc test2json`).
type event struct {
	Time       time.Time
	Action     string
	Package    string
	ImportPath string // build events
	Test       string
	Elapsed    float64
	Output     string
}

// pgSkip is what a skipped PostgreSQL half says (kwtest.ForEachEngine and
// the tests that need PostgreSQL skip with it).
const pgSkip = "KEYWARD_TEST_DATABASE_URL is not set"

// pkg is what is known about one test package.
type pkg struct {
	name                 string
	started              time.Time
	passed, failed, skip int
	pgSkipped            int
	out                  map[string][]string // test ("" for the package) -> output lines
	seen                 []string            // tests in the order their output began
	done                 bool
}

type report struct {
	mu       sync.Mutex
	w        io.Writer
	start    time.Time
	pkgs     map[string]*pkg
	order    []string
	builds   map[string][]string // import path -> build output
	failed   []string            // failed packages
	nPkgDone int
	passed   int
	failedT  int
	skipped  int
	pgSkips  int
	badBuild bool
}

func main() {
	every := flag.Duration("every", 15*time.Second, "how often to say what is still running")
	since := flag.Int64("since", 0, "count elapsed time from this Unix time (default: now)")
	flag.Parse()
	r := &report{w: os.Stdout, start: time.Now(), pkgs: map[string]*pkg{}, builds: map[string][]string{}}
	if *since > 0 {
		r.start = time.Unix(*since, 0)
	}
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(*every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				r.progress()
			case <-stop:
				return
			}
		}
	}()
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// Not an event: go's own messages (build errors, "no Go files"
			// …) pass through as they are.
			r.mu.Lock()
			fmt.Fprintf(r.w, "%s\n", line)
			r.mu.Unlock()
			continue
		}
		r.handle(e)
	}
	close(stop)
	if !r.summary() {
		os.Exit(1)
	}
}

func (r *report) pkg(name string) *pkg {
	p := r.pkgs[name]
	if p == nil {
		p = &pkg{name: name, started: time.Now(), out: map[string][]string{}}
		r.pkgs[name] = p
		r.order = append(r.order, name)
	}
	return p
}

func (r *report) handle(e event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e.Action {
	case "build-output":
		r.builds[e.ImportPath] = append(r.builds[e.ImportPath], e.Output)
		return
	case "build-fail":
		r.badBuild = true
		fmt.Fprintf(r.w, "BUILD FAILED %s\n", e.ImportPath)
		for _, l := range r.builds[e.ImportPath] {
			fmt.Fprint(r.w, l)
		}
		return
	}
	if e.Package == "" {
		return
	}
	p := r.pkg(e.Package)
	switch e.Action {
	case "start":
		p.started = time.Now()
	case "output":
		if _, ok := p.out[e.Test]; !ok {
			p.seen = append(p.seen, e.Test)
		}
		p.out[e.Test] = append(p.out[e.Test], e.Output)
	case "pass", "fail", "skip":
		if e.Test == "" {
			r.finish(p, e)
			return
		}
		switch e.Action {
		case "pass":
			p.passed++
			r.passed++
		case "fail":
			p.failed++
			r.failedT++
			r.printFailure(p, e.Test, e.Elapsed)
		case "skip":
			p.skip++
			r.skipped++
			if strings.Contains(strings.Join(p.out[e.Test], ""), pgSkip) {
				p.pgSkipped++
				r.pgSkips++
			}
		}
		// A passed or skipped test's output is not needed any more; a
		// failed parent prints its subtests' output with its own.
		if e.Action != "fail" && !strings.Contains(e.Test, "/") {
			for k := range p.out {
				if k == e.Test || strings.HasPrefix(k, e.Test+"/") {
					delete(p.out, k)
				}
			}
		}
	}
}

// printFailure prints the whole output of a failed test (its subtests'
// included, in the order the tests started) the moment it fails.
func (r *report) printFailure(p *pkg, test string, elapsed float64) {
	if strings.Contains(test, "/") {
		return // printed with its top-level test
	}
	fmt.Fprintf(r.w, "\n=== FAIL %s %s (%.1fs)\n", shortName(p.name), test, elapsed)
	for _, k := range p.seen {
		if _, ok := p.out[k]; !ok || (k != test && !strings.HasPrefix(k, test+"/")) {
			continue
		}
		for _, l := range p.out[k] {
			fmt.Fprint(r.w, l)
		}
		delete(p.out, k)
	}
	fmt.Fprintln(r.w)
}

func (r *report) finish(p *pkg, e event) {
	p.done = true
	r.nPkgDone++
	counts := fmt.Sprintf("%d passed", p.passed)
	if p.skip > 0 {
		counts += fmt.Sprintf(", %d skipped", p.skip)
	}
	if p.pgSkipped > 0 {
		counts += fmt.Sprintf(" (%d PostgreSQL halves not run)", p.pgSkipped)
	}
	switch e.Action {
	case "pass":
		if p.passed == 0 && p.skip == 0 {
			// A package without tests says so in its output.
			out := strings.Join(p.out[""], "")
			if strings.Contains(out, "no test files") {
				return
			}
		}
		fmt.Fprintf(r.w, "ok    %-40s %6.1fs  %s\n", shortName(p.name), e.Elapsed, counts)
	case "skip":
		// "no test files"
	case "fail":
		r.failed = append(r.failed, p.name)
		// Output outside any test (a panic, a timeout, a TestMain) and of
		// tests that never finished.
		// go's own closing lines ("FAIL", "FAIL\tpkg 1.2s") say nothing new.
		var own []string
		for _, l := range p.out[""] {
			if l != "FAIL\n" && !strings.HasPrefix(l, "FAIL\t") {
				own = append(own, l)
			}
		}
		p.out[""] = own
		if len(own) > 0 || len(p.out) > 1 {
			fmt.Fprintf(r.w, "\n=== output of %s outside finished tests\n", shortName(p.name))
			r.printRest(p)
		}
		fmt.Fprintf(r.w, "FAIL  %-40s %6.1fs  %s, %d failed\n", shortName(p.name), e.Elapsed, counts, p.failed)
	}
	p.out = nil
}

// progress says what is still running.
func (r *report) progress() {
	r.mu.Lock()
	defer r.mu.Unlock()
	var running []string
	for _, n := range r.order {
		p := r.pkgs[n]
		if p.done || (p.passed == 0 && p.failed == 0 && p.skip == 0 && time.Since(p.started) < time.Second) {
			continue
		}
		running = append(running, fmt.Sprintf("%s (%d passed, %s)", shortName(n), p.passed, time.Since(p.started).Round(time.Second)))
	}
	if len(running) == 0 {
		running = []string{"building or starting packages"}
	}
	fmt.Fprintf(r.w, "… %s: %d tests passed, %d failed, %d packages done; running: %s\n",
		time.Since(r.start).Round(time.Second), r.passed, r.failedT, r.nPkgDone, strings.Join(running, ", "))
}

// summary prints the totals and reports whether everything passed.
func (r *report) summary() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	// A package that never reported its end (the test binary was killed).
	for _, n := range r.order {
		if p := r.pkgs[n]; !p.done {
			r.failed = append(r.failed, n+" (did not finish)")
			r.printRest(p)
		}
	}
	fmt.Fprintf(r.w, "\n%d tests passed, %d failed, %d skipped in %d packages, %s\n",
		r.passed, r.failedT, r.skipped, r.nPkgDone, time.Since(r.start).Round(time.Second))
	if os.Getenv("KEYWARD_TEST_DATABASE_URL") == "" || r.pgSkips > 0 {
		fmt.Fprintf(r.w, "PostgreSQL half NOT RUN: %d tests skipped because KEYWARD_TEST_DATABASE_URL is not set (the other engine-parametrised tests ran on SQLite only)\n", r.pgSkips)
	}
	ok := len(r.failed) == 0 && r.failedT == 0 && !r.badBuild
	if !ok {
		fmt.Fprintf(r.w, "FAILED: %s\n", strings.Join(r.failed, ", "))
		if r.badBuild {
			fmt.Fprintln(r.w, "FAILED: a package did not build")
		}
	}
	return ok
}

// printRest prints the output p still holds, in the order it began.
func (r *report) printRest(p *pkg) {
	for _, k := range p.seen {
		for _, l := range p.out[k] {
			fmt.Fprint(r.w, l)
		}
	}
}

// shortName drops the module path.
func shortName(p string) string {
	return strings.TrimPrefix(p, "github.com/keyward/keyward/")
}
