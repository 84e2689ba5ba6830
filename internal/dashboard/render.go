package dashboard

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/keyward/keyward/internal/reqid"
	"github.com/keyward/keyward/wire"
)

// Page is what a page template gets: the handler's Title, Nav (the menu
// entry to highlight) and Data, and what every page shows (filled in by
// Render).
type Page struct {
	Title string
	Nav   string
	Data  any

	User       *wire.Profile // nil on pages shown signed out
	App        *wire.App     // on /dashboard/apps/{app}/… pages; nil elsewhere
	AppID      string
	CSRF       string
	Flash      string
	FlashError bool
	Asset      string
}

// assetVersion busts browser caches of app.css/app.js when they change.
var assetVersion = func() string {
	h := sha256.New()
	fs.WalkDir(assetFS, "assets", func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			b, _ := assetFS.ReadFile(p)
			h.Write(b)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:12]
}()

// pages are the parsed pages, parsed once per process: the templates are
// embedded and their functions package-level, so every Dashboard's would be
// the same, and html/template executes concurrently (test processes start
// hundreds of servers, each of which parsed them all).
var pages = sync.OnceValue(parsePages)

// parsePages parses each templates/*.html page (not layout.html or
// partials.html) together with the layout and partials.
func parsePages() map[string]*template.Template {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		base := strings.TrimSuffix(path.Base(n), ".html")
		if base == "layout" || base == "partials" {
			continue
		}
		pages[base] = template.Must(template.New(base).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/partials.html", n))
	}
	return pages
}

// funcs are the helpers templates may use.
var funcs = template.FuncMap{
	"str": str,
	"num": num,
	// when shows an API timestamp (or Unix seconds) as "2006-01-02 15:04 UTC".
	"when": func(v any) string {
		switch t := deref(v).(type) {
		case nil:
			return "—"
		case time.Time:
			if t.IsZero() {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04 UTC")
		case float64:
			if t == 0 {
				return "—"
			}
			return time.Unix(int64(t), 0).UTC().Format("2006-01-02 15:04 UTC")
		case string:
			if t == "" {
				return "—"
			}
			for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05", time.DateOnly} {
				if ts, err := time.Parse(layout, t); err == nil {
					return ts.UTC().Format("2006-01-02 15:04 UTC")
				}
			}
			return t
		}
		return fmt.Sprint(v)
	},
	// json shows a value as indented JSON. The template escapes it, so
	// the encoder must not: "<" stays "<" for the reader, not "\u003c".
	"json": func(v any) string {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		enc.Encode(v)
		return strings.TrimSuffix(b.String(), "\n")
	},
	// dict builds a map for passing several values to a partial.
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[fmt.Sprint(kv[i])] = kv[i+1]
		}
		return m
	},
	"list": func(v ...any) []any { return v },
	"add":  func(a, b int) int { return a + b },
	// bytes shows a size as 1.2 MB.
	"bytes": func(v any) string {
		n := num(v)
		units := []string{"B", "kB", "MB", "GB", "TB"}
		i := 0
		for n >= 1000 && i < len(units)-1 {
			n /= 1000
			i++
		}
		if i == 0 {
			return fmt.Sprintf("%.0f %s", n, units[i])
		}
		return fmt.Sprintf("%.1f %s", n, units[i])
	},
	// keys lists a map's keys in order.
	"keys": func(m map[string]any) []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	},
	"join":    strings.Join,
	"query":   func(kv ...string) string { return queryOf(kv...) },
	"pathesc": url.PathEscape,
}

// str shows any JSON value as text ("" for nil).
func str(v any) string {
	v = deref(v)
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case bool:
		if t {
			return "yes"
		}
		return "no"
	case json.Number:
		return t.String()
	}
	return fmt.Sprint(v)
}

// deref is the value an optional (pointer) field of a wire type points to,
// nil for a nil pointer; any other value as it is.
func deref(v any) any {
	switch t := v.(type) {
	case *string:
		if t == nil {
			return nil
		}
		return *t
	case *int:
		if t == nil {
			return nil
		}
		return *t
	case *int64:
		if t == nil {
			return nil
		}
		return *t
	case *time.Time:
		if t == nil {
			return nil
		}
		return *t
	}
	return v
}

// num reads a JSON number (or numeric string) as float64.
func num(v any) float64 {
	switch t := deref(v).(type) {
	case float64:
		return t
	case int:
		return float64(t)
	case int64:
		return float64(t)
	case string:
		f, _ := strconv.ParseFloat(t, 64)
		return f
	case json.Number:
		f, _ := t.Float64()
		return f
	}
	return 0
}

// queryOf builds "?k=v&…" from pairs, leaving out empty values.
func queryOf(kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// Render writes the page template name with status 200.
func (c *Ctx) Render(name string, p Page) { c.RenderStatus(http.StatusOK, name, p) }

// RenderStatus writes the page template name with status.
func (c *Ctx) RenderStatus(status int, name string, p Page) {
	p.User, p.App, p.AppID, p.CSRF = c.User, c.App, c.AppID, c.CSRF
	c.d.render(c.W, c.R, status, name, p)
}

func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, status int, name string, p Page) {
	t, ok := d.pages[name]
	if !ok {
		panic("dashboard: no page template " + name)
	}
	p.Asset = assetVersion
	if f := cookie(r, flashCookie); f != "" {
		if b, err := base64.RawURLEncoding.DecodeString(f); err == nil && len(b) > 1 {
			p.FlashError, p.Flash = b[0] == '!', string(b[1:])
		}
		d.setCookie(w, r, flashCookie, "", -1)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", p); err != nil {
		d.log.ErrorContext(r.Context(), "dashboard template", "page", name, "err", err)
		http.Error(w, "The page could not be shown.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// flash leaves a message for the next page shown ("!" first: an error).
func (d *Dashboard) flash(w http.ResponseWriter, r *http.Request, msg string, isErr bool) {
	if msg == "" {
		return
	}
	if len(msg) > 600 {
		msg = msg[:600]
	}
	mark := "."
	if isErr {
		mark = "!"
	}
	d.setCookie(w, r, flashCookie, base64.RawURLEncoding.EncodeToString([]byte(mark+msg)), time.Minute)
}

// Redirect sends the browser to target (a dashboard path) after a form,
// with msg shown there.
func (c *Ctx) Redirect(target, msg string) {
	c.d.flash(c.W, c.R, msg, false)
	http.Redirect(c.W, c.R, target, http.StatusSeeOther)
}

// Done ends a form: on success back to target with okMsg; on an API refusal
// back to target with the refusal shown; on anything else the error page.
func (c *Ctx) Done(target, okMsg string, err error) {
	if err == nil {
		c.Redirect(target, okMsg)
		return
	}
	var ae *APIError
	if errors.As(err, &ae) && !ae.signedOut() {
		c.d.flash(c.W, c.R, ae.Message+" ("+ae.Code+")", true)
		http.Redirect(c.W, c.R, target, http.StatusSeeOther)
		return
	}
	c.Fail(err)
}

// Fail shows err as an error page: an API refusal with its status and
// message, anything else as a 500 whose details go to the log only.
func (c *Ctx) Fail(err error) {
	var ae *APIError
	if errors.As(err, &ae) {
		if ae.signedOut() {
			c.d.setCookie(c.W, c.R, sessionCookie, "", -1)
			c.d.toSignIn(c.W, c.R)
			return
		}
		c.RenderStatus(ae.Status, "error", Page{Title: "Not possible", Data: map[string]any{"Message": ae.Message, "Code": ae.Code}})
		return
	}
	c.d.log.ErrorContext(c.R.Context(), "dashboard page", "path", c.R.URL.Path, "err", err)
	c.RenderStatus(http.StatusInternalServerError, "error", Page{Title: "Something went wrong",
		Data: map[string]any{"Message": "The page could not be shown. Request id: " + reqid.From(c.R.Context()) + "."}})
}

// signedOut reports whether a refusal means the session's token no longer
// works. A wrong password or code on a form that asks for one is also a
// 401, but the session is fine: that is a refusal of the form.
func (e *APIError) signedOut() bool {
	return e.Status == http.StatusUnauthorized && e.Code != wire.CodeInvalidCredentials && e.Code != wire.CodeInvalidCode
}

// fail shows an error page outside a session.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	d.render(w, r, status, "error", Page{Title: http.StatusText(status), Data: map[string]any{"Message": msg}})
}

// Confirm reports whether a destructive form was confirmed (its "confirm"
// field is "yes", which the confirmation dialog adds). When it was not, it
// shows a confirmation page repeating the form with message, and the handler
// must return. The page carries the form's fields back in hidden inputs, so
// it is not for forms with a password or a one-time code.
func (c *Ctx) Confirm(title, message string) bool {
	if c.R.PostFormValue("confirm") == "yes" {
		return true
	}
	type field struct{ Name, Value string }
	var fields []field
	for k, vs := range c.R.PostForm {
		if k == "csrf" || k == "confirm" {
			continue
		}
		for _, v := range vs {
			fields = append(fields, field{k, v})
		}
	}
	sort.Slice(fields, func(i, j int) bool { return fields[i].Name < fields[j].Name })
	c.Render("confirm", Page{Title: title, Data: map[string]any{"Message": message, "Action": c.R.URL.RequestURI(), "Fields": fields,
		"Back": safeNext(c.R.PostFormValue("back"))}})
	return false
}
