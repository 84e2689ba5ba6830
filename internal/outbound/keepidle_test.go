package outbound

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// With KeepIdle(8), eight requests at a time to one host reuse their
// connections round after round; with the default (4 idle kept), half of
// them are dialled again each round.
func TestKeepIdle(t *testing.T) {
	dials := func(keep int) int64 {
		var conns atomic.Int64
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
		srv.Start()
		defer srv.Close()
		c := New(loopback, 5*time.Second)
		c.KeepIdle(keep)
		for range 10 {
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					if r := c.Send(context.Background(), srv.URL, nil, []byte("{}")); !r.OK() {
						t.Errorf("Send = %+v", r)
					}
				})
			}
			wg.Wait()
		}
		return conns.Load()
	}
	kept, dflt := dials(8), dials(0)
	if kept >= 20 || dflt <= 2*kept {
		t.Errorf("connections dialled for 10 rounds of 8: %d with KeepIdle(8), %d with the default; want at most 19, and under half the default's", kept, dflt)
	}
}
