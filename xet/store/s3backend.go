package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// S3Backend keeps blobs as objects of an S3-compatible bucket, under a prefix. It assumes of the
// service: PUT, GET with Range, HEAD, ListObjectsV2, DELETE and server-side COPY (AWS S3, MinIO,
// Ceph RGW, Cloudflare R2, versitygw); it does not need conditional PUTs. Create asks HEAD first
// and then PUTs: two writers racing on one name both write it, which is harmless because the store
// gives one name only to equivalent content (the last PUT wins, whole, as S3 PUTs are atomic).
// Objects are immutable once written, so a reader never sees a partly written blob.
//
// Concurrency: safe for concurrent use by goroutines and by any number of processes (server
// instances) sharing the bucket; it keeps no state but the client.
type S3Backend struct {
	c      *minio.Client
	bucket string
	prefix string // "" or "dir/"
}

// S3Config says where the bucket is. Empty fields come from the standard environment:
// AWS_ENDPOINT_URL (default AWS), AWS_REGION (default us-east-1), AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY, else the shared credentials file (~/.aws/credentials, AWS_PROFILE).
type S3Config struct {
	Endpoint  string // URL, e.g. http://127.0.0.1:7070
	Region    string
	AccessKey string
	SecretKey string
	Transport http.RoundTripper // nil: minio-go's default
}

// smallObject: an object up to this size is read whole on Open (one GET serves every ReadAt).
const smallObject = 1 << 20

// ParseS3URL splits s3://BUCKET[/PREFIX] into the bucket and the prefix ("" or ending in "/").
func ParseS3URL(raw string) (bucket, prefix string, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return "", "", fmt.Errorf("storage %q: want s3://BUCKET[/PREFIX]", raw)
	}
	prefix = strings.Trim(u.Path, "/")
	if prefix != "" {
		prefix += "/"
	}
	return u.Host, prefix, nil
}

// NewS3Backend returns the backend of bucket (which must exist) under prefix.
func NewS3Backend(ctx context.Context, cfg S3Config, bucket, prefix string) (*S3Backend, error) {
	if cfg.Endpoint == "" {
		cfg.Endpoint = os.Getenv("AWS_ENDPOINT_URL")
	}
	if cfg.Region == "" {
		cfg.Region = os.Getenv("AWS_REGION")
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	host, secure, lookup := "s3.amazonaws.com", true, minio.BucketLookupAuto
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("S3 endpoint %q: not a URL", cfg.Endpoint)
		}
		host, secure = u.Host, u.Scheme == "https"
		if !strings.HasSuffix(u.Hostname(), "amazonaws.com") {
			lookup = minio.BucketLookupPath // MinIO, Ceph, versitygw, R2 take path-style addressing
		}
	}
	creds := credentials.NewChainCredentials([]credentials.Provider{
		&credentials.Static{Value: credentials.Value{AccessKeyID: cfg.AccessKey, SecretAccessKey: cfg.SecretKey, SignerType: credentials.SignatureV4}},
		&credentials.EnvAWS{},
		&credentials.FileAWSCredentials{},
	})
	opts := &minio.Options{Creds: creds, Secure: secure, Region: cfg.Region, BucketLookup: lookup, Transport: cfg.Transport}
	c, err := minio.New(host, opts)
	if err != nil {
		return nil, fmt.Errorf("S3 client: %w", err)
	}
	if err := probeBucket(ctx, *opts, host, bucket); err != nil {
		return nil, err
	}
	return &S3Backend{c: c, bucket: bucket, prefix: prefix}, nil
}

// probeBucket checks at start-up that the bucket is there and answers with these credentials, with
// one retry and a deadline (the client's own retries are for a service that worked), and says
// what to fix: the endpoint, the credentials, the clock or the bucket.
func probeBucket(ctx context.Context, opts minio.Options, host, bucket string) error {
	opts.MaxRetries = 1
	c, err := minio.New(host, &opts)
	if err != nil {
		return fmt.Errorf("S3 client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	ok, err := c.BucketExists(ctx, bucket)
	var er minio.ErrorResponse
	if errors.As(err, &er) && (er.StatusCode == http.StatusForbidden || er.StatusCode == http.StatusUnauthorized) {
		// A HEAD's refusal has no body: a GET says whether it was the credentials or the clock.
		// The first item is enough; the deferred cancel stops the listing.
		if o, ok := <-c.ListObjects(ctx, bucket, minio.ListObjectsOptions{MaxKeys: 1}); ok && o.Err != nil {
			err = o.Err
		}
	}
	switch {
	case err == nil && !ok:
		return fmt.Errorf("S3 bucket %s at %s does not exist (create it first)", bucket, host)
	case err == nil:
		return nil
	case errors.As(err, &er) && er.Code == "RequestTimeTooSkewed":
		return fmt.Errorf("S3 at %s refuses this machine's clock as too far from its own (%s): set the clock (NTP)", host, er.Message)
	case errors.As(err, &er) && (er.StatusCode == http.StatusForbidden || er.StatusCode == http.StatusUnauthorized):
		return fmt.Errorf("S3 at %s refused the credentials for bucket %s (%s %s): check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or ~/.aws/credentials)",
			host, bucket, er.Code, strings.TrimSuffix(er.Message, "."))
	case errors.As(err, &er):
		return fmt.Errorf("S3 bucket %s at %s: %s (%d %s)", bucket, host, er.Message, er.StatusCode, er.Code)
	}
	return fmt.Errorf("S3 endpoint %s cannot be reached (check AWS_ENDPOINT_URL): %v", host, err)
}

func (b *S3Backend) key(name string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	return b.prefix + name, nil
}

// notFound reports whether err is S3's "no such key".
func notFound(err error) bool {
	var er minio.ErrorResponse
	return errors.As(err, &er) && (er.Code == "NoSuchKey" || er.StatusCode == http.StatusNotFound)
}

// Create implements Backend.
func (b *S3Backend) Create(ctx context.Context, name string, r io.Reader) (bool, error) {
	k, err := b.key(name)
	if err != nil {
		return false, err
	}
	if ok, err := b.Exists(ctx, name); err != nil || ok {
		return false, err
	}
	size := int64(-1)
	if s, ok := r.(interface{ Size() int64 }); ok {
		size = s.Size()
	} else {
		data, err := io.ReadAll(io.LimitReader(r, MaxXorbBodyBytes+1<<20))
		if err != nil {
			return false, fmt.Errorf("store: writing %s: %w", name, err)
		}
		r, size = bytes.NewReader(data), int64(len(data))
	}
	// One PUT (a xorb is at most MaxXorbBodyBytes, far under S3's 5 GiB): multipart made the
	// service assemble the parts, a second copy of every xorb. The payload stays signed (its
	// SHA-256 in the signature): a service that keeps a body cut short by a dropped connection (an
	// instance killed mid-PUT) then refuses it, as versitygw does not with UNSIGNED-PAYLOAD.
	if _, err := b.c.PutObject(ctx, b.bucket, k, r, size, minio.PutObjectOptions{ContentType: "application/octet-stream",
		DisableMultipart: true}); err != nil {
		return false, fmt.Errorf("store: writing %s: %w", name, err)
	}
	return true, nil
}

// CreateBatch implements Backend: one PUT after the other (each visible when it returns).
func (b *S3Backend) CreateBatch(ctx context.Context, blobs []NewBlob) ([]bool, error) {
	return CreateEach(ctx, b, blobs)
}

// Open implements Backend: a small object is fetched whole, a larger one by ranged GETs.
func (b *S3Backend) Open(ctx context.Context, name string) (Blob, error) {
	k, err := b.key(name)
	if err != nil {
		return nil, err
	}
	info, err := b.c.StatObject(ctx, b.bucket, k, minio.StatObjectOptions{})
	if notFound(err) {
		return nil, fmt.Errorf("store: %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", name, err)
	}
	o := &s3Blob{b: b, ctx: ctx, key: k, size: info.Size}
	if info.Size <= smallObject {
		if o.data, err = o.get(0, info.Size); err != nil {
			return nil, fmt.Errorf("store: %s: %w", name, err)
		}
	}
	return o, nil
}

// Exists implements Backend.
func (b *S3Backend) Exists(ctx context.Context, name string) (bool, error) {
	k, err := b.key(name)
	if err != nil {
		return false, err
	}
	_, err = b.c.StatObject(ctx, b.bucket, k, minio.StatObjectOptions{})
	if notFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: %s: %w", name, err)
	}
	return true, nil
}

// List implements Backend (ListObjectsV2; S3 lists keys in order).
func (b *S3Backend) List(ctx context.Context, prefix string) ([]string, error) {
	var out []string
	for o := range b.c.ListObjects(ctx, b.bucket, minio.ListObjectsOptions{Prefix: b.prefix + prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, fmt.Errorf("store: listing %s: %w", prefix, o.Err)
		}
		out = append(out, strings.TrimPrefix(o.Key, b.prefix))
	}
	return out, nil
}

// Quarantine implements Backend: the object is moved under quarantine/.
func (b *S3Backend) Quarantine(ctx context.Context, name string) error {
	k, err := b.key(name)
	if err != nil {
		return err
	}
	return b.moveKey(ctx, name, k, b.prefix+"quarantine/"+strings.ReplaceAll(name, "/", "_"))
}

// XorbURL returns a presigned GET of the stored xorb h, valid for ttl: its records start at byte 0,
// so the byte ranges of a reconstruction apply to it as they are (the Range header is not signed).
func (b *S3Backend) XorbURL(ctx context.Context, h hash.Hash, ttl time.Duration) (string, error) {
	u, err := b.c.PresignedGetObject(ctx, b.bucket, b.prefix+xorbName(h), ttl, nil)
	if err != nil {
		return "", fmt.Errorf("presigning xorb %s: %w", h, err)
	}
	return u.String(), nil
}

// s3Blob is an open object: its bytes when small, else ranged GETs.
type s3Blob struct {
	b    *S3Backend
	ctx  context.Context
	key  string
	size int64
	data []byte
}

func (o *s3Blob) Size() int64  { return o.size }
func (o *s3Blob) Close() error { return nil }

func (o *s3Blob) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= o.size {
		return 0, io.EOF
	}
	want := min(int64(len(p)), o.size-off)
	var n int
	if o.data != nil {
		n = copy(p, o.data[off:off+want])
	} else {
		b, err := o.get(off, want)
		if err != nil {
			return 0, err
		}
		n = copy(p, b)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// get reads n bytes at off with one ranged GET.
func (o *s3Blob) get(off, n int64) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	obj, err := o.ranged(off, n)
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	buf := make([]byte, n)
	if _, err := io.ReadFull(obj, buf); err != nil {
		return nil, fmt.Errorf("reading %s at %d: %w", o.key, off, err)
	}
	return buf, nil
}

// ranged starts a GET of n > 0 bytes at off.
func (o *s3Blob) ranged(off, n int64) (*minio.Object, error) {
	opts := minio.GetObjectOptions{}
	if err := opts.SetRange(off, off+n-1); err != nil {
		return nil, err
	}
	return o.b.c.GetObject(o.ctx, o.b.bucket, o.key, opts)
}

// Section streams n bytes at off with one ranged GET (a sequential reader of a large range, such
// as the content check of a registration, would otherwise make one GET per ReadAt).
func (o *s3Blob) Section(off, n int64) (io.ReadCloser, error) {
	if o.data != nil || n == 0 {
		return io.NopCloser(io.NewSectionReader(o, off, n)), nil
	}
	obj, err := o.ranged(off, n)
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(obj, n), obj}, nil
}
