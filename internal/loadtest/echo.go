package loadtest

import (
	"io"
	"net/http"
	"time"

	"github.com/keyward/keyward/internal/envelope"
)

// echoReply is what the echo handler seals: the same bytes a successful
// heartbeat answers with.
var echoReply = []byte(`{"success":true,"message":"Heartbeat OK"}`)

// EchoHandler is the baseline the heartbeat is measured against: the least a
// server must do to answer an enveloped request — read the body, verify the
// envelope with keys derived from the app secret header, seal a fixed reply.
// It touches no database and keeps no state, so its throughput is this
// machine's ceiling for enveloped requests over net/http.
func EchoHandler(now func() time.Time) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
		if err != nil {
			http.Error(w, `{"success":false}`, http.StatusBadRequest)
			return
		}
		keys := envelope.Derive(r.Header.Get("X-App-Secret"))
		env, err := envelope.Parse(body)
		if err != nil {
			http.Error(w, `{"success":false}`, http.StatusBadRequest)
			return
		}
		if _, _, err := keys.Verify(env, now()); err != nil {
			http.Error(w, `{"success":false}`, http.StatusBadRequest)
			return
		}
		out, err := keys.Seal(echoReply, now())
		if err != nil {
			http.Error(w, `{"success":false}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(out.Marshal())
	})
}
