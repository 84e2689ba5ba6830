package dashboard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/keyward/keyward/wire"
)

// APIError is a refusal from the admin API, shown to the owner as its
// message (and code).
type APIError struct {
	Status  int
	Code    string
	Message string
}

func (e *APIError) Error() string { return fmt.Sprintf("%s (%s)", e.Message, e.Code) }

// recorder is the in-process response writer of an admin API call.
type recorder struct {
	status int
	header http.Header
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

// do calls the admin API in process as the caller of r (its address, its
// request id) with token, and returns the answer's status, headers and body.
func (d *Dashboard) do(r *http.Request, token, method, path string, q url.Values, body io.Reader, contentType string) *recorder {
	if body == nil {
		body = http.NoBody
	}
	u := path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(r.Context(), method, u, body)
	if err != nil {
		return &recorder{status: http.StatusBadRequest, header: http.Header{}}
	}
	req.RemoteAddr = r.RemoteAddr
	req.TLS = r.TLS
	for _, h := range []string{"X-Forwarded-For", "X-Forwarded-Proto", "User-Agent"} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := &recorder{header: http.Header{}}
	d.api.ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec
}

// call sends body (JSON-encoded unless nil) to the admin API and decodes a
// successful answer into out (a pointer, or nil). A refusal comes back as
// *APIError with the API's status, error_code and message.
func (d *Dashboard) call(r *http.Request, token, method, path string, q url.Values, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	ct := "application/json"
	if rd == nil {
		ct = ""
	}
	rec := d.do(r, token, method, path, q, rd, ct)
	return decodeAnswer(rec, out)
}

// decodeAnswer turns an API answer into out, or its refusal into *APIError.
func decodeAnswer(rec *recorder, out any) error {
	if rec.status != http.StatusOK {
		var e struct {
			Code    string `json:"error_code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(rec.body.Bytes(), &e) != nil || e.Code == "" {
			e.Code, e.Message = wire.CodeInternal, "The server could not answer."
		}
		return &APIError{Status: rec.status, Code: e.Code, Message: e.Message}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(rec.body.Bytes(), out); err != nil {
		return fmt.Errorf("decoding %s answer: %w", "admin API", err)
	}
	return nil
}
