// Command xet-server is a self-hostable Xet CAS with Hub-style Git LFS routes, for a team's own
// repositories: git-lfs (basic transfer) and Xet clients (xet transfer, CAS API v1/v2) both work
// against it. Usage:
//
//	xet-server [serve] --listen ADDR --data DIR [--users FILE] [flags]
//	xet-server hash-password < password
//	xet-server fsck [--clean-temp] [--verify-data [--repair]] DIR
//	xet-server stats [--json] (DIR | --storage URL)
//	xet-server --version
//
// Without --users it runs open (no authentication) and refuses non-loopback addresses.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/git-xet-transfer/git-xet-transfer/internal/buildinfo"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "serve":
			return runServe(args[1:], stderr, nil)
		case "hash-password":
			return runHashPassword(args[1:], stdin, stdout, stderr)
		case "fsck":
			return runFsck(args[1:], stdout, stderr)
		case "gc":
			return runGC(args[1:], stdout, stderr)
		case "stats":
			return runStats(args[1:], stdout, stderr)
		case "version", "--version":
			fmt.Fprintf(stdout, "xet-server %s\n", buildinfo.Get())
			return 0
		case "help", "-h", "--help":
			usage(stdout)
			return 0
		}
	}
	return runServe(args, stderr, nil)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, `usage:
  xet-server [serve] --listen ADDR --data DIR [--users FILE] [flags]   run the server (serve -h: flags)
  xet-server hash-password                                            read a password on stdin, print its hash
  xet-server --version                                                print the version, commit and its date
  xet-server fsck [--clean-temp] [--verify-data [--repair]] (DIR | --storage URL)
                                                                      check a store
  xet-server gc [--dry-run] [--grace 24h] (DIR | --storage URL)       delete xorbs no file names (uploads never
                                                                      finished), two runs a grace period apart;
                                                                      safe while servers run
  xet-server stats [--json] (DIR | --storage URL)                    logical and stored bytes, dedupe ratio,
                                                                      files and xorbs, per repository

On S3 (AWS, MinIO, Ceph RGW, R2, versitygw), any number of instances over one bucket behind any
HTTP load balancer; they share only the bucket and the signing secret:

  export AWS_ENDPOINT_URL=http://minio.internal:9000 AWS_REGION=us-east-1 \
         AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=...           # or ~/.aws/credentials
  head -c 32 /dev/urandom | xxd -p -c 64 > /etc/xet/secret          # once; copy it to every instance
  xet-server --listen 10.0.0.1:8080 --data /var/lib/xet --storage s3://xet/cas \
    --secret-file /etc/xet/secret --users /etc/xet/users --public-url https://xet.example.com
  xet-server --listen 10.0.0.2:8080 ...same flags...                # a second instance
  xet-server gc --storage s3://xet/cas                             # daily, from one machine (cron)`)
}
