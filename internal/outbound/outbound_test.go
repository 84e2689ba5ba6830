package outbound

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

func TestAllowed(t *testing.T) {
	for _, c := range []struct {
		ip    string
		allow []netip.Prefix
		want  bool
	}{
		{"127.0.0.1", nil, false},
		{"127.255.255.254", nil, false},
		{"10.1.2.3", nil, false},
		{"172.16.0.1", nil, false},
		{"172.31.255.255", nil, false},
		{"192.168.1.1", nil, false},
		{"169.254.169.254", nil, false},
		{"100.64.0.1", nil, false},
		{"100.127.255.255", nil, false},
		{"0.0.0.0", nil, false},
		{"0.1.2.3", nil, false},
		{"224.0.0.1", nil, false},
		{"239.255.255.250", nil, false},
		{"255.255.255.255", nil, false},
		{"192.0.2.1", nil, false},
		{"198.18.0.1", nil, false},
		{"::", nil, false},
		{"::1", nil, false},
		{"fe80::1", nil, false},
		{"fc00::1", nil, false},
		{"fd12:3456::1", nil, false},
		{"ff02::1", nil, false},
		{"::ffff:127.0.0.1", nil, false},
		{"::ffff:10.0.0.1", nil, false},
		{"::ffff:169.254.169.254", nil, false},
		{"64:ff9b::a9fe:a9fe", nil, false}, // NAT64 of 169.254.169.254
		{"64:ff9b::7f00:1", nil, false},    // NAT64 of 127.0.0.1
		{"2002:7f00:1::1", nil, false},     // 6to4 of 127.0.0.1
		{"2002:a9fe:a9fe::1", nil, false},  // 6to4 of 169.254.169.254

		{"8.8.8.8", nil, true},
		{"1.1.1.1", nil, true},
		{"172.32.0.1", nil, true},
		{"100.128.0.1", nil, true},
		{"::ffff:8.8.8.8", nil, true},
		{"2606:4700::1111", nil, true},
		{"2001:4860:4860::8888", nil, true},

		{"127.0.0.1", loopback, true},
		{"127.9.9.9", loopback, true},
		{"::ffff:127.0.0.1", loopback, true},
		{"10.0.0.1", loopback, false},
		{"::1", loopback, false},
		{"169.254.169.254", loopback, false},
		{"8.8.8.8", loopback, true},
		{"::1", []netip.Prefix{netip.MustParsePrefix("::1/128")}, true},
		{"10.9.8.7", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, true},
	} {
		if got := Allowed(netip.MustParseAddr(c.ip), c.allow); got != c.want {
			t.Errorf("Allowed(%s, %v) = %v, want %v", c.ip, c.allow, got, c.want)
		}
	}
	if Allowed(netip.Addr{}, nil) {
		t.Errorf("Allowed(zero Addr) = true, want false")
	}
}

// TestAllowedSpecialPurposeRanges walks the IANA IPv4 and IPv6
// special-purpose registries range by range: an address inside each range
// (the first, the last or a telling one) is refused without an allow list,
// and a neighbour just outside it, or the public address a translating
// prefix embeds, is allowed.
func TestAllowedSpecialPurposeRanges(t *testing.T) {
	for _, c := range []struct {
		rng     string
		refused []string
		allowed []string
	}{
		{"0.0.0.0/8", []string{"0.0.0.0", "0.255.255.255"}, []string{"1.0.0.1"}},
		{"10.0.0.0/8", []string{"10.0.0.0", "10.255.255.255"}, []string{"11.0.0.1", "9.255.255.255"}},
		{"100.64.0.0/10", []string{"100.64.0.0", "100.127.255.255"}, []string{"100.63.255.255", "100.128.0.0"}},
		{"127.0.0.0/8", []string{"127.0.0.1", "127.255.255.255"}, []string{"128.0.0.1"}},
		{"169.254.0.0/16", []string{"169.254.169.254", "169.254.0.1"}, []string{"169.253.255.255", "169.255.0.1"}},
		{"172.16.0.0/12", []string{"172.16.0.0", "172.31.255.255"}, []string{"172.15.255.255", "172.32.0.0"}},
		{"192.0.0.0/24", []string{"192.0.0.8", "192.0.0.170"}, []string{"192.0.1.1"}},
		{"192.0.2.0/24", []string{"192.0.2.1"}, []string{"192.0.3.1"}},
		{"192.88.99.0/24", []string{"192.88.99.1"}, []string{"192.88.98.1", "192.88.100.1"}},
		{"192.168.0.0/16", []string{"192.168.0.1", "192.168.255.255"}, []string{"192.169.0.1"}},
		{"198.18.0.0/15", []string{"198.18.0.1", "198.19.255.255"}, []string{"198.17.255.255", "198.20.0.1"}},
		{"198.51.100.0/24", []string{"198.51.100.7"}, []string{"198.51.101.1"}},
		{"203.0.113.0/24", []string{"203.0.113.9"}, []string{"203.0.114.1"}},
		{"224.0.0.0/4", []string{"224.0.0.1", "239.255.255.255"}, []string{"223.255.255.255"}},
		{"240.0.0.0/4", []string{"240.0.0.1", "255.255.255.254", "255.255.255.255"}, []string{"223.1.1.1"}},

		{"::/128", []string{"::"}, nil},
		{"::1/128", []string{"::1"}, nil},
		{"::/96 IPv4-compatible", []string{"::127.0.0.1", "::8.8.8.8", "::a9fe:a9fe"}, nil},
		{"::ffff:0:0/96 IPv4-mapped", []string{"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::ffff:0.0.0.0"},
			[]string{"::ffff:8.8.8.8", "::ffff:1.1.1.1"}},
		{"::ffff:0:0:0/96 IPv4-translated", []string{"::ffff:0:7f00:1", "::ffff:0:808:808"}, nil},
		{"64:ff9b::/96 NAT64 (embedded IPv4 checked)", []string{"64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b::a00:1", "64:ff9b::"},
			[]string{"64:ff9b::808:808", "64:ff9b::1.1.1.1"}},
		{"64:ff9b:1::/48 local-use NAT64", []string{"64:ff9b:1::808:808", "64:ff9b:1:ffff::1"}, nil},
		{"100::/64 discard-only", []string{"100::", "100::ffff:ffff:ffff:ffff"}, nil},
		{"2001::/23 IETF protocol assignments", []string{"2001:1::1", "2001:2::1", "2001:10::1", "2001:20::1", "2001:1ff:ffff::1"},
			[]string{"2001:200::1"}},
		{"2001::/32 Teredo (embedded addresses)", []string{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001:0:7f00:1::"}, nil},
		{"2001:db8::/32 documentation", []string{"2001:db8::1", "2001:db8:ffff::1"}, []string{"2001:db9::1"}},
		{"2002::/16 6to4", []string{"2002:7f00:1::1", "2002:a9fe:a9fe::1", "2002:808:808::1"}, []string{"2003::1"}},
		{"3fff::/20 documentation", []string{"3fff::1", "3fff:fff::1"}, []string{"3fff:1000::1"}},
		{"5f00::/16 SRv6 SIDs", []string{"5f00::1"}, nil},
		{"fc00::/7 unique-local", []string{"fc00::1", "fd12:3456::1", "fdff:ffff::1"}, nil},
		{"fe80::/10 link-local", []string{"fe80::1", "febf::1"}, nil},
		{"fec0::/10 site-local", []string{"fec0::1", "feff::1"}, nil},
		{"ff00::/8 multicast", []string{"ff02::1", "ff0e::1"}, nil},
		{"outside 2000::/3", []string{"1000::1", "4000::1", "e000::1", "200::1"}, nil},
		{"global unicast", nil, []string{"2606:4700::1111", "2001:4860:4860::8888", "2a00:1450::1", "3ffe::1"}},
	} {
		for _, ip := range c.refused {
			if Allowed(netip.MustParseAddr(ip), nil) {
				t.Errorf("%s: Allowed(%s) = true, want refused", c.rng, ip)
			}
		}
		for _, ip := range c.allowed {
			if !Allowed(netip.MustParseAddr(ip), nil) {
				t.Errorf("%s: Allowed(%s) = false, want allowed", c.rng, ip)
			}
		}
	}
	// --webhook-allow-networks opens each refused range it names, and an
	// allowed IPv4 network covers its NAT64 form.
	for _, c := range []struct{ ip, allow string }{
		{"::127.0.0.1", "::/96"}, {"fec0::1", "fec0::/10"}, {"fd00::5", "fc00::/7"}, {"2001:db8::1", "2001:db8::/32"},
		{"10.1.2.3", "10.0.0.0/8"}, {"64:ff9b::a00:1", "10.0.0.0/8"}, {"::ffff:10.0.0.1", "10.0.0.0/8"},
	} {
		allow := []netip.Prefix{netip.MustParsePrefix(c.allow)}
		if !Allowed(netip.MustParseAddr(c.ip), allow) {
			t.Errorf("Allowed(%s, %s) = false, want allowed by the allow list", c.ip, c.allow)
		}
	}
}

// An IPv6 zone must not hide the address: netip.Prefix.Contains is false
// for any address with a zone, so Allowed, which only asks Contains, takes
// a zoned loopback or link-local address for a public one.
func TestAllowedZonedAddresses(t *testing.T) {
	for _, ip := range []string{"::1%lo", "fe80::1%eth0", "fe80::1%1", "fc00::1%eth0", "::ffff:127.0.0.1%lo"} {
		if Allowed(netip.MustParseAddr(ip), nil) {
			t.Errorf("BUG (outbound.Allowed): Allowed(%s, nil) = true; an IPv6 zone makes every blocked prefix miss "+
				"(netip.Prefix.Contains is false for zoned addresses) — strip the zone (ip.WithZone(\"\")) before checking", ip)
		}
	}
}

// receiver is an httptest server on 127.0.0.1 recording what it got.
type receiver struct {
	*httptest.Server
	hits    atomic.Int64
	mu      sync.Mutex
	header  http.Header
	body    []byte
	method  string
	handler func(w http.ResponseWriter, r *http.Request)
}

func newReceiver(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{handler: h}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.header, rc.body, rc.method = r.Header.Clone(), b, r.Method
		rc.mu.Unlock()
		rc.handler(w, r)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) port() string {
	_, p, _ := net.SplitHostPort(rc.Listener.Addr().String())
	return p
}

func TestSendRefusesLoopbackByDefault(t *testing.T) {
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {})
	c := New(nil, 2*time.Second)
	for _, url := range []string{rc.URL + "/hook", "http://localhost:" + rc.port() + "/hook"} {
		res := c.Send(context.Background(), url, nil, []byte("{}"))
		if !errors.Is(res.Err, ErrBlocked) {
			t.Errorf("Send(%s) without an allow list: err %v, status %d; want ErrBlocked", url, res.Err, res.StatusCode)
		}
		if res.OK() {
			t.Errorf("Send(%s) refused but OK() is true", url)
		}
	}
	// An allow list that does not cover loopback refuses it just the same.
	res := New([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, 2*time.Second).Send(context.Background(), rc.URL, nil, nil)
	if !errors.Is(res.Err, ErrBlocked) {
		t.Errorf("Send with allow 10.0.0.0/8: err %v, want ErrBlocked", res.Err)
	}
	if n := rc.hits.Load(); n != 0 {
		t.Errorf("the receiver got %d requests, want none", n)
	}
}

// A zoned IPv6 loopback URL (http://[::1%25lo]:port/) must be refused like
// plain ::1.
func TestSendRefusesZonedLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	var hits atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())

	if res := New(nil, 2*time.Second).Send(context.Background(), "http://[::1]:"+port+"/", nil, nil); !errors.Is(res.Err, ErrBlocked) {
		t.Fatalf("Send to [::1]: err %v, status %d; want ErrBlocked", res.Err, res.StatusCode)
	}
	res := New(loopback, 2*time.Second).Send(context.Background(), "http://[::1%25lo]:"+port+"/", nil, nil)
	if !errors.Is(res.Err, ErrBlocked) || hits.Load() != 0 {
		t.Errorf("BUG (outbound.Allowed via Client.Send): POST http://[::1%%25lo]:%s/ with allow 127.0.0.0/8 reached the "+
			"IPv6 loopback listener (status %d, err %v, hits %d); want ErrBlocked. The dialer's Control sees [::1%%lo] and "+
			"Allowed ignores zoned addresses", port, res.StatusCode, res.Err, hits.Load())
	}
}

func TestSendAllowed(t *testing.T) {
	answer := bytes.Repeat([]byte("0123456789"), 500) // 5000 bytes
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write(answer)
	})
	c := New(loopback, 5*time.Second)
	body := []byte(`{"event":"test","data":{"x":"é"}}`)
	headers := map[string]string{"Content-Type": "application/json", "User-Agent": "keyward-webhooks/1",
		"X-Webhook-Id": "whd_abc", "X-Webhook-Signature-V2": "t=1,v1=00", "Webhook-Signature": "v1,AAAA"}
	res := c.Send(context.Background(), rc.URL+"/hook?q=1", headers, body)
	if res.Err != nil || res.StatusCode != 200 || !res.OK() {
		t.Fatalf("Send: status %d, err %v; want 200", res.StatusCode, res.Err)
	}
	if len(res.Body) != 2048 || !bytes.Equal(res.Body, answer[:2048]) {
		t.Errorf("Body = %d bytes, want the first 2048 of the 5000 sent", len(res.Body))
	}
	if res.Duration <= 0 {
		t.Errorf("Duration = %v, want it measured", res.Duration)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.method != http.MethodPost || !bytes.Equal(rc.body, body) {
		t.Errorf("receiver got %s %q, want POST %q", rc.method, rc.body, body)
	}
	for k, v := range headers {
		if got := rc.header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
}

func TestSendDoesNotFollowRedirects(t *testing.T) {
	target := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {})
	for _, code := range []int{http.StatusFound, http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", target.URL+"/elsewhere")
			w.WriteHeader(code)
			io.WriteString(w, "moved")
		})
		res := New(loopback, 5*time.Second).Send(context.Background(), rc.URL, nil, []byte("{}"))
		if res.Err != nil || res.StatusCode != code {
			t.Errorf("Send to a %d: status %d, err %v; want %d returned as is", code, res.StatusCode, res.Err, code)
		}
		if string(res.Body) != "moved" {
			t.Errorf("Send to a %d: body %q, want the redirect's own body", code, res.Body)
		}
		if rc.hits.Load() != 1 {
			t.Errorf("redirecting server got %d requests, want 1", rc.hits.Load())
		}
	}
	if n := target.hits.Load(); n != 0 {
		t.Errorf("the Location target got %d requests, want none (redirects must not be followed)", n)
	}
}

func TestSendTimesOut(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
		w.WriteHeader(200)
	})
	defer close(release)
	res := New(loopback, 200*time.Millisecond).Send(context.Background(), rc.URL, nil, []byte("{}"))
	if res.Err == nil || res.OK() {
		t.Fatalf("Send to a receiver slower than the timeout: status %d, err nil; want an error", res.StatusCode)
	}
	var ne net.Error
	if !errors.As(res.Err, &ne) || !ne.Timeout() {
		t.Errorf("Send error = %v, want a timeout", res.Err)
	}
	if errors.Is(res.Err, ErrBlocked) {
		t.Errorf("Send error = %v: a timeout reported as a refusal", res.Err)
	}
}

func TestSendHonoursContext(t *testing.T) {
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res := New(loopback, 5*time.Second).Send(ctx, rc.URL, nil, nil); !errors.Is(res.Err, context.Canceled) {
		t.Errorf("Send with a cancelled context: err %v, want context.Canceled", res.Err)
	}
}

func TestSendBadURL(t *testing.T) {
	c := New(loopback, time.Second)
	for _, u := range []string{"http://[::1", "://nothing", "ftp://127.0.0.1/x"} {
		if res := c.Send(context.Background(), u, nil, nil); res.Err == nil || res.OK() {
			t.Errorf("Send(%q) = status %d, err nil; want an error", u, res.StatusCode)
		}
	}
	if !strings.Contains(ErrBlocked.Error(), "not allowed") {
		t.Errorf("ErrBlocked = %q", ErrBlocked)
	}
}

// FuzzAllowedForms holds the guard to one answer per IPv4 address whatever
// the form it is dialled in: plain, IPv4-mapped, NAT64 (64:ff9b::/96) or
// zoned; IPv4-compatible (::/96) and 6to4 (2002::/16) forms are always
// refused, and the allow list opens the NAT64 form with the IPv4 network.
func FuzzAllowedForms(f *testing.F) {
	for _, s := range [][]byte{{127, 0, 0, 1}, {8, 8, 8, 8}, {169, 254, 169, 254}, {10, 0, 0, 1}, {100, 64, 0, 1}, {192, 88, 99, 1}} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) != 4 {
			return
		}
		v4 := netip.AddrFrom4([4]byte(b))
		want := Allowed(v4, nil)
		var nat64, compat, sixToFour [16]byte
		copy(nat64[:], []byte{0, 0x64, 0xff, 0x9b})
		copy(nat64[12:], b)
		copy(compat[12:], b)
		sixToFour[0], sixToFour[1] = 0x20, 0x02
		copy(sixToFour[2:], b)
		for _, form := range []netip.Addr{netip.AddrFrom16(v4.As16()), netip.AddrFrom16(nat64), netip.AddrFrom16(v4.As16()).WithZone("eth0")} {
			if got := Allowed(form, nil); got != want {
				t.Fatalf("Allowed(%s) = %v, but Allowed(%s) = %v", form, got, v4, want)
			}
		}
		for _, form := range []netip.Addr{netip.AddrFrom16(compat), netip.AddrFrom16(sixToFour)} {
			if Allowed(form, nil) {
				t.Fatalf("Allowed(%s) = true, want refused", form)
			}
		}
		allow := []netip.Prefix{netip.PrefixFrom(v4, 32)}
		if !Allowed(netip.AddrFrom16(nat64), allow) {
			t.Fatalf("Allowed(%s, %v) = false, want allowed", netip.AddrFrom16(nat64), allow)
		}
	})
}

// Get sends the headers, returns an answer up to the bound and refuses a
// longer one, refuses loopback unless allowed, and gives up at the timeout.
func TestGet(t *testing.T) {
	t.Parallel()
	var auth atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		switch r.URL.Path {
		case "/slow":
			<-r.Context().Done()
		case "/big":
			w.Write(bytes.Repeat([]byte("x"), 2048))
		default:
			w.Write([]byte(`{"ok":true}`))
		}
	}))
	defer srv.Close()
	c := New(loopback, 300*time.Millisecond)
	status, body, err := c.Get(context.Background(), srv.URL+"/", map[string]string{"Authorization": "Bearer t"}, 1024)
	if err != nil || status != 200 || string(body) != `{"ok":true}` || auth.Load() != "Bearer t" {
		t.Fatalf("get: %d %q %v (auth %v)", status, body, err, auth.Load())
	}
	if _, _, err := c.Get(context.Background(), srv.URL+"/big", nil, 1024); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a 2 KiB answer with a 1 KiB bound: %v", err)
	}
	start := time.Now()
	if _, _, err := c.Get(context.Background(), srv.URL+"/slow", nil, 1024); err == nil || time.Since(start) > 3*time.Second {
		t.Errorf("a hanging server: %v after %v", err, time.Since(start))
	}
	if _, _, err := New(nil, time.Second).Get(context.Background(), srv.URL+"/", nil, 1024); !errors.Is(err, ErrBlocked) {
		t.Errorf("loopback without allow: %v", err)
	}
}
