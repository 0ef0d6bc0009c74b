package migrate

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// state is the migration's record under .git/xet/: one line per migrated oid, appended (and
// synced) after each finished session, in a file per target. A rerun checks every object against
// the target anyway; the record tells what earlier runs finished (for the report) and survives a
// kill, since a line is only written once its session is registered.
type state struct {
	path string
	done map[string]bool
}

func loadState(gitDir, target string) (*state, error) {
	sum := sha256.Sum256([]byte(target))
	p := filepath.Join(gitDir, "xet", "migrate-"+hex.EncodeToString(sum[:8])+".state")
	s := &state{path: p, done: map[string]bool{}}
	f, err := os.Open(p)
	if os.IsNotExist(err) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the migration state %s: %w", p, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); isOid(l) {
			s.done[l] = true
		}
	}
	return s, sc.Err()
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
		s.done[o.Oid] = true
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
