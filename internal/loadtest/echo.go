package loadtest

import (
	"crypto/sha256"
	"net/http"
	"sync"
	"time"

	"github.com/keyward/keyward/internal/edge"
	"github.com/keyward/keyward/internal/envelope"
)

// echoReply is what the echo handler seals: the same bytes a successful
// heartbeat answers with.
var echoReply = []byte(`{"success":true,"message":"Heartbeat OK"}`)

// EchoHandler is the baseline the heartbeat is measured against: the least a
// well-written server must do to answer an enveloped request — read the
// body, open the envelope (MAC, window, decryption), seal a fixed reply. Like
// keyward's client routes it keeps each app secret's envelope.Box (keys
// derived and cipher built once, looked up by the secret's SHA-256), reads
// the body into a pooled buffer and sends constant header values, so the
// heartbeat's extra cost over it is the license logic, the database and the
// edge's bookkeeping, not envelope work the echo would do and a heartbeat
// not. It touches no database, so its throughput is this machine's ceiling
// for enveloped requests over net/http.
func EchoHandler(now func() time.Time) http.Handler {
	return &echo{now: now, boxes: map[[sha256.Size]byte]*envelope.Box{}}
}

type echo struct {
	now   func() time.Time
	mu    sync.RWMutex
	boxes map[[sha256.Size]byte]*envelope.Box
}

// maxEchoBoxes bounds the echo's Box cache (any secret is accepted, so a
// client sending many would otherwise grow it).
const maxEchoBoxes = 64

var (
	echoBadRequest = []byte(`{"success":false}`)
	echoJSON       = []string{"application/json"}
)

// box returns the Box for secret, building it on first use.
func (e *echo) box(secret string) *envelope.Box {
	var buf [64]byte // secrets are 64 characters: hashed without a copy on the heap
	hash := sha256.Sum256(append(buf[:0], secret...))
	e.mu.RLock()
	b := e.boxes[hash]
	e.mu.RUnlock()
	if b != nil {
		return b
	}
	b = envelope.NewBox(envelope.Derive(secret))
	e.mu.Lock()
	if len(e.boxes) >= maxEchoBoxes {
		clear(e.boxes)
	}
	e.boxes[hash] = b
	e.mu.Unlock()
	return b
}

func (e *echo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	buf := edge.GetBodyBuffer() // the heartbeat's own body reader
	defer edge.PutBodyBuffer(buf)
	body, err := buf.Read(w, r, 64<<10)
	if err != nil {
		e.fail(w)
		return
	}
	box := e.box(r.Header.Get("X-App-Secret"))
	if _, _, _, err := box.Open(body, e.now()); err != nil {
		e.fail(w)
		return
	}
	out, err := box.Seal(echoReply, e.now())
	if err != nil {
		http.Error(w, `{"success":false}`, http.StatusInternalServerError)
		return
	}
	w.Header()["Content-Type"] = echoJSON
	w.Write(out)
}

func (e *echo) fail(w http.ResponseWriter) {
	w.Header()["Content-Type"] = echoJSON
	w.WriteHeader(http.StatusBadRequest)
	w.Write(echoBadRequest)
}
