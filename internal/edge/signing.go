package edge

import (
	"bytes"
	"io"
	"net/http"

	"github.com/keyward/keyward/internal/signing"
)

// Signed replies (PWF-REPLY-V1, sdk-compat §3): with a signing key
// configured, every reply to a request carrying a well-formed X-PWF-Nonce —
// success, refusal, 404, a recovered panic — is buffered, signed over its
// exact bytes and sent with X-PWF-Signature. Requests without a nonce are
// served as they always are.

const (
	// signedRequestLimit is the largest request body of a signed exchange:
	// the signature covers the body's hash, so it is read whole first.
	signedRequestLimit = 1 << 20
	// signedReplyLimit is the largest reply keyward buffers to sign; a
	// larger one (an artifact download) goes out unsigned, its bytes checked
	// against the sha256 of the signed update check instead.
	signedReplyLimit = 8 << 20
)

// nonceKey is signing.NonceHeader in canonical form: r.Header is indexed
// with it, since Header.Get would canonicalise "X-PWF-Nonce" (a new string)
// on every request.
var nonceKey = http.CanonicalHeaderKey(signing.NonceHeader)

// headerValue is h.Get(key) for a key already in canonical form.
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Signs reports whether the reply to r will be signed: a signing key is
// active and r carries a well-formed X-PWF-Nonce. Handlers add what only a
// signed reply may promise (trust_until) when it is true; it costs a header
// lookup and no allocation.
func (e *Edge) Signs(r *http.Request) bool {
	keys := e.signer.Load()
	return keys != nil && keys.Active != nil && signing.ValidNonce(headerValue(r.Header, nonceKey))
}

// signReplies wraps next with reply signing by the signer's active key.
func (e *Edge) signReplies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys := e.signer.Load()
		nonce := headerValue(r.Header, nonceKey)
		if keys == nil || keys.Active == nil || !signing.ValidNonce(nonce) {
			next.ServeHTTP(w, r)
			return
		}
		body, err := ReadBody(w, r, signedRequestLimit)
		r.Body.Close()
		rec := &signingWriter{w: w, status: http.StatusOK}
		if err != nil {
			// Over the limit: the same 400 BODY_TOO_LARGE as every route.
			e.Error(rec, r, err)
		} else {
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			next.ServeHTTP(rec, r)
		}
		if rec.passthrough {
			return // too large to sign; already sent
		}
		reply := rec.buf.Bytes()
		if r.Method == http.MethodHead {
			reply = nil
		}
		sig, err := keys.Active.Sign(signing.Canonical(nonce, r.Method, r.URL.Path, body, rec.status, reply))
		if err != nil {
			e.log.ErrorContext(r.Context(), "sign reply", "err", err)
		} else {
			w.Header().Set(signing.SignatureHeader, sig)
		}
		w.Header().Del("Content-Encoding")
		if r.Method != http.MethodHead { // a HEAD keeps the GET's length
			setContentLength(w.Header(), rec.buf.Len())
		}
		w.WriteHeader(rec.status)
		w.Write(rec.buf.Bytes())
	})
}

// signingWriter holds a reply back until it is signed, up to
// signedReplyLimit; past that it sends what it has, unsigned, and passes the
// rest through.
type signingWriter struct {
	w           http.ResponseWriter
	status      int
	wrote       bool
	buf         bytes.Buffer
	passthrough bool
}

func (s *signingWriter) Header() http.Header { return s.w.Header() }

// Unwrap lets http.ResponseController reach the connection (the artifact
// upload lifts its read deadline through it).
func (s *signingWriter) Unwrap() http.ResponseWriter { return s.w }

func (s *signingWriter) WriteHeader(code int) {
	if s.wrote {
		return
	}
	s.wrote, s.status = true, code
}

func (s *signingWriter) Write(p []byte) (int, error) {
	if !s.wrote {
		s.WriteHeader(http.StatusOK)
	}
	if s.passthrough {
		return s.w.Write(p)
	}
	if s.buf.Len()+len(p) <= signedReplyLimit {
		return s.buf.Write(p)
	}
	s.passthrough = true
	s.w.WriteHeader(s.status)
	if _, err := s.w.Write(s.buf.Bytes()); err != nil {
		return 0, err
	}
	return s.w.Write(p)
}
