package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// FormatVersion is the layout this release reads and writes. Version 1 is the layout before the
// version was recorded (no "format" blob); version 2 has the same entries plus the "format" blob;
// version 3 adds the records of what each repository uploaded (uploads.go: read by the access
// rule and the usage) and may read and reference (access.go), which Open writes for the files of
// an older store (upgrade.go). A store of a version above FormatVersion is refused
// (ErrNewerFormat): a release before 3 would serve a store of 3 without its isolation.
const FormatVersion = 3

// formatName is the blob that records a store's format version: "xet-store-format N\n".
const formatName = "format"

const formatPrefix = "xet-store-format "

// ErrNewerFormat: the store was written by a newer release whose layout this one cannot read.
var ErrNewerFormat = errors.New("store format is newer than this release reads")

// formatTimeout bounds reading and recording the version at Open.
const formatTimeout = 30 * time.Second

// checkFormat reads the store's format version (1 when none is recorded) and refuses one above
// FormatVersion. Open upgrades an older one (upgrade.go).
func checkFormat(be blob.Backend, where string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), formatTimeout)
	defer cancel()
	b, err := readFormat(ctx, be)
	switch {
	case errors.Is(err, blob.ErrNotFound):
		return 1, nil
	case err != nil:
		return 0, fmt.Errorf("store %s: reading its format version: %w", where, err)
	}
	v, err := parseFormat(b)
	if err != nil {
		return 0, fmt.Errorf("store %s: %w", where, err)
	}
	if v > FormatVersion {
		return v, fmt.Errorf("store %s has format version %d; this release reads versions 1 to %d: upgrade xet-server (and git-xet-transfer) to open it: %w",
			where, v, FormatVersion, ErrNewerFormat)
	}
	return v, nil
}

func readFormat(ctx context.Context, be blob.Backend) ([]byte, error) {
	b, err := be.Open(ctx, formatName)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	if b.Size() > 256 {
		return nil, fmt.Errorf("format blob of %d bytes", b.Size())
	}
	p := make([]byte, b.Size())
	n, err := b.ReadAt(ctx, p, 0)
	if n == len(p) {
		err = nil
	}
	return p[:n], err
}

// parseFormat reads "xet-store-format N".
func parseFormat(b []byte) (int, error) {
	s := strings.TrimSpace(string(b))
	if !strings.HasPrefix(s, formatPrefix) {
		return 0, fmt.Errorf("format blob %q is not %q followed by a version", s, formatPrefix)
	}
	v, err := strconv.Atoi(strings.TrimPrefix(s, formatPrefix))
	if err != nil || v < 1 {
		return 0, fmt.Errorf("format blob %q: bad version", s)
	}
	return v, nil
}

// Format is the store's format version, as read (or recorded) when it was opened.
func (s *Store) Format() int { return s.format }
