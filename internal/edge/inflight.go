package edge

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
// the handler (by routed). It is also the request's context: the one
// allocation carries the record (flightKey{}) and the request id (reqid's
// key, as a reqid.Carrier), and id is the X-Request-Id reply header's value.
type flight struct {
	context.Context
	method string
	id     [1]string
	since  time.Time
	route  atomic.Pointer[string]
	// The request's own goroutine also keeps here, so one context value
	// and one request clone serve every middleware: the client address the
	// limiter found (clientIP) and what instrument observes.
	ip  string
	obs observation
	sw  statusWriter
	// call is the envelope transport's Call for this request (newCall),
	// handed out at most once: a second use gets its own.
	call     Call
	callUsed bool
}

type flightKey struct{}

// Value answers flightKey{} and reqid's key with f itself (a pointer: no
// boxing) and asks the parent for anything else.
func (f *flight) Value(k any) any {
	if k == (flightKey{}) || reqid.IsKey(k) {
		return f
	}
	return f.Context.Value(k)
}

// RequestID makes f a reqid.Carrier.
func (f *flight) RequestID() string { return f.id[0] }

func (f *flight) String() string { return "edge.flight(" + f.id[0] + ")" }

// flightShards is how many locks the in-flight registry is split over, so
// concurrent requests (every heartbeat passes here) rarely share one.
const flightShards = 32

// flights are the requests being served, so that shutdown can name the ones
// it cuts and wait for them to unwind (an upload removes its temp file). A
// request goes into the shard its arrival number picks: no process-wide lock
// on the hot path.
type flights struct {
	next   atomic.Uint32
	shards [flightShards]flightShard
}

type flightShard struct {
	mu      sync.Mutex
	m       map[*flight]struct{}
	changed chan struct{} // closed on the next removal; made by a waiter
	_       [40]byte      // keeps neighbouring shards' locks off one cache line
}

// track registers a request in e.flights until its shard's remove is
// called; requestID calls it, so the id is the one the reply carries. The
// flight is a context over parent.
func (e *Edge) track(parent context.Context, method, id string) (*flight, *flightShard) {
	f := &flight{Context: parent, method: knownMethod(method), id: [1]string{id}, since: time.Now()}
	sh := &e.flights.shards[e.flights.next.Add(1)%flightShards]
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = map[*flight]struct{}{}
	}
	sh.m[f] = struct{}{}
	sh.mu.Unlock()
	return f, sh
}

// remove takes f out of the shard and wakes a WaitIdle.
func (sh *flightShard) remove(f *flight) {
	sh.mu.Lock()
	delete(sh.m, f)
	if sh.changed != nil {
		close(sh.changed)
		sh.changed = nil
	}
	sh.mu.Unlock()
}

// routed records the route of the request on its flight (the first one: a
// dashboard page's in-process API calls keep the page's). label is the
// route's name in metrics, logs and InFlight: the path of a method pattern,
// so every method of a route (and its 405s) counts under one name, never
// the request's own path.
func routed(label string, h http.Handler) http.Handler {
	p := &label
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f, ok := r.Context().Value(flightKey{}).(*flight); ok {
			f.route.CompareAndSwap(nil, p)
		}
		h.ServeHTTP(w, r)
	})
}

// InFlight lists the requests being served, oldest first.
func (e *Edge) InFlight() []InFlight {
	var out []InFlight
	for i := range e.flights.shards {
		sh := &e.flights.shards[i]
		sh.mu.Lock()
		for f := range sh.m {
			in := InFlight{Method: f.method, RequestID: f.id[0], Since: f.since}
			if p := f.route.Load(); p != nil {
				in.Route = *p
			}
			out = append(out, in)
		}
		sh.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Since.Before(out[j].Since) })
	return out
}

// WaitIdle waits until no request is being served, or ctx ends; it reports
// whether none is. It waits for each shard to empty in turn, then looks at
// all of them once more, since a request may have arrived meanwhile.
func (e *Edge) WaitIdle(ctx context.Context) bool {
	for {
		busy := false
		for i := range e.flights.shards {
			sh := &e.flights.shards[i]
			for {
				sh.mu.Lock()
				if len(sh.m) == 0 {
					sh.mu.Unlock()
					break
				}
				busy = true
				if sh.changed == nil {
					sh.changed = make(chan struct{})
				}
				ch := sh.changed
				sh.mu.Unlock()
				select {
				case <-ch:
				case <-ctx.Done():
					return false
				}
			}
		}
		if !busy {
			return true
		}
	}
}
