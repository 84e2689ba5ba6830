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

// blocked are the networks refused unless allowed explicitly: loopback,
// RFC 1918, link-local (cloud metadata at 169.254.169.254), CGNAT, "this
// network", multicast and reserved space, and their IPv6 counterparts
// (unique-local, link-local, NAT64 and 6to4 prefixes that embed IPv4).
var blocked = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
		"224.0.0.0/4", "240.0.0.0/4",
		"::/128", "::1/128", "64:ff9b::/96", "64:ff9b:1::/48", "2002::/16", "fc00::/7", "fe80::/10", "ff00::/8",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

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
	for _, p := range blocked {
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
	return &Client{http: &http.Client{Transport: tr, Timeout: timeout,
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
