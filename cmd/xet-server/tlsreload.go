package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// certReloader holds the TLS certificate the server presents and loads it again from its files on
// reload (SIGHUP) or when a poll sees a file changed: new connections get the new certificate,
// connections already open keep theirs. A pair that fails to load keeps the previous one.
type certReloader struct {
	certFile, keyFile string
	log               zerolog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	modTime time.Time // the later of the two files' modification times when last loaded
	size    int64     // their sizes summed, which a rewrite within one mtime tick changes
}

func newCertReloader(certFile, keyFile string, log zerolog.Logger) (*certReloader, error) {
	c := &certReloader{certFile: certFile, keyFile: keyFile, log: log}
	if err := c.reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// getCertificate is tls.Config.GetCertificate.
func (c *certReloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cert, nil
}

// stamp is what a poll compares: the files' latest modification time and total size.
func (c *certReloader) stamp() (time.Time, int64, error) {
	var latest time.Time
	var size int64
	for _, p := range []string{c.certFile, c.keyFile} {
		fi, err := os.Stat(p)
		if err != nil {
			return time.Time{}, 0, err
		}
		if fi.ModTime().After(latest) {
			latest = fi.ModTime()
		}
		size += fi.Size()
	}
	return latest, size, nil
}

// reload loads the pair from its files.
func (c *certReloader) reload() error {
	mt, size, err := c.stamp()
	if err != nil {
		return fmt.Errorf("TLS certificate: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("TLS certificate %s, key %s: %w", c.certFile, c.keyFile, err)
	}
	c.mu.Lock()
	c.cert, c.modTime, c.size = &cert, mt, size
	c.mu.Unlock()
	return nil
}

// reloadLogged reloads and says so; a failure keeps the certificate in use.
func (c *certReloader) reloadLogged(why string) {
	if err := c.reload(); err != nil {
		c.log.Error().Err(err).Str("trigger", why).Msg("TLS certificate reload failed; keeping the previous certificate")
		return
	}
	c.log.Info().Str("trigger", why).Str("cert", c.certFile).Msg("TLS certificate reloaded")
}

// changed reports whether the files differ from what was last loaded.
func (c *certReloader) changed() bool {
	mt, size, err := c.stamp()
	if err != nil {
		return false // mid-rotation: look again at the next poll
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return !mt.Equal(c.modTime) || size != c.size
}

// poll reloads whenever the files change, checking every interval until ctx ends.
func (c *certReloader) poll(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if c.changed() {
				c.reloadLogged("file change")
			}
		}
	}
}
