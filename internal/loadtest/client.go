package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/envelope"
)

// client speaks keyward's wire protocol: the admin API with a bearer token and
// the client API with envelopes, the way a shipped app does.
type client struct {
	http *http.Client
	base string
	now  func() time.Time
}

func newClient(base string, conns int, now func() time.Time) *client {
	tr := &http.Transport{
		MaxIdleConns:        conns * 2,
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		DisableCompression:  true,
		IdleConnTimeout:     90 * time.Second,
	}
	return &client{http: &http.Client{Transport: tr, Timeout: 30 * time.Second},
		base: strings.TrimRight(base, "/"), now: now}
}

func (c *client) close() { c.http.CloseIdleConnections() }

// admin calls the admin API and decodes a {success:true,…} answer into out.
func (c *client) admin(ctx context.Context, token, method, path string, body, out any) error {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return err
		}
	}
	return c.adminRaw(ctx, token, method, path, "application/json", b, out)
}

// adminRaw is admin with a ready body of the given content type (an
// artifact upload sends raw bytes).
func (c *client) adminRaw(ctx context.Context, token, method, path, contentType string, b []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, truncate(raw))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: %v", method, path, err)
	}
	return nil
}

// reply is the part of an inner reply the load tool checks.
type reply struct {
	Success   bool   `json:"success"`
	ErrorCode string `json:"error_code"`
	Message   string `json:"message"`
	SessionID string `json:"session_id"`
	Valid     *bool  `json:"valid"`
	// UpdateAvailable is update/check.php's answer.
	UpdateAvailable *bool `json:"update_available"`
}

// sealed POSTs inner in a fresh envelope and opens and verifies the enveloped
// reply, as a shipped client does.
func (c *client) sealed(ctx context.Context, keys envelope.Keys, secret, url string, inner []byte) (*reply, error) {
	env, err := keys.Seal(inner, c.now())
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(env.Marshal()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-App-Secret", secret)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, truncate(raw))
	}
	return openReply(keys, c.now, raw)
}

// openReply opens a 200 reply's enveloped body as a shipped client does:
// the envelope, its MAC and window, the inner JSON, and success (a reply
// that says false comes back with its error).
func openReply(keys envelope.Keys, now func() time.Time, raw []byte) (*reply, error) {
	renv, err := envelope.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("reply is not an envelope: %s", truncate(raw))
	}
	plain, _, err := keys.Verify(renv, now())
	if err != nil {
		return nil, fmt.Errorf("reply envelope: %v", err)
	}
	var r reply
	if err := json.Unmarshal(plain, &r); err != nil {
		return nil, fmt.Errorf("inner reply: %v", err)
	}
	if !r.Success {
		return &r, fmt.Errorf("%s: %s", r.ErrorCode, r.Message)
	}
	return &r, nil
}

func truncate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}
