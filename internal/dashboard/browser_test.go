package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The browser tests drive Debian's Chromium, headless, through the DevTools
// protocol (chromedp) against a real keyward started by the test. Every page
// they open is watched for console errors, uncaught exceptions and Content
// Security Policy violations, so a page that works only because the browser
// forgave it still fails.
//
// Chromium is found as $KEYWARD_CHROMIUM, else chromium on the PATH. Without
// it the tests skip on a developer machine, but under CI (CI=true) or with
// KEYWARD_BROWSER_TESTS=1 (which .ci/run sets after installing Chromium) a
// missing browser is a failure, never a silent skip. KEYWARD_BROWSER_TESTS=0
// skips them even where Chromium is installed (scripts/test quick).

// chromium returns the browser binary or skips/fails as above.
func chromium(t *testing.T) string {
	t.Helper()
	if os.Getenv("KEYWARD_BROWSER_TESTS") == "0" {
		t.Skip("browser tests turned off (KEYWARD_BROWSER_TESTS=0, as scripts/test quick sets)")
	}
	if p := os.Getenv("KEYWARD_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" || os.Getenv("KEYWARD_BROWSER_TESTS") == "1" {
		t.Fatal("Chromium is not installed (apt-get install chromium; .ci/run does this) and KEYWARD_CHROMIUM is unset")
	}
	t.Skip("Chromium is not installed; install the chromium package or set KEYWARD_CHROMIUM to run the browser tests")
	return ""
}

// browser is one headless Chromium with one tab.
type browser struct {
	t    *testing.T
	site *site
	ctx  context.Context

	mu       sync.Mutex
	problems []string // console errors, exceptions, CSP violations since the last check
}

// newBrowser starts Chromium with a fresh profile, as the issue prescribes,
// at a window of width×height CSS pixels; it is closed when the test ends.
func newBrowser(t *testing.T, s *site, width, height int) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.WindowSize(width, height),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	b := &browser{t: t, site: s, ctx: ctx}
	// The first Run starts the browser; it must not carry a deadline.
	if err := chromedp.Do(ctx); err != nil {
		cancelTab()
		cancelAlloc()
		t.Fatalf("starting Chromium: %v", err)
	}
	watch, stopWatch := context.WithCancel(ctx)
	done := make(chan struct{})
	messages := chromedp.Console(watch)
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			// Errors, exceptions, and anything the browser's security
			// layer says (CSP violations come as source "security").
			if m.Type == chromedp.ConsoleError || m.IsException() || m.Source == "security" {
				b.problem("%s %s: %s (%s:%d)", m.Source, m.Type, m.Text, m.URL, m.Line)
			}
		}
	}()
	t.Cleanup(func() { stopWatch(); <-done; cancelTab(); cancelAlloc() })
	return b
}

func (b *browser) problem(format string, args ...any) {
	b.mu.Lock()
	b.problems = append(b.problems, fmt.Sprintf(format, args...))
	b.mu.Unlock()
}

// takeProblems returns and forgets what the browser complained about.
func (b *browser) takeProblems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.problems
	b.problems = nil
	return p
}

// clean fails the test if the browser complained since the last check;
// where says which page or step it was.
func (b *browser) clean(where string) {
	b.t.Helper()
	for _, p := range b.takeProblems() {
		b.t.Errorf("%s: browser reported %s", where, p)
	}
}

// run runs actions with a deadline, failing the test on error.
func (b *browser) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v (page problems: %v)", what, err, b.takeProblems())
	}
}

// value runs one action that yields a value, with a deadline, failing the
// test on error.
func value[T any](b *browser, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatalf("%s: %v (page problems: %v)", what, err, b.takeProblems())
	}
	return v
}

// jsDo is an action that runs a JavaScript statement for its effect.
func jsDo(code string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](`(() => { `+code+`; return true })()`)(ctx, t)
		return err
	})
}

// open loads a dashboard path and waits for it to finish loading.
func (b *browser) open(path string) {
	b.t.Helper()
	b.run("open "+path, chromedp.Navigate(b.site.URL+path), chromedp.WaitReady(chromedp.CSS("body")))
}

// follow does act (a click or a key press that leaves the page) and waits
// until a new document has replaced the current one and finished loading.
// The current document is marked first, so a page that answers with itself
// (a form redisplayed with an error) still counts as a new page.
func (b *browser) follow(what string, act chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	b.run(what, jsDo(`window.kwOld = true`), act)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
		fresh, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.kwOld !== true && document.readyState === "complete"`))
		cancel()
		if err == nil && fresh {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("%s: no new page loaded (last error %v; page problems %v)", what, err, b.takeProblems())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// click follows a click on the element sel selects.
func (b *browser) click(sel string) {
	b.t.Helper()
	b.follow("click "+sel, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

// path is the current page's path and query.
func (b *browser) path() string {
	b.t.Helper()
	return value(b, "location", chromedp.Evaluate[string](`location.pathname + location.search`))
}

// text is the visible text of the first element sel selects.
func (b *browser) text(sel string) string {
	b.t.Helper()
	s := value(b, "text of "+sel, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible))
	return strings.Join(strings.Fields(s), " ")
}

// bodyText is the page's whole visible text.
func (b *browser) bodyText() string {
	b.t.Helper()
	s := value(b, "page text", chromedp.Evaluate[string](`document.body.innerText`))
	return strings.Join(strings.Fields(s), " ")
}

// mustSee fails unless the page's visible text contains each of want.
func (b *browser) mustSee(where string, want ...string) {
	b.t.Helper()
	body := b.bodyText()
	for _, w := range want {
		if !strings.Contains(body, w) {
			b.t.Fatalf("%s (%s): page does not show %q; it shows: %.1500s", where, b.path(), w, body)
		}
	}
}

// fill replaces the value of the input sel selects with value, as typing would.
func (b *browser) fill(sel, value string) {
	b.t.Helper()
	q, _ := json.Marshal(sel)
	// chromedp v0.23.0's SetValue(sel, "") fails ("could not set value on
	// node"), so the field is emptied by script.
	b.run("fill "+sel, chromedp.WaitVisible(chromedp.CSS(sel)), jsDo(`document.querySelector(`+string(q)+`).value = ""`),
		chromedp.SendKeys(chromedp.CSS(sel), value))
}

// TestBrowserHarnessCatchesCSPViolations proves the watcher above works: a
// page that runs an inline script, which the dashboard's policy forbids, is
// reported, and a clean page is not.
func TestBrowserHarnessCatchesCSPViolations(t *testing.T) {
	s := newSite(t)
	b := newBrowser(t, s, 1280, 900)
	b.open("/dashboard/login")
	if p := b.takeProblems(); len(p) != 0 {
		t.Fatalf("the sign-in page is not clean: %v", p)
	}
	b.run("inject an inline script", jsDo(`(() => {
		const s = document.createElement("script");
		s.textContent = "window.kwInline = 1";
		document.body.appendChild(s);
	})()`))
	ran := value(b, "did it run", chromedp.Evaluate[bool](`window.kwInline === 1`))
	if ran {
		t.Fatal("an inline script ran: the Content-Security-Policy did not apply")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		p := b.takeProblems()
		if strings.Contains(strings.Join(p, "\n"), "Content Security Policy") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the refused inline script was not reported; problems seen: %v", p)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
