// Package s3fake starts an in-process S3-protocol server (gofakes3 with an
// in-memory backend) for tests of the S3 blob store and of keyward
// configured with it. Only tests import it.
package s3fake

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Start serves an in-memory S3 endpoint until the test ends and returns its
// backend and host:port (plain HTTP).
func Start(t testing.TB) (*s3mem.Backend, string) {
	t.Helper()
	backend := s3mem.New()
	faker := gofakes3.New(backend)
	ts := httptest.NewServer(awsChunked(faker.Server()))
	t.Cleanup(ts.Close)
	return backend, strings.TrimPrefix(ts.URL, "http://")
}

// awsChunked decodes request bodies sent with the aws-chunked content encoding
// (streaming SigV4, which minio-go uses for every part over plain HTTP)
// before gofakes3 sees them, as a real S3 server does. gofakes3 decodes it
// for a plain PutObject but not for UploadPart (putMultipartUploadPart in
// gofakes3.go), where it would store the chunk headers and signatures as
// object bytes. Chunk signatures are not checked; the framing and the
// decoded length are.
func awsChunked(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("X-Amz-Content-Sha256"), "STREAMING-") {
			h.ServeHTTP(w, r)
			return
		}
		want, err := strconv.ParseInt(r.Header.Get("X-Amz-Decoded-Content-Length"), 10, 64)
		if err != nil {
			http.Error(w, "bad x-amz-decoded-content-length", http.StatusBadRequest)
			return
		}
		body, err := decodeAWSChunked(r.Body, want)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.TransferEncoding = nil
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		r.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
		r.Header.Del("X-Amz-Decoded-Content-Length")
		r.Header.Del("Content-Encoding")
		h.ServeHTTP(w, r)
	})
}

// decodeAWSChunked reads "hex-size;chunk-signature=sig\r\n data \r\n" chunks
// up to the final zero-size chunk and its (possibly empty) trailer block.
func decodeAWSChunked(r io.Reader, want int64) ([]byte, error) {
	br := bufio.NewReader(r)
	var out bytes.Buffer
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("aws-chunked: chunk header: %w", err)
		}
		hdr, _, _ := strings.Cut(strings.TrimSuffix(line, "\r\n"), ";")
		size, err := strconv.ParseInt(hdr, 16, 64)
		if err != nil || size < 0 {
			return nil, fmt.Errorf("aws-chunked: bad chunk header %q", line)
		}
		if size == 0 {
			break
		}
		if _, err := io.CopyN(&out, br, size); err != nil {
			return nil, fmt.Errorf("aws-chunked: chunk data: %w", err)
		}
		if crlf, err := br.ReadString('\n'); err != nil || crlf != "\r\n" {
			return nil, errors.New("aws-chunked: chunk not followed by CRLF")
		}
	}
	for { // trailers, then an empty line
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("aws-chunked: trailer: %w", err)
		}
		if line == "\r\n" {
			break
		}
	}
	if int64(out.Len()) != want {
		return nil, fmt.Errorf("aws-chunked: decoded %d bytes, header says %d", out.Len(), want)
	}
	return out.Bytes(), nil
}
