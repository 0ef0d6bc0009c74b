package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --tls-client-ca needs TLS, authenticates on its own (a public address without a users file),
// and refuses a file without a certificate.
func TestTLSClientCAFlags(t *testing.T) {
	base := serveFlags{data: t.TempDir(), listen: "0.0.0.0:8080"}
	if _, err := checkFlags(base); err == nil || !strings.Contains(err.Error(), "--tls-client-ca") {
		t.Errorf("a public address without authentication: %v, want a refusal naming --tls-client-ca", err)
	}
	f := base
	f.tlsClientCA = "ca.pem"
	if _, err := checkFlags(f); err == nil || !strings.Contains(err.Error(), "--tls-cert") {
		t.Errorf("--tls-client-ca without --tls-cert: %v, want a refusal", err)
	}
	f.tlsCert, f.tlsKey = "c.pem", "k.pem"
	if _, err := checkFlags(f); err != nil {
		t.Errorf("--tls-client-ca with TLS on a public address: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(bad, []byte("not a certificate"), 0o600)
	if _, err := clientCertConfig(bad); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("a CA file without a certificate: %v", err)
	}
	if c, err := clientCertConfig(""); c != nil || err != nil {
		t.Errorf("no CA file: %v %v, want no TLS config", c, err)
	}
}
