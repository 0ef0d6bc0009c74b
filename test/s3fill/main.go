// Command s3fill puts N small objects into an S3 bucket (for test/s3-startup.sh): names of the
// store's xorb layout under a prefix, so that a store there lists them. Endpoint and keys from
// AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"net/url"
	"os"
	"sync"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

func main() {
	n := flag.Int("n", 100000, "objects to put")
	bucket := flag.String("bucket", "", "bucket")
	prefix := flag.String("prefix", "", "key prefix, e.g. cas/")
	workers := flag.Int("workers", 32, "PUTs in flight")
	flag.Parse()
	u, err := url.Parse(os.Getenv("AWS_ENDPOINT_URL"))
	if err != nil || u.Host == "" || *bucket == "" {
		fmt.Fprintln(os.Stderr, "s3fill: set AWS_ENDPOINT_URL and -bucket")
		os.Exit(2)
	}
	c, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewEnvAWS(), Secure: u.Scheme == "https", BucketLookup: minio.BucketLookupPath, Region: "us-east-1"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "s3fill:", err)
		os.Exit(1)
	}
	jobs := make(chan int)
	errs := make(chan error, *workers)
	var wg sync.WaitGroup
	for range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				sum := sha256.Sum256([]byte(fmt.Sprint(i)))
				h := hex.EncodeToString(sum[:])
				body := bytes.Repeat([]byte{byte(i)}, 100)
				if _, err := c.PutObject(context.Background(), *bucket, *prefix+"xorbs/"+h[:2]+"/"+h, bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 0; i < *n; i++ {
		select {
		case jobs <- i:
		case err := <-errs:
			fmt.Fprintln(os.Stderr, "s3fill:", err)
			os.Exit(1)
		}
	}
	close(jobs)
	wg.Wait()
}
