package s3

import (
	"context"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/s3test"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob/blobtest"
)

// The backends' conformance suite on a real S3 server (versitygw), under a prefix.
func TestConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Backend {
		srv := s3test.Start(t)
		b, err := New(context.Background(), Config{Endpoint: srv.Endpoint, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey},
			srv.Bucket, "team/")
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}
