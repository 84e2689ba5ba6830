// Package outbound sends keyward's own HTTP requests to addresses owners
// configure (webhooks), guarded against server-side request forgery: the
// address is checked after DNS resolution, at connect time, so a name that
// resolves to a private address — or changes to one — is refused too.
package outbound

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/keyward/keyward/internal/webhook"
)

// The IANA special-purpose address registries decide what is refused
// (https://www.iana.org/assignments/iana-ipv4-special-registry,
// iana-ipv6-special-registry), range by range:
//
// IPv4 — refused: 0/8 "this network", 10/8, 172.16/12, 192.168/16 (RFC
// 1918), 100.64/10 (CGNAT), 127/8 (loopback), 169.254/16 (link-local, cloud
// metadata at 169.254.169.254), 192.0.0/24 (IETF protocol assignments),
// 192.0.2/24, 198.51.100/24, 203.0.113/24 (documentation), 192.88.99/24
// (6to4 relay anycast, deprecated), 198.18/15 (benchmarking), 224/4
// (multicast), 240/4 (reserved, with 255.255.255.255 broadcast).
//
// IPv6 — only global unicast (2000::/3) can be public, so everything outside
// it is refused: ::/128, ::1, ::/96 (IPv4-compatible, deprecated: [::127.0.0.1]),
// 100::/64 (discard), 64:ff9b:1::/48 (local-use NAT64), fc00::/7
// (unique-local), fe80::/10 (link-local), fec0::/10 (site-local,
// deprecated), ff00::/8 (multicast) and the reserved rest of the space.
// ::ffff:0:0/96 (IPv4-mapped) is its IPv4 address, and 64:ff9b::/96 (the
// well-known NAT64 prefix, RFC 6052) is checked as the IPv4 address it
// embeds, so an IPv6-only host behind DNS64 still reaches public IPv4
// receivers while 64:ff9b::a9fe:a9fe (169.254.169.254) is refused. Inside
// 2000::/3 these are refused: 2001::/23 (IETF protocol assignments, Teredo
// 2001::/32 with its embedded addresses included — no webhook receiver
// lives there), 2001:db8::/32 and 3fff::/20 (documentation), 2002::/16
// (6to4, deprecated: it embeds any IPv4 address) and 5f00::/16 (SRv6 SIDs).
var (
	blocked4 = prefixes("0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
		"203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4")
	globalUnicast = netip.MustParsePrefix("2000::/3")
	blocked6      = prefixes("2001::/23", "2001:db8::/32", "2002::/16", "3fff::/20", "5f00::/16")
	nat64         = netip.MustParsePrefix("64:ff9b::/96")
)

func prefixes(list ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(list))
	for i, s := range list {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// ErrBlocked is the refusal of a connection to a non-public address.
var ErrBlocked = errors.New("address not allowed (private, loopback, link-local or reserved); see --webhook-allow-networks")

// Allowed reports whether a connection to ip may be made: a public address,
// or one inside allow.
func Allowed(ip netip.Addr, allow []netip.Prefix) bool {
	// ::ffff:10.0.0.1 is 10.0.0.1, and fe80::1%eth0 is fe80::1 (a prefix
	// never contains a zoned address, which would pass every check below).
	ip = ip.WithZone("").Unmap()
	for _, p := range allow {
		if p.Contains(ip) {
			return true
		}
	}
	if !ip.IsValid() {
		return false
	}
	if ip.Is4() {
		for _, p := range blocked4 {
			if p.Contains(ip) {
				return false
			}
		}
		return true
	}
	if nat64.Contains(ip) {
		b := ip.As16()
		return Allowed(netip.AddrFrom4([4]byte(b[12:])), allow)
	}
	if !globalUnicast.Contains(ip) {
		return false
	}
	for _, p := range blocked6 {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// Client sends requests with the guard, a per-request timeout and no
// redirects followed.
type Client struct {
	http *http.Client
	tr   *http.Transport
}

// KeepIdle keeps up to n idle connections per host (default 4) for reuse;
// call it before the first request. A sender that has more requests than
// that in flight to one host would otherwise close the surplus after each
// answer and dial (and on HTTPS, handshake) again.
func (c *Client) KeepIdle(n int) {
	if n > 0 {
		c.tr.MaxIdleConnsPerHost = n
	}
}

// New returns a Client that refuses non-public addresses outside allow and
// gives each request timeout in all.
func New(allow []netip.Prefix, timeout time.Duration) *Client {
	dialer := &net.Dialer{Timeout: timeout, Control: func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("outbound: %q: %w", address, ErrBlocked)
		}
		if !Allowed(ap.Addr(), allow) {
			return fmt.Errorf("outbound: %s: %w", ap.Addr(), ErrBlocked)
		}
		return nil
	}}
	tr := &http.Transport{
		Proxy:                 nil, // never through an environment proxy: the guard checks the real peer
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &Client{tr: tr, http: &http.Client{Transport: tr, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// maxAnswer is how much of an answer is kept for the delivery log.
const maxAnswer = 2048

// Send posts body with headers and reports the answer; a 3xx is returned
// as is (redirects are never followed).
func (c *Client) Send(ctx context.Context, url string, headers map[string]string, body []byte) webhook.Result {
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return webhook.Result{Err: err}
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return webhook.Result{Err: err, Duration: time.Since(start)}
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // let the connection be reused
	return webhook.Result{StatusCode: resp.StatusCode, Body: answer, Duration: time.Since(start)}
}

// ErrTooLarge is the refusal of an answer longer than the caller's bound.
var ErrTooLarge = errors.New("outbound: answer too large")

// Get sends a GET with headers and returns the status and the answer,
// refusing (ErrTooLarge) one longer than max bytes. A 3xx is returned as
// is (redirects are never followed).
func (c *Client) Get(ctx context.Context, url string, headers map[string]string, max int64) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return resp.StatusCode, nil, err
	}
	if int64(len(body)) > max {
		return resp.StatusCode, nil, fmt.Errorf("%w (more than %d bytes)", ErrTooLarge, max)
	}
	return resp.StatusCode, body, nil
}
