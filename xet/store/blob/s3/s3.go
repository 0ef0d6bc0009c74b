// Package s3 keeps blobs in an S3-compatible bucket (blob.Backend on minio-go). Where the bucket is
// and how to sign for it are passed in (Config); the package reads no environment.
package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// Backend keeps blobs as objects of an S3-compatible bucket, under a prefix. It assumes of the
// service: PUT, GET with Range, HEAD, ListObjectsV2, DELETE and server-side COPY (AWS S3, MinIO,
// Ceph RGW, Cloudflare R2, versitygw); it does not need conditional PUTs. Create asks HEAD first
// and then PUTs: two writers racing on one name both write it, which is harmless because the store
// gives one name only to equivalent content (the last PUT wins, whole, as S3 PUTs are atomic).
// Objects are immutable once written, so a reader never sees a partly written blob.
//
// Concurrency: safe for concurrent use by goroutines and by any number of processes (server
// instances) sharing the bucket; it keeps no state but the client.
type Backend struct {
	c      *minio.Client
	bucket string
	prefix string // "" or "dir/"
}

// Config says where the bucket is and how to sign for it.
type Config struct {
	Endpoint string // URL, e.g. http://127.0.0.1:7070; empty: AWS
	Region   string // empty: us-east-1
	// Creds signs the requests (the caller's choice of source: static keys, the AWS environment
	// and credentials file, ...). Nil: AccessKey and SecretKey.
	Creds     *credentials.Credentials
	AccessKey string
	SecretKey string
	Transport http.RoundTripper // nil: minio-go's default
}

// maxUnsized bounds a Create source that does not say its size, read whole before its PUT: more
// than any blob the store writes.
const maxUnsized = 256 << 20

// smallObject: an object up to this size is read whole on Open (one GET serves every ReadAt).
const smallObject = 1 << 20

// ParseURL splits s3://BUCKET[/PREFIX] into the bucket and the prefix ("" or ending in "/").
func ParseURL(raw string) (bucket, prefix string, err error) {
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

// New returns the backend of bucket (which must exist) under prefix, once a request to the bucket
// answered (see probeBucket).
func New(ctx context.Context, cfg Config, bucket, prefix string) (*Backend, error) {
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
	creds := cfg.Creds
	if creds == nil {
		creds = credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, "")
	}
	opts := &minio.Options{Creds: creds, Secure: secure, Region: cfg.Region, BucketLookup: lookup, Transport: cfg.Transport}
	c, err := minio.New(host, opts)
	if err != nil {
		return nil, fmt.Errorf("S3 client: %w", err)
	}
	if err := probeBucket(ctx, *opts, host, bucket); err != nil {
		return nil, err
	}
	return &Backend{c: c, bucket: bucket, prefix: prefix}, nil
}

// ErrCredentials: the service refused the credentials (New); the caller knows where they came from.
var ErrCredentials = errors.New("check the credentials")

// ErrUnreachable: nothing answered at the endpoint (New).
var ErrUnreachable = errors.New("cannot be reached")

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
		return fmt.Errorf("S3 at %s refused the credentials for bucket %s (%s %s): %w",
			host, bucket, er.Code, strings.TrimSuffix(er.Message, "."), ErrCredentials)
	case errors.As(err, &er):
		return fmt.Errorf("S3 bucket %s at %s: %s (%d %s)", bucket, host, er.Message, er.StatusCode, er.Code)
	}
	return fmt.Errorf("S3 endpoint %s %w: %v", host, ErrUnreachable, err)
}

func (b *Backend) key(name string) (string, error) {
	if err := blob.CheckName(name); err != nil {
		return "", err
	}
	return b.prefix + name, nil
}

// notFound reports whether err is S3's "no such key".
func notFound(err error) bool {
	var er minio.ErrorResponse
	return errors.As(err, &er) && (er.Code == "NoSuchKey" || er.StatusCode == http.StatusNotFound)
}

// Create implements blob.Backend.
func (b *Backend) Create(ctx context.Context, name string, r io.Reader) (bool, error) {
	k, err := b.key(name)
	if err != nil {
		return false, err
	}
	if ok, err := b.Exists(ctx, name); err != nil || ok {
		return false, err
	}
	size := int64(-1)
	if s, ok := r.(blob.Sized); ok {
		size = s.Size()
	} else {
		data, err := io.ReadAll(io.LimitReader(r, maxUnsized+1))
		if err == nil && len(data) > maxUnsized {
			err = fmt.Errorf("a source of unknown size over %d bytes", maxUnsized)
		}
		if err != nil {
			return false, fmt.Errorf("store: writing %s: %w", name, err)
		}
		r, size = bytes.NewReader(data), int64(len(data))
	}
	// One PUT (a blob of the store is far under S3's 5 GiB): multipart would make the service
	// assemble the parts, a second copy of every blob. The payload stays signed (its
	// SHA-256 in the signature): a service that keeps a body cut short by a dropped connection (an
	// instance killed mid-PUT) then refuses it, as versitygw does not with UNSIGNED-PAYLOAD.
	if _, err := b.c.PutObject(ctx, b.bucket, k, r, size, minio.PutObjectOptions{ContentType: "application/octet-stream",
		DisableMultipart: true}); err != nil {
		return false, fmt.Errorf("store: writing %s: %w", name, err)
	}
	return true, nil
}

// CreateBatch implements blob.Backend: one PUT after the other (each visible when it returns).
func (b *Backend) CreateBatch(ctx context.Context, blobs []blob.NewBlob) ([]bool, error) {
	return blob.CreateEach(ctx, b, blobs)
}

// Open implements blob.Backend: a small object is fetched whole, a larger one by ranged GETs.
func (b *Backend) Open(ctx context.Context, name string) (blob.Blob, error) {
	k, err := b.key(name)
	if err != nil {
		return nil, err
	}
	info, err := b.c.StatObject(ctx, b.bucket, k, minio.StatObjectOptions{})
	if notFound(err) {
		return nil, fmt.Errorf("store: %s: %w", name, blob.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", name, err)
	}
	o := &s3Blob{b: b, key: k, size: info.Size}
	if info.Size <= smallObject {
		if o.data, err = o.get(ctx, 0, info.Size); err != nil {
			return nil, fmt.Errorf("store: %s: %w", name, err)
		}
	}
	return o, nil
}

// Exists implements blob.Backend.
func (b *Backend) Exists(ctx context.Context, name string) (bool, error) {
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

// List implements blob.Backend (ListObjectsV2; S3 lists keys in order).
func (b *Backend) List(ctx context.Context, prefix string) ([]string, error) {
	var out []string
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // a return on an error stops minio's listing goroutine
	for o := range b.c.ListObjects(ctx, b.bucket, minio.ListObjectsOptions{Prefix: b.prefix + prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, fmt.Errorf("store: listing %s: %w", prefix, o.Err)
		}
		out = append(out, strings.TrimPrefix(o.Key, b.prefix))
	}
	return out, nil
}

// Quarantine implements blob.Backend: the object is moved under quarantine/.
func (b *Backend) Quarantine(ctx context.Context, name string) error {
	k, err := b.key(name)
	if err != nil {
		return err
	}
	return b.moveKey(ctx, name, k, b.prefix+"quarantine/"+strings.ReplaceAll(name, "/", "_"))
}

// PresignGet implements blob.Presigner (the Range header is not signed, so any range of the
// object may be asked with the one URL).
func (b *Backend) PresignGet(ctx context.Context, name string, ttl time.Duration) (string, error) {
	k, err := b.key(name)
	if err != nil {
		return "", err
	}
	u, err := b.c.PresignedGetObject(ctx, b.bucket, k, ttl, nil)
	if err != nil {
		return "", fmt.Errorf("presigning %s: %w", name, err)
	}
	return u.String(), nil
}

// Features implements blob.Backend: Create reads a blob whole (the PUT signs its payload), and every
// read is a request.
func (b *Backend) Features() blob.Features { return blob.Features{} }

// Close implements blob.Backend: the backend holds nothing for writing.
func (b *Backend) Close() error { return nil }

// s3Blob is an open object: its bytes when small, else ranged GETs.
type s3Blob struct {
	b    *Backend
	key  string
	size int64
	data []byte
}

func (o *s3Blob) Size() int64  { return o.size }
func (o *s3Blob) Close() error { return nil }

// ReadAt implements blob.Blob: one ranged GET under ctx, unless the object was read whole on Open.
func (o *s3Blob) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
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
		b, err := o.get(ctx, off, want)
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
func (o *s3Blob) get(ctx context.Context, off, n int64) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	obj, err := o.ranged(ctx, off, n)
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
func (o *s3Blob) ranged(ctx context.Context, off, n int64) (*minio.Object, error) {
	opts := minio.GetObjectOptions{}
	if err := opts.SetRange(off, off+n-1); err != nil {
		return nil, err
	}
	return o.b.c.GetObject(ctx, o.b.bucket, o.key, opts)
}

// Section streams n bytes at off with one ranged GET (a sequential reader of a large range, such
// as the content check of a registration, would otherwise make one GET per ReadAt).
func (o *s3Blob) Section(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	if o.data != nil || n == 0 {
		return io.NopCloser(io.NewSectionReader(blob.ReaderAt(ctx, o), off, n)), nil
	}
	obj, err := o.ranged(ctx, off, n)
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(obj, n), obj}, nil
}
