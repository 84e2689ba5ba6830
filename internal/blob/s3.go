package blob

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Config locates an S3-compatible bucket (AWS S3, MinIO, Ceph RGW,
// Cloudflare R2, Backblaze B2, Garage, …).
type S3Config struct {
	Endpoint  string // host[:port], no scheme
	Bucket    string
	Region    string
	AccessKey string
	SecretKey string
	Prefix    string // optional key prefix inside the bucket, e.g. "keyward/"
	Insecure  bool   // plain HTTP (a server on a private network or in tests)
}

// partSize bounds the memory of one upload of unknown length: the client
// buffers one part at a time. 16 MiB parts allow objects up to ~160 GB.
const partSize = 16 << 20

// S3 is a Store in an S3-compatible bucket.
type S3 struct {
	c      *minio.Client
	bucket string
	prefix string
}

// OpenS3 connects to the bucket, creating it when it does not exist.
func OpenS3(ctx context.Context, cfg S3Config) (*S3, error) {
	if cfg.Endpoint == "" || cfg.Bucket == "" {
		return nil, fmt.Errorf("s3: endpoint and bucket are required")
	}
	c, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure: !cfg.Insecure,
		Region: cfg.Region,
	})
	if err != nil {
		return nil, fmt.Errorf("s3: %w", err)
	}
	ok, err := c.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("s3: bucket %q on %s: %w", cfg.Bucket, cfg.Endpoint, err)
	}
	if !ok {
		if err := c.MakeBucket(ctx, cfg.Bucket, minio.MakeBucketOptions{Region: cfg.Region}); err != nil {
			return nil, fmt.Errorf("s3: create bucket %q on %s: %w", cfg.Bucket, cfg.Endpoint, err)
		}
	}
	prefix := strings.Trim(cfg.Prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	return &S3{c: c, bucket: cfg.Bucket, prefix: prefix}, nil
}

// Put uploads r in parts; S3 makes the object visible only once complete,
// and a failed multipart upload is aborted.
func (s *S3) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	if !ValidKey(key) {
		return 0, errBadKey
	}
	info, err := s.c.PutObject(ctx, s.bucket, s.prefix+key, r, -1, minio.PutObjectOptions{
		ContentType: "application/octet-stream", PartSize: partSize})
	if err != nil {
		return 0, fmt.Errorf("s3: put %s: %w", key, err)
	}
	return info.Size, nil
}

// Open returns the object; reads after a Seek are ranged GETs.
func (s *S3) Open(ctx context.Context, key string) (Object, error) {
	if !ValidKey(key) {
		return nil, ErrNotFound
	}
	o, err := s.c.GetObject(ctx, s.bucket, s.prefix+key, minio.GetObjectOptions{})
	if err != nil {
		return nil, s.notFound(err)
	}
	st, err := o.Stat()
	if err != nil {
		o.Close()
		return nil, s.notFound(err)
	}
	return s3Object{o, st.Size}, nil
}

func (s *S3) notFound(err error) error {
	if code := minio.ToErrorResponse(err).Code; code == "NoSuchKey" || code == "NotFound" {
		return ErrNotFound
	}
	return fmt.Errorf("s3: %w", err)
}

type s3Object struct {
	*minio.Object
	size int64
}

func (o s3Object) Size() int64 { return o.size }

// Delete removes key (S3 answers success for a missing key too).
func (s *S3) Delete(ctx context.Context, key string) error {
	if !ValidKey(key) {
		return nil
	}
	if err := s.c.RemoveObject(ctx, s.bucket, s.prefix+key, minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("s3: delete %s: %w", key, err)
	}
	return nil
}
