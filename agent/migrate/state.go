package migrate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// state is the migration's record under .git/xet/: one line per migrated oid, appended (and
// synced) after each finished session, in a file per target. A line is written only once its
// session is registered, so the record survives a kill; it is never trusted: a rerun asks the
// target about every object.
type state struct {
	path string
}

func newState(gitDir, target string) *state {
	sum := sha256.Sum256([]byte(target))
	return &state{path: filepath.Join(gitDir, "xet", "migrate-"+hex.EncodeToString(sum[:8])+".state")}
}

// record appends the oids of a finished session.
func (s *state) record(objs []*Object) error {
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(s.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("writing the migration state: %w", err)
	}
	var b strings.Builder
	for _, o := range objs {
		b.WriteString(o.Oid + "\n")
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
