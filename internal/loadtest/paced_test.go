package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/envelope"
)

// TestReadReplyFraming checks the paced phases' reply reader on what
// net/http's server sends and on framings it must refuse rather than
// misread: no length, chunked bodies, a body larger than the buffer, a
// second length, a header line without a colon, a status line that is not
// HTTP/1.x.
func TestReadReplyFraming(t *testing.T) {
	// A real server's reply, through a real connection.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTeapot)
		w.Write([]byte(`{"success":true}`))
	}))
	defer srv.Close()
	u := strings.TrimPrefix(srv.URL, "http://")
	p := &paced{conns: []pacedConn{{addr: u}}}
	if err := p.dial(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p.close()
	for round := range 2 { // the second on the same kept-alive connection
		if _, err := p.conns[0].c.Write(appendPost(nil, u, "/", "s", []byte("{}"))); err != nil {
			t.Fatal(err)
		}
		status, body, err := readReply(p.conns[0].br, make([]byte, 0, 64))
		if err != nil || status != http.StatusTeapot || string(body) != `{"success":true}` {
			t.Fatalf("round %d: status %d body %q err %v", round, status, body, err)
		}
	}

	for name, c := range map[string]struct {
		raw    string
		status int
		body   string
	}{
		"plain":            {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi", 200, "hi"},
		"lower-case name":  {"HTTP/1.1 400 Bad Request\r\ncontent-length:  3 \r\n\r\nbad", 400, "bad"},
		"empty body":       {"HTTP/1.0 204 No Content\r\nContent-Length: 0\r\n\r\n", 204, ""},
		"no length":        {"HTTP/1.1 200 OK\r\n\r\nhi", 0, ""},
		"chunked":          {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n2\r\nhi\r\n0\r\n\r\n", 0, ""},
		"too large":        {"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n123456789", 0, ""},
		"two lengths":      {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nhi", 0, ""},
		"negative length":  {"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", 0, ""},
		"header no colon":  {"HTTP/1.1 200 OK\r\nContent-Length 2\r\n\r\nhi", 0, ""},
		"not HTTP":         {"SMTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi", 0, ""},
		"status not digit": {"HTTP/1.1 2x0 OK\r\nContent-Length: 2\r\n\r\nhi", 0, ""},
		"short body":       {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhi", 0, ""},
		"cut in headers":   {"HTTP/1.1 200 OK\r\nContent-Len", 0, ""},
	} {
		status, body, err := readReply(bufio.NewReader(strings.NewReader(c.raw)), make([]byte, 0, 8))
		if c.status == 0 {
			if err == nil {
				t.Errorf("%s: read status %d body %q, want an error", name, status, body)
			}
			continue
		}
		if err != nil || status != c.status || string(body) != c.body {
			t.Errorf("%s: status %d body %q err %v, want %d %q", name, status, body, err, c.status, c.body)
		}
	}
}

// FuzzReadReply feeds the reply reader arbitrary bytes: it must not panic,
// and a reply it accepts has a Content-Length and a body that is the last
// bytes it consumed, inside the buffer it was given.
func FuzzReadReply(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		dst := make([]byte, 0, 64)
		r := bytes.NewReader(raw)
		br := bufio.NewReaderSize(r, 64)
		status, body, err := readReply(br, dst)
		if err != nil {
			return
		}
		if status < 100 || status > 999 {
			t.Fatalf("status %d accepted", status)
		}
		if len(body) > 0 && &body[0] != &dst[:1][0] {
			t.Fatalf("body outside the buffer")
		}
		if !bytes.HasSuffix(raw[:len(raw)-r.Len()-br.Buffered()], body) {
			t.Fatalf("body %q not from the reply", body)
		}
		n := 0
		for _, line := range bytes.Split(raw, []byte("\n")) {
			name, _, ok := bytes.Cut(line, []byte(":"))
			if ok && bytes.EqualFold(name, []byte("Content-Length")) {
				n++
			}
		}
		if n == 0 {
			t.Fatalf("accepted a reply without a Content-Length: %q", raw)
		}
	})
}

// TestPacedPhaseChecksEveryReply runs paced phases against servers that
// answer every request (counted) with a good reply, a reply sealed under the
// wrong keys, a success:false reply, or a non-200 status, and checks that
// each request sent was counted, went to its connection's address with its
// own sealed body, and failed exactly when its reply was not a success.
func TestPacedPhaseChecksEveryReply(t *testing.T) {
	now := func() time.Time { return time.Now() }
	secret := strings.Repeat("s", 64)
	keys := envelope.Derive(secret)
	for name, c := range map[string]struct {
		keys   envelope.Keys
		reply  string
		status int
		bad    bool
	}{
		"good":          {keys, `{"success":true,"valid":true}`, 200, false},
		"wrong keys":    {envelope.Derive(strings.Repeat("x", 64)), `{"success":true,"valid":true}`, 200, true},
		"success false": {keys, `{"success":false,"error_code":"KEY_BANNED","message":"no"}`, 200, true},
		"not valid":     {keys, `{"success":true,"valid":false}`, 200, true},
		"HTTP 503":      {keys, `{"success":true,"valid":true}`, 503, true},
	} {
		t.Run(name, func(t *testing.T) {
			var got atomic.Int64
			var mu sync.Mutex
			seen := map[string]bool{}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got.Add(1)
				buf := new(bytes.Buffer)
				buf.ReadFrom(r.Body)
				env, err := envelope.Parse(buf.Bytes())
				if err != nil {
					w.WriteHeader(http.StatusBadRequest)
					return
				}
				inner, _, err := keys.Verify(env, now())
				if err != nil || r.URL.Path != "/api/x" || r.Header.Get("X-App-Secret") != secret {
					w.WriteHeader(http.StatusBadRequest)
					return
				}
				mu.Lock()
				dup := seen[string(inner)]
				seen[string(inner)] = true
				mu.Unlock()
				if dup {
					w.WriteHeader(http.StatusConflict) // a request sent twice
					return
				}
				out, _ := c.keys.Seal([]byte(c.reply), now())
				w.WriteHeader(c.status)
				w.Write(out.Marshal())
			}))
			defer srv.Close()
			req := func(i int) (string, string, []byte) {
				return srv.URL, "/api/x", []byte(`{"i":` + strconv.Itoa(i) + `}`)
			}
			p, err := preparePhase(4, 50*time.Millisecond, 200*time.Millisecond, 400, keys, secret, now, req, validKey)
			if err != nil {
				t.Fatal(err)
			}
			defer p.free()
			res, err := p.measure(context.Background(), "paced")
			if err != nil {
				t.Fatal(err)
			}
			if res.Requests == 0 || res.Requests >= got.Load() {
				t.Fatalf("%d requests measured, %d answered (the warmup's too)", res.Requests, got.Load())
			}
			wantBad := int64(0)
			if c.bad {
				wantBad = res.Requests
			}
			if res.Errors != wantBad {
				t.Errorf("%d of %d requests failed, want %d (first: %s)", res.Errors, res.Requests, wantBad, res.FirstError)
			}
			if c.bad == (res.FirstError == "") {
				t.Errorf("first error %q", res.FirstError)
			}
		})
	}
}

// TestReplyChunks checks where kept replies go: a chunk is filled until it
// has less than a reply's bound left, then the next one is taken, and after
// forget (the warmup's replies dropped) the chunks are reused, not added to.
func TestReplyChunks(t *testing.T) {
	p := &paced{conns: make([]pacedConn, 1)}
	defer p.free()
	pc := &p.conns[0]
	room := func() []byte {
		t.Helper()
		b, err := pc.room()
		if err != nil {
			t.Fatal(err)
		}
		if cap(b) < maxPacedReply || len(b) != 0 {
			t.Fatalf("room of len %d cap %d", len(b), cap(b))
		}
		return b
	}
	room()
	if len(pc.chunks) != 1 || pc.chunk != 0 {
		t.Fatalf("%d chunks, filling %d", len(pc.chunks), pc.chunk)
	}
	pc.used = replyChunk - maxPacedReply // exactly one more fits
	room()
	if pc.chunk != 0 {
		t.Fatalf("moved on with room left")
	}
	pc.used++
	room()
	if len(pc.chunks) != 2 || pc.chunk != 1 || pc.used != 0 {
		t.Fatalf("%d chunks, filling %d at %d", len(pc.chunks), pc.chunk, pc.used)
	}
	p.forget()
	room()
	if len(pc.chunks) != 2 || pc.chunk != 0 {
		t.Fatalf("after forget: %d chunks, filling %d", len(pc.chunks), pc.chunk)
	}
}
