package edge

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/wire"
)

// Query strings and paths are checked once, at the edge, before any handler
// reads them: every query parameter name and value, and the request path,
// must be valid UTF-8 without control characters (C0 other than tab, and
// DEL). PostgreSQL cannot store NUL or invalid UTF-8 at all, and no route
// has a use for control characters in a URL (they only serve log and header
// injection), so such a request is refused with 400 MISSING_FIELDS naming the
// parameter, alike on both engines, instead of failing deep inside a query.
// JSON bodies are checked field by field (fields.go); encoding/json already
// replaces invalid UTF-8 there.

// PageRefuser is implemented by a UI handler (the dashboard) that shows a
// refusal made at the edge, before its own routing, as one of its pages;
// without it the edge answers its usual JSON.
type PageRefuser interface {
	RefusePage(w http.ResponseWriter, r *http.Request, status int, code, message string)
}

// badText reports whether s is unfit for a URL parameter: invalid UTF-8,
// a C0 control character other than tab, or DEL.
func badText(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return true
		}
	}
	return false
}

// queryProblem returns the refusal of r's path or query string, or nil when
// both are clean. Parameters are checked in name order, so the one named is
// the same on every try.
func queryProblem(r *http.Request) *apperr.Error {
	if badText(r.URL.Path) {
		return apperr.New(apperr.Invalid, wire.CodeMissingFields, "Invalid request path: must be UTF-8 text without control characters.")
	}
	if r.URL.RawQuery == "" {
		return nil
	}
	q := r.URL.Query()
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		bad := badText(name)
		for _, v := range q[name] {
			bad = bad || badText(v)
		}
		if bad {
			return apperr.InvalidField("query parameter "+paramName(name), "must be UTF-8 text without control characters")
		}
	}
	return nil
}

// paramName shows a parameter name safely in a message: as is when it is
// clean, else quoted with escapes (and cut short).
func paramName(name string) string {
	if len(name) > 64 {
		name = name[:64]
	}
	if !badText(name) && !strings.ContainsAny(name, " \t\"") {
		return name
	}
	return strconv.QuoteToASCII(name)
}

// CheckQuery refuses a request whose path or query string is not clean text
// (queryProblem) before next sees it: as JSON on API routes (a plain 400
// like every refusal before an envelope is verified), and on dashboard pages
// as the dashboard's own error page when it can show one.
func (e *Edge) CheckQuery(next http.Handler, ui http.Handler) http.Handler {
	pages, _ := ui.(PageRefuser)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bad := queryProblem(r)
		if bad == nil {
			next.ServeHTTP(w, r)
			return
		}
		if pages != nil && (r.URL.Path == "/dashboard" || strings.HasPrefix(r.URL.Path, "/dashboard/")) {
			NoteCode(r.Context(), bad.Code)
			pages.RefusePage(w, r, Status(bad.Kind), bad.Code, bad.Message)
			return
		}
		e.Error(w, r, bad)
	})
}
