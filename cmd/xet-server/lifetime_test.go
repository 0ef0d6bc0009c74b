package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// Every goroutine a server run starts (temp cleaning, SIGHUP reloads, the certificate poll,
// in-process gc, the listeners) has ended when the run returns: none can touch the store after it
// closed.
func TestServeJoinsItsGoroutines(t *testing.T) {
	before := goleak.IgnoreCurrent()
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeCert(t, cert, key, 1)
	_, logs, stop := startServer(t, "--data", filepath.Join(dir, "data"), "--tls-cert", cert, "--tls-key", key,
		"--tls-reload-interval", "5ms", "--gc-every", "5ms", "--metrics-listen", "127.0.0.1:0")
	if !testutil.Eventually(10*time.Second, func() bool { return strings.Contains(logs.String(), "gc done") }) {
		t.Fatalf("no gc ran:\n%s", logs.String())
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d after SIGTERM: %s", code, logs.String())
	}
	goleak.VerifyNone(t, before)
}
