package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/keyward/keyward/wire"
)

// UpdateRequest describes the running app for CheckUpdate.
type UpdateRequest struct {
	Version    string // the running version (semver), required
	Channel    string // stable (default), beta or alpha
	OS         string // windows, macos, linux
	Arch       string // x64, x86, arm64
	HWID       string // stable rollout bucketing
	LicenseKey string // stable rollout bucketing
}

// UpdateOffer is an available update.
type UpdateOffer struct {
	Version     string `json:"version"`
	Channel     string `json:"channel"`
	Mandatory   bool   `json:"is_mandatory"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"` // lowercase hex
	Changelog   string `json:"changelog"`
	DownloadURL string `json:"download_url"` // relative to the base URL
}

// CheckUpdate asks whether an update is available; it returns nil (and no
// error) when the app is up to date.
func (c *Client) CheckUpdate(ctx context.Context, req UpdateRequest) (*UpdateOffer, error) {
	body := wire.UpdateCheckRequest{V: req.Version, Channel: req.Channel, OS: req.OS, Arch: req.Arch, HWID: req.HWID,
		LicenseKey: strings.TrimSpace(req.LicenseKey)}
	var r wire.UpdateCheckReply
	if _, err := c.do(ctx, call{method: "POST", path: "/api/update/check.php", kind: envelopeCall, body: body}, &r); err != nil {
		return nil, err
	}
	if !r.UpdateAvailable || r.Update == nil {
		return nil, nil
	}
	u := r.Update
	o := UpdateOffer{Version: u.Version, Channel: u.Channel, Mandatory: u.IsMandatory, Size: u.Size, SHA256: u.SHA256,
		Changelog: u.Changelog, DownloadURL: u.DownloadURL}
	if o.Size == 0 {
		o.Size = u.FileSize
	}
	o.SHA256 = strings.ToLower(o.SHA256)
	if len(o.SHA256) != 64 || o.DownloadURL == "" {
		return nil, fmt.Errorf("keyward: update check: %w: offer without sha256 or download_url", ErrBadReply)
	}
	return &o, nil
}

// Resumable is where Download writes; *os.File implements it.
type Resumable interface {
	io.ReaderAt
	io.WriterAt
	Truncate(size int64) error
}

// Download fetches offer's artifact into dst. The first have bytes of dst
// are taken as already downloaded: only the rest is requested (Range, with
// If-Range on the offer's sha256 so a changed artifact is sent whole). The
// complete file is then checked against the offer's size and sha256; on a
// mismatch dst is truncated to 0 and the error wraps ErrChecksum.
//
// The sha256 comes from the (enveloped, and with pinning signed) update
// check, so the download itself needs no signature; with pinning a
// signature the server does send is still verified, the artifact must be on
// the base URL's origin and redirects are refused.
func (c *Client) Download(ctx context.Context, offer *UpdateOffer, dst Resumable, have int64) error {
	if offer == nil {
		return errors.New("keyward: download: no offer")
	}
	if have < 0 || (offer.Size > 0 && have > offer.Size) {
		have = 0
	}
	if have == 0 {
		if err := dst.Truncate(0); err != nil {
			return err
		}
	}
	if offer.Size == 0 || have < offer.Size {
		if err := c.fetch(ctx, offer, dst, have); err != nil {
			return err
		}
	}
	return verifyDownload(offer, dst)
}

// DownloadFile downloads offer's artifact to path, through path+".part"
// (kept between attempts, so a later call resumes), renaming it to path once
// the sha256 verified. On a mismatch the partial file is deleted.
func (c *Client) DownloadFile(ctx context.Context, offer *UpdateOffer, path string) error {
	part := path + ".part"
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	err = c.Download(ctx, offer, f, st.Size())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, ErrChecksum) {
		os.Remove(part)
		return err
	}
	if err != nil {
		return err
	}
	return os.Rename(part, path)
}

func verifyDownload(offer *UpdateOffer, dst Resumable) error {
	h := sha256.New()
	n, err := io.Copy(h, io.NewSectionReader(dst, 0, 1<<62))
	if err != nil {
		return err
	}
	got := hex.EncodeToString(h.Sum(nil))
	if (offer.Size > 0 && n != offer.Size) || got != strings.ToLower(offer.SHA256) {
		dst.Truncate(0)
		return fmt.Errorf("keyward: download %s: %w (got %d bytes, sha256 %s; want %d bytes, sha256 %s)",
			offer.Version, ErrChecksum, n, got, offer.Size, offer.SHA256)
	}
	return nil
}

// downloadURL resolves the offer's URL and reports whether it is on the
// base URL's origin.
func (c *Client) downloadURL(raw string) (*url.URL, bool, error) {
	ref, err := url.Parse(raw)
	if err != nil {
		return nil, false, fmt.Errorf("keyward: download_url: %w", err)
	}
	var u *url.URL
	if ref.IsAbs() {
		u = ref
	} else {
		u = c.url("/"+strings.TrimLeft(ref.Path, "/"), nil)
		u.RawQuery = ref.RawQuery
	}
	return u, u.Scheme == c.base.Scheme && u.Host == c.base.Host, nil
}

// fetch streams the artifact from have on into dst.
func (c *Client) fetch(ctx context.Context, offer *UpdateOffer, dst Resumable, have int64) error {
	u, same, err := c.downloadURL(offer.DownloadURL)
	if err != nil {
		return err
	}
	if !same && len(c.pins) > 0 {
		return &SecurityError{Err: ErrOrigin, Method: "GET", Path: u.Path, Detail: u.Host}
	}
	req, err := http.NewRequestWithContext(ctx, "GET", u.String(), nil)
	if err != nil {
		return err
	}
	if same {
		req.Header.Set("X-App-Secret", c.secret)
	}
	if c.ua != "" {
		req.Header.Set("User-Agent", c.ua)
	}
	if have > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(have, 10)+"-")
		req.Header.Set("If-Range", `"`+strings.ToLower(offer.SHA256)+`"`)
	}
	nonce, err := c.stampNonce(req)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var bodyHash hash.Hash
	if len(c.pins) > 0 {
		sig := resp.Header.Get("X-PWF-Signature")
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			return &SecurityError{Err: ErrRedirect, Method: "GET", Path: u.Path, Detail: resp.Header.Get("Location")}
		}
		if sig != "" {
			bodyHash = sha256.New()
		}
	}
	verifySig := func(raw []byte) error {
		if bodyHash == nil {
			return nil
		}
		if raw != nil {
			bodyHash.Write(raw)
		}
		canon := ReplyCanonicalHashed(nonce, "GET", u.Path, nil, resp.StatusCode, bodyHash.Sum(nil))
		if err := VerifyReplySignature(c.pins, canon, resp.Header.Get("X-PWF-Signature")); err != nil {
			return &SecurityError{Err: err, Method: "GET", Path: u.Path}
		}
		return nil
	}
	var start int64
	switch resp.StatusCode {
	case http.StatusOK:
		if have > 0 {
			if err := dst.Truncate(0); err != nil {
				return err
			}
		}
	case http.StatusPartialContent:
		start = have
		if cr := resp.Header.Get("Content-Range"); !strings.HasPrefix(cr, "bytes "+strconv.FormatInt(have, 10)+"-") {
			return fmt.Errorf("keyward: download: %w: Content-Range %q for a request from %d", ErrBadReply, cr, have)
		}
	case http.StatusRequestedRangeNotSatisfiable:
		// What we have may be all there is; the checksum decides.
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxReply))
		return verifySig(nil)
	default:
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxReply))
		if err := verifySig(raw); err != nil {
			return err
		}
		e := &APIError{Status: resp.StatusCode, Message: http.StatusText(resp.StatusCode)}
		var body map[string]any
		if json.Unmarshal(raw, &body) == nil {
			e.Fields = body
			e.Code, _ = body["error_code"].(string)
			if m, _ := body["message"].(string); m != "" {
				e.Message = m
			}
		}
		return e
	}
	var src io.Reader = resp.Body
	if bodyHash != nil {
		src = io.TeeReader(resp.Body, bodyHash)
	}
	if _, err := io.Copy(&offsetWriter{w: dst, off: start}, src); err != nil {
		return fmt.Errorf("keyward: download interrupted: %w", err)
	}
	return verifySig(nil)
}

type offsetWriter struct {
	w   io.WriterAt
	off int64
}

func (o *offsetWriter) Write(p []byte) (int, error) {
	n, err := o.w.WriteAt(p, o.off)
	o.off += int64(n)
	return n, err
}
