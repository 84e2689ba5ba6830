package blob

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"

	"github.com/keyward/keyward/internal/blob/s3fake"
)

const testBucket = "kw-test"

// fakeS3 serves an in-memory S3 endpoint for the test and returns its
// backend and host:port.
func fakeS3(t *testing.T) (*s3mem.Backend, string) { return s3fake.Start(t) }

func testS3Config(endpoint, prefix string) S3Config {
	return S3Config{
		Endpoint:  endpoint,
		Bucket:    testBucket,
		Region:    "us-east-1",
		AccessKey: "x",
		SecretKey: "y",
		Insecure:  true,
		Prefix:    prefix,
	}
}

// openTestS3 starts a fake S3 server and opens a store on it, checking that
// OpenS3 creates the bucket.
func openTestS3(t *testing.T, prefix string) (*S3, *s3mem.Backend) {
	t.Helper()
	backend, endpoint := fakeS3(t)
	if ok, err := backend.BucketExists(testBucket); err != nil || ok {
		t.Fatalf("bucket exists before OpenS3: %v, %v", ok, err)
	}
	s, err := OpenS3(t.Context(), testS3Config(endpoint, prefix))
	if err != nil {
		t.Fatalf("OpenS3: %v", err)
	}
	if ok, err := backend.BucketExists(testBucket); err != nil || !ok {
		t.Fatalf("OpenS3 did not create the bucket: %v, %v", ok, err)
	}
	return s, backend
}

// bucketKeys lists every object key in the test bucket, read from the backend.
func bucketKeys(t *testing.T, backend *s3mem.Backend) []string {
	t.Helper()
	list, err := backend.ListBucket(testBucket, nil, gofakes3.ListBucketPage{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range list.Contents {
		keys = append(keys, c.Key)
	}
	slices.Sort(keys)
	return keys
}

// incompleteUploads lists the multipart uploads begun and never completed
// nor aborted.
func incompleteUploads(t *testing.T, s *S3) []string {
	t.Helper()
	var keys []string
	for u := range s.c.ListIncompleteUploads(t.Context(), s.bucket, "", true) {
		if u.Err != nil {
			t.Fatalf("list incomplete uploads: %v", u.Err)
		}
		keys = append(keys, u.Key)
	}
	return keys
}

func TestS3Store(t *testing.T) {
	s, backend := openTestS3(t, "pfx")
	testStore(t, s)

	// Everything the conformance test left lives under the prefix.
	mustPut(t, s, "after/conformance", []byte("x"))
	for _, k := range bucketKeys(t, backend) {
		if !strings.HasPrefix(k, "pfx/") {
			t.Errorf("object %q is outside the prefix", k)
		}
	}
}

func TestS3OpenS3ExistingBucket(t *testing.T) {
	backend, endpoint := fakeS3(t)
	if err := backend.CreateBucket(testBucket); err != nil {
		t.Fatal(err)
	}
	meta := map[string]string{"Last-Modified": time.Now().UTC().Format(http.TimeFormat)}
	if _, err := backend.PutObject(testBucket, "keep", meta, strings.NewReader("kept"), 4, nil); err != nil {
		t.Fatal(err)
	}
	s, err := OpenS3(t.Context(), testS3Config(endpoint, ""))
	if err != nil {
		t.Fatalf("OpenS3 on an existing bucket: %v", err)
	}
	checkContent(t, s, "keep", []byte("kept"))
	// A second store on the same bucket sees the same objects.
	s2, err := OpenS3(t.Context(), testS3Config(endpoint, ""))
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, "shared", []byte("seen by both"))
	checkContent(t, s2, "shared", []byte("seen by both"))
}

func TestS3OpenS3Errors(t *testing.T) {
	_, endpoint := fakeS3(t)
	for _, cfg := range []S3Config{
		{Bucket: testBucket},
		{Endpoint: endpoint},
	} {
		if _, err := OpenS3(t.Context(), cfg); err == nil {
			t.Errorf("OpenS3(%+v) succeeded, want an error", cfg)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := OpenS3(ctx, testS3Config(endpoint, "")); err == nil {
		t.Error("OpenS3 with a cancelled context succeeded")
	}
}

func TestS3Prefix(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		want   string
	}{
		{"pfx", "pfx/releases/12/abc"},
		{"/pfx/", "pfx/releases/12/abc"},
		{"keyward/blobs/", "keyward/blobs/releases/12/abc"},
		{"", "releases/12/abc"},
	} {
		t.Run(tc.prefix, func(t *testing.T) {
			s, backend := openTestS3(t, tc.prefix)
			mustPut(t, s, "releases/12/abc", []byte("payload"))
			if keys := bucketKeys(t, backend); !slices.Equal(keys, []string{tc.want}) {
				t.Fatalf("bucket holds %q, want [%q]", keys, tc.want)
			}
			// And through a plain S3 client, as another tool would see it.
			info, err := s.c.StatObject(t.Context(), testBucket, tc.want, minio.StatObjectOptions{})
			if err != nil || info.Size != int64(len("payload")) {
				t.Fatalf("stat %s: size %d, %v", tc.want, info.Size, err)
			}
			checkContent(t, s, "releases/12/abc", []byte("payload"))
			if err := s.Delete(t.Context(), "releases/12/abc"); err != nil {
				t.Fatal(err)
			}
			if keys := bucketKeys(t, backend); len(keys) != 0 {
				t.Fatalf("bucket holds %q after Delete, want nothing", keys)
			}
		})
	}
}

// TestS3PrefixIsolation checks that stores with different prefixes on one
// bucket do not see each other's objects.
func TestS3PrefixIsolation(t *testing.T) {
	backend, endpoint := fakeS3(t)
	a, err := OpenS3(t.Context(), testS3Config(endpoint, "a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenS3(t.Context(), testS3Config(endpoint, "b"))
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, a, "k", []byte("from a"))
	checkGone(t, b, "k")
	if err := b.Delete(t.Context(), "k"); err != nil {
		t.Fatal(err)
	}
	checkContent(t, a, "k", []byte("from a"))
	if keys := bucketKeys(t, backend); !slices.Equal(keys, []string{"a/k"}) {
		t.Fatalf("bucket holds %q, want [a/k]", keys)
	}
}

// TestS3FailedPutAborts checks that a failed or cancelled Put aborts its
// multipart upload instead of leaving it (and its stored parts) behind.
func TestS3FailedPutAborts(t *testing.T) {
	for _, tc := range []struct {
		name string
		put  func(t *testing.T, s *S3) error
	}{
		{"ReaderFailsInFirstPart", func(t *testing.T, s *S3) error {
			_, err := s.Put(t.Context(), "broken", &failingReader{r: newGenReader(5, 1<<40), after: 1000})
			return err
		}},
		{"ReaderFailsAfterFirstPart", func(t *testing.T, s *S3) error {
			_, err := s.Put(t.Context(), "broken", &failingReader{r: newGenReader(5, 1<<40), after: partSize + 4096})
			return err
		}},
		{"CancelledAfterFirstPart", func(t *testing.T, s *S3) error {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			r := &cancellingReader{r: newGenReader(5, 1<<40), after: partSize + 4096, cancel: cancel}
			_, err := s.Put(ctx, "broken", r)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, backend := openTestS3(t, "pfx")
			if err := tc.put(t, s); err == nil {
				t.Fatal("Put succeeded, want an error")
			}
			checkGone(t, s, "broken")
			if keys := bucketKeys(t, backend); len(keys) != 0 {
				t.Errorf("bucket holds %q after a failed Put", keys)
			}
			if ups := incompleteUploads(t, s); len(ups) != 0 {
				t.Errorf("failed Put left incomplete multipart uploads %q", ups)
			}
		})
	}
}
