// Package upstream is the HTTP side of lazy migration (issue 24): it asks
// the admin API of the service an app is leaving — another keyward, or the
// hosted service whose API keyward's admin API follows — for one key, or a
// page of its key list, through internal/outbound (the webhook sender's
// guard against private addresses, bounded time and answer size). It
// implements license.Upstream; the rules (when to ask, the negative cache,
// the import) are license's.
package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/outbound"
)

// DefaultTimeout bounds one upstream request when none is configured.
const DefaultTimeout = 3 * time.Second

// MaxAnswer bounds an upstream answer: one key with its devices and
// sessions, or one page of keys.
const MaxAnswer = 4 << 20

// PageSize is how many keys one page of the upstream's key list asks for.
const PageSize = 500

// Client asks upstreams. It is safe for concurrent use.
type Client struct {
	out *outbound.Client
}

var _ license.Upstream = (*Client)(nil)

// New returns a Client that reaches public addresses and those inside
// allow (--webhook-allow-networks), each request bounded by timeout
// (DefaultTimeout when not positive).
func New(allow []netip.Prefix, timeout time.Duration) *Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Client{out: outbound.New(allow, timeout)}
}

// FetchKey asks GET {upstream_url}/api/admin/keys.php?app_id=&license_key=
// with the app's upstream token as bearer and returns the reply's "key"
// object; license.ErrUpstreamNoKey on the admin API's 404 for an unknown
// key. Errors never carry the token.
func (c *Client) FetchKey(ctx context.Context, app *license.App, licenseKey string) ([]byte, error) {
	status, body, err := c.get(ctx, app, url.Values{"app_id": {app.Settings.UpstreamAppID}, "license_key": {licenseKey}})
	if err != nil {
		return nil, err
	}
	return keyAnswer(status, body, licenseKey)
}

// keyAnswer reads the upstream's answer to a lookup of licenseKey: the
// "key" object of a 200, license.ErrUpstreamNoKey for "no such key", else
// an error. The hosted service documents GET keys.php only as its key
// list, so a 200 that is a list ({"keys":[…]}, filtered by license_key or
// not) is read too: the object whose license_key (or key) is licenseKey.
// A list without it is not taken for "no such key" (the upstream may have
// ignored the filter and sent its first page): it is a failed lookup.
func keyAnswer(status int, body []byte, licenseKey string) ([]byte, error) {
	switch {
	case status == 200:
		var r struct {
			Success bool              `json:"success"`
			Key     json.RawMessage   `json:"key"`
			Keys    []json.RawMessage `json:"keys"`
		}
		if err := json.Unmarshal(body, &r); err != nil || !r.Success {
			return nil, errors.New("upstream: 200 without a key object")
		}
		if len(r.Key) > 0 && r.Key[0] == '{' {
			return r.Key, nil
		}
		for _, k := range r.Keys {
			var id struct {
				LicenseKey string `json:"license_key"`
				Key        string `json:"key"`
			}
			if len(k) > 0 && k[0] == '{' && json.Unmarshal(k, &id) == nil && (id.LicenseKey == licenseKey || id.Key == licenseKey) {
				return k, nil
			}
		}
		if r.Keys != nil {
			return nil, fmt.Errorf("upstream: its key list (%d keys) did not include the key asked for", len(r.Keys))
		}
		return nil, errors.New("upstream: 200 without a key object")
	case status == 404 && noSuchKey(body):
		return nil, license.ErrUpstreamNoKey
	}
	return nil, refusal(status, body)
}

// noSuchKey tells the admin API's "no such key" from a 404 for a wrong
// base URL ("No such endpoint."), which is a configuration error, not an
// answer about the key.
func noSuchKey(body []byte) bool {
	var r struct {
		Code    string `json:"error_code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &r) != nil {
		return false
	}
	switch r.Code {
	case "NOT_FOUND", "KEY_NOT_FOUND", "INVALID_KEY":
		return !strings.Contains(strings.ToLower(r.Message), "endpoint")
	}
	return false
}

// refusal describes an upstream answer that is neither a key nor "no such
// key", with the error code the upstream gave (never its body as a whole).
func refusal(status int, body []byte) error {
	var r struct {
		Code string `json:"error_code"`
	}
	json.Unmarshal(body, &r)
	code := r.Code
	if len(code) > 64 {
		code = code[:64]
	}
	switch status {
	case 401, 403:
		return fmt.Errorf("upstream: the token was refused (HTTP %d %s)", status, code)
	}
	return fmt.Errorf("upstream: HTTP %d %s", status, code)
}

// KeyPage reads one page of the upstream app's key list (GET keys.php
// with limit and cursor) and returns its key strings and the next cursor.
func (c *Client) KeyPage(ctx context.Context, app *license.App, cursor string) ([]string, string, error) {
	q := url.Values{"app_id": {app.Settings.UpstreamAppID}, "limit": {fmt.Sprint(PageSize)}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	status, body, err := c.get(ctx, app, q)
	if err != nil {
		return nil, "", err
	}
	return keyPage(status, body, cursor)
}

// keyPage reads one page of the upstream's key list; a next cursor equal to
// the one asked for ends the walk (an upstream that repeats itself).
func keyPage(status int, body []byte, cursor string) ([]string, string, error) {
	if status != 200 {
		return nil, "", refusal(status, body)
	}
	var r struct {
		Success bool `json:"success"`
		Keys    []struct {
			LicenseKey string `json:"license_key"`
		} `json:"keys"`
		NextCursor *string `json:"next_cursor"`
	}
	if err := json.Unmarshal(body, &r); err != nil || !r.Success {
		return nil, "", errors.New("upstream: unreadable key list")
	}
	out := make([]string, 0, len(r.Keys))
	for _, k := range r.Keys {
		out = append(out, k.LicenseKey)
	}
	next := ""
	if r.NextCursor != nil && *r.NextCursor != cursor {
		next = *r.NextCursor
	}
	return out, next, nil
}

// get sends one request to the app's upstream admin API.
func (c *Client) get(ctx context.Context, app *license.App, q url.Values) (int, []byte, error) {
	base := strings.TrimRight(app.Settings.UpstreamURL, "/")
	u := base + "/api/admin/keys.php?" + q.Encode()
	status, body, err := c.out.Get(ctx, u, map[string]string{"Authorization": "Bearer " + app.UpstreamToken,
		"Accept": "application/json", "User-Agent": "keyward-upstream"}, MaxAnswer)
	if err != nil {
		return 0, nil, fmt.Errorf("upstream %s: %w", base, scrub(err, app.UpstreamToken))
	}
	return status, body, nil
}

// scrub drops the request URL from a transport error (it names the key
// string, which logs should not carry) and makes sure no error text
// carries the token.
func scrub(err error, token string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if token != "" && strings.Contains(err.Error(), token) {
		return errors.New(strings.ReplaceAll(err.Error(), token, "…"))
	}
	return err
}
