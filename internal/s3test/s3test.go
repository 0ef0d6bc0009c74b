// Package s3test starts a real S3 server for tests: versitygw (its posix backend in a temp dir) on
// a free loopback port, with a fresh bucket. Only tests import it.
package s3test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Server is a running S3 server with one bucket.
type Server struct {
	Endpoint  string // http://127.0.0.1:PORT
	AccessKey string
	SecretKey string
	Bucket    string
	Dir       string // where versitygw keeps the objects (DIR/BUCKET/...)
}

// Start starts versitygw (from PATH) and creates a bucket. Without versitygw the test is skipped,
// or fails when CI=true.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("versitygw")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("versitygw is not installed (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)")
		}
		t.Skip("versitygw is not installed")
	}
	s := &Server{AccessKey: "testaccess", SecretKey: "testsecret-0123456789", Bucket: "xet-test", Dir: t.TempDir()}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var log strings.Builder
	cmd := exec.Command(bin, "--access", s.AccessKey, "--secret", s.SecretKey, "--port", addr, "posix", s.Dir)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	s.Endpoint = "http://" + addr
	c, err := minio.New(addr, &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""), Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err = c.MakeBucket(context.Background(), s.Bucket, minio.MakeBucketOptions{Region: "us-east-1"})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw at %s: %v\n%s", addr, err, log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return s
}

// Env returns the standard AWS variables pointing at s.
func (s *Server) Env() []string {
	return []string{"AWS_ENDPOINT_URL=" + s.Endpoint, "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=" + s.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s.SecretKey}
}

// URL is the storage URL of the bucket with prefix.
func (s *Server) URL(prefix string) string { return fmt.Sprintf("s3://%s/%s", s.Bucket, prefix) }
