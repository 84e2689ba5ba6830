package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/envelope"
)

// The paced phases (--half-rate) ask how fast the server answers at a rate
// it carries, and the load tool's own work per request — sealing it,
// net/http's client, opening the reply — has a tail of its own on a
// two-core machine: the echo's p99 at half rate was 4–7 ms through the
// full client, above the 2 ms the heartbeat is held to, so the figure
// showed the tool, not the server.
//
// So a paced phase's requests are sealed before it starts, as whole HTTP/1.1
// requests in memory outside the Go heap (an in-process server's
// collections are then paced as they would be without them), each goroutine
// writes them on its own connection and reads the reply with a minimal
// HTTP/1.1 reader, copying the body aside, outside the heap too. Every reply is still opened and
// checked — after the phase, when the clock has stopped — and a failure
// counts as an error of the phase like any other.

// maxPacedReply bounds one reply body kept for checking after the phase.
const maxPacedReply = 4 << 10

// pacedRequest says what the i-th request of a paced phase is: where it
// goes (base address and path) and its inner JSON.
type pacedRequest func(i int) (base, path string, inner []byte)

// replyCheck checks a successful reply for what its request must also find
// in it (check-key's valid); nil means it passes.
type replyCheck func(r *reply) error

// preparePhase seals a paced phase's requests: rate requests a second from
// conns connections, for warmup (unrecorded) and then d. Its measure runs
// the phase; free releases it.
func preparePhase(conns int, warmup, d time.Duration, rate float64,
	keys envelope.Keys, secret string, now func() time.Time, req pacedRequest, check replyCheck) (*paced, error) {
	every := time.Duration(float64(conns) / rate * float64(time.Second))
	if every <= 0 {
		return nil, fmt.Errorf("paced phase: rate %.0f/s is too high for %d connections", rate, conns)
	}
	// drive gives each goroutine at most ceil(phase/every) requests a phase.
	per := int(math.Ceil(float64(warmup)/float64(every))) + int(math.Ceil(float64(d)/float64(every))) + 2
	p, err := seal(conns, per, keys, secret, now, req)
	if err != nil {
		return nil, err
	}
	p.warmup, p.d, p.rate = warmup, d, rate
	p.keys, p.now, p.verify = keys, now, check
	return p, nil
}

// measure runs the phase and then checks every reply it recorded.
func (p *paced) measure(ctx context.Context, name string) (Result, error) {
	if err := p.dial(ctx); err != nil {
		return Result{}, err
	}
	defer p.close()
	conns := len(p.conns)
	if p.warmup > 0 {
		drive(ctx, conns, p.warmup, p.rate, p.do)
		p.forget()
	}
	res := drive(ctx, conns, p.d, p.rate, p.do)
	res.Name = name
	bad, first := p.check()
	res.Errors += bad
	if res.FirstError == "" {
		res.FirstError = first
	}
	return res, nil
}

// paced holds one paced phase's sealed requests and the replies read so
// far, per connection.
type paced struct {
	conns []pacedConn
	mem   []byte // every sealed request, outside the Go heap

	warmup, d time.Duration
	rate      float64
	keys      envelope.Keys
	now       func() time.Time
	verify    replyCheck
}

// pacedConn is one connection's share. Its bookkeeping holds no pointers
// but to memory outside the heap, so the collector has nothing of it to
// scan.
type pacedConn struct {
	addr string
	c    net.Conn
	br   *bufio.Reader
	reqs []byte  // its sealed requests back to back (a slice of paced.mem)
	ends []int32 // where each request ends in reqs
	next int     // the next request to send
	// The bodies of the 200 replies read, in chunks outside the heap
	// (reused after forget); spans says where each is.
	chunks [][]byte
	chunk  int // the chunk being filled
	used   int // bytes used of it
	spans  []replySpan
}

type replySpan struct{ chunk, start, end int32 }

// replyChunk is the size of one chunk of kept replies.
const replyChunk = 1 << 20

// seal seals per requests for each of conns connections: the connection w
// sends requests w, w+conns, w+2·conns, … as drive numbers them.
func seal(conns, per int, keys envelope.Keys, secret string, now func() time.Time, req pacedRequest) (*paced, error) {
	p := &paced{conns: make([]pacedConn, conns)}
	var built [][]byte // per connection, on the heap until copied
	for w := range p.conns {
		pc := &p.conns[w]
		var b []byte
		pc.ends = make([]int32, per)
		for k := range per {
			base, path, inner := req(w + k*conns)
			u, err := url.Parse(base)
			if err != nil {
				return nil, fmt.Errorf("paced phase: %w", err)
			}
			pc.addr = u.Host
			env, err := keys.Seal(inner, now())
			if err != nil {
				return nil, err
			}
			target := strings.TrimRight(u.Path, "/") + path
			if target == "" {
				target = "/"
			}
			b = appendPost(b, u.Host, target, secret, env.Marshal())
			pc.ends[k] = int32(len(b))
		}
		built = append(built, b)
		pc.spans = make([]replySpan, 0, per)
	}
	size := 0
	for _, b := range built {
		size += len(b)
	}
	mem, err := offHeap(size)
	if err != nil {
		return nil, err
	}
	p.mem = mem
	off := 0
	for w, b := range built {
		p.conns[w].reqs = mem[off : off+len(b) : off+len(b)]
		copy(p.conns[w].reqs, b)
		off += len(b)
	}
	return p, nil
}

// appendPost appends a whole HTTP/1.1 POST of an enveloped body, as a
// shipped client sends it.
func appendPost(b []byte, host, path, secret string, body []byte) []byte {
	b = append(b, "POST "+path+" HTTP/1.1\r\nHost: "+host+
		"\r\nContent-Type: application/json\r\nX-App-Secret: "+secret+
		"\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"...)
	return append(b, body...)
}

// dial opens every connection.
func (p *paced) dial(ctx context.Context) error {
	var d net.Dialer
	for w := range p.conns {
		pc := &p.conns[w]
		c, err := d.DialContext(ctx, "tcp", pc.addr)
		if err != nil {
			p.close()
			return fmt.Errorf("paced phase: %w", err)
		}
		pc.c, pc.br = c, bufio.NewReaderSize(c, 8<<10)
	}
	return nil
}

func (p *paced) close() {
	for w := range p.conns {
		if c := p.conns[w].c; c != nil {
			c.Close()
		}
	}
}

// free releases the memory outside the heap.
func (p *paced) free() {
	releaseOffHeap(p.mem)
	p.mem = nil
	for w := range p.conns {
		for _, c := range p.conns[w].chunks {
			releaseOffHeap(c)
		}
		p.conns[w].chunks = nil
	}
}

// forget drops the replies read so far (the warmup's), unchecked.
func (p *paced) forget() {
	for w := range p.conns {
		pc := &p.conns[w]
		pc.chunk, pc.used, pc.spans = 0, 0, pc.spans[:0]
	}
}

// room returns where the connection's next reply body goes: maxPacedReply
// bytes of spare capacity, in a new chunk if the one being filled has less.
func (pc *pacedConn) room() ([]byte, error) {
	if pc.chunk < len(pc.chunks) && replyChunk-pc.used < maxPacedReply {
		pc.chunk, pc.used = pc.chunk+1, 0
	}
	if pc.chunk == len(pc.chunks) {
		c, err := offHeap(replyChunk)
		if err != nil {
			return nil, err
		}
		pc.chunks = append(pc.chunks, c)
	}
	return pc.chunks[pc.chunk][pc.used:pc.used:replyChunk], nil
}

// do sends connection i%len(conns)'s next request and reads its reply. Only
// that connection's goroutine calls it with such an i (drive's numbering).
func (p *paced) do(ctx context.Context, i int) error {
	pc := &p.conns[i%len(p.conns)]
	if pc.next >= len(pc.ends) {
		return errors.New("paced phase: ran out of sealed requests")
	}
	start := int32(0)
	if pc.next > 0 {
		start = pc.ends[pc.next-1]
	}
	r := pc.reqs[start:pc.ends[pc.next]]
	pc.next++
	dst, err := pc.room()
	if err != nil {
		return err
	}
	if _, err := pc.c.Write(r); err != nil {
		return err
	}
	status, body, err := readReply(pc.br, dst[:0:min(cap(dst), maxPacedReply)])
	if err != nil {
		return err
	}
	if status != 200 {
		return fmt.Errorf("HTTP %d: %s", status, truncate(body))
	}
	pc.spans = append(pc.spans, replySpan{int32(pc.chunk), int32(pc.used), int32(pc.used + len(body))})
	pc.used += len(body)
	return nil
}

// check opens every kept reply and returns how many failed and the first
// failure.
func (p *paced) check() (bad int64, first string) {
	for w := range p.conns {
		pc := &p.conns[w]
		for _, sp := range pc.spans {
			raw := pc.chunks[sp.chunk][sp.start:sp.end]
			r, err := openReply(p.keys, p.now, raw)
			if err == nil && p.verify != nil {
				err = p.verify(r)
			}
			if err != nil {
				bad++
				if first == "" {
					first = err.Error()
				}
			}
		}
	}
	return bad, first
}

// errReply is a reply readReply cannot take.
var errReply = errors.New("paced phase: unexpected reply framing")

// readReply reads one HTTP/1.1 reply from br into dst's spare capacity and
// returns its status and body (a prefix of dst[:cap]). It takes what
// net/http's server sends a small reply with: a status line, headers with
// a Content-Length, and that many bytes. Anything else is errReply, and a
// body larger than dst is one too.
func readReply(br *bufio.Reader, dst []byte) (status int, body []byte, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, nil, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, nil, errReply
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil || status < 100 {
		return 0, nil, errReply
	}
	n := -1
	for {
		line, err = br.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				err = errReply
			}
			return 0, nil, err
		}
		h := bytes.TrimRight(line, "\r\n")
		if len(h) == 0 {
			break
		}
		name, value, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			return 0, nil, errReply
		}
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			v, err := strconv.Atoi(string(bytes.TrimSpace(value)))
			if err != nil || v < 0 || n >= 0 {
				return 0, nil, errReply
			}
			n = v
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return 0, nil, errReply
		}
	}
	if n < 0 || n > cap(dst) {
		return 0, nil, errReply
	}
	body = dst[:n]
	if _, err := io.ReadFull(br, body); err != nil {
		return 0, nil, err
	}
	return status, body, nil
}
