package httpapi

import (
	"context"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keyward/keyward/internal/reqid"
)

// InFlight is a request being served: what a forced stop names when it
// cuts it. Route is the mux pattern (never the path, which may carry ids or
// a query with a key), or "" before routing.
type InFlight struct {
	Method, Route, RequestID string
	Since                    time.Time
}

// flight is one request in flights; route is set once the mux has chosen
// the handler (by routed).
type flight struct {
	method, id string
	since      time.Time
	route      atomic.Pointer[string]
}

type flightKey struct{}

// flights are the requests being served, so that shutdown can name the ones
// it cuts and wait for them to unwind (an upload removes its temp file).
type flights struct {
	mu      sync.Mutex
	m       map[*flight]struct{}
	changed chan struct{} // closed on the next removal; made by a waiter
}

// track registers every request in a.flights for as long as it is served.
// It runs after requestID, so the id is the one the reply carries.
func (a *API) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := &flight{method: knownMethod(r.Method), id: reqid.From(r.Context()), since: time.Now()}
		fs := &a.flights
		fs.mu.Lock()
		if fs.m == nil {
			fs.m = map[*flight]struct{}{}
		}
		fs.m[f] = struct{}{}
		fs.mu.Unlock()
		defer func() {
			fs.mu.Lock()
			delete(fs.m, f)
			if fs.changed != nil {
				close(fs.changed)
				fs.changed = nil
			}
			fs.mu.Unlock()
		}()
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), flightKey{}, f)))
	})
}

// routed records the mux pattern of the request on its flight (the first
// one: a dashboard page's in-process API calls keep the page's).
func routed(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f, ok := r.Context().Value(flightKey{}).(*flight); ok && r.Pattern != "" {
			p := r.Pattern
			f.route.CompareAndSwap(nil, &p)
		}
		h.ServeHTTP(w, r)
	})
}

// InFlight lists the requests being served, oldest first.
func (a *API) InFlight() []InFlight {
	a.flights.mu.Lock()
	out := make([]InFlight, 0, len(a.flights.m))
	for f := range a.flights.m {
		in := InFlight{Method: f.method, RequestID: f.id, Since: f.since}
		if p := f.route.Load(); p != nil {
			in.Route = *p
		}
		out = append(out, in)
	}
	a.flights.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Since.Before(out[j].Since) })
	return out
}

// WaitIdle waits until no request is being served, or ctx ends; it reports
// whether none is.
func (a *API) WaitIdle(ctx context.Context) bool {
	fs := &a.flights
	for {
		fs.mu.Lock()
		if len(fs.m) == 0 {
			fs.mu.Unlock()
			return true
		}
		if fs.changed == nil {
			fs.changed = make(chan struct{})
		}
		ch := fs.changed
		fs.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}
