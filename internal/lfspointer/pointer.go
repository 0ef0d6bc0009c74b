// Package lfspointer reads git-lfs pointer files as git-lfs does (its lfs.DecodePointer, which no
// process of this project links: that package imports lfsapi, whose init runs git), and writes
// them as its clean filter does. Migrate's history walk and the mount's tree both find LFS files
// with it; the benchmarks' set-up (test/lfsstage) writes pointers with it.
package lfspointer

import (
	"bufio"
	"bytes"
	"regexp"
	"strconv"
	"strings"

	"github.com/git-xet-transfer/git-xet-transfer/internal/lfsobject"
)

// MaxSize is git-lfs's cutoff: a blob of this many bytes or more is never a pointer.
const MaxSize = 1024

// Pointer is what a pointer names: the object's oid (64 lowercase hex) and size.
type Pointer struct {
	Oid  string
	Size int64
}

var pointerExtRE = regexp.MustCompile(`\Aext-\d-\w+`)

// EmptyOid is the SHA-256 of no bytes.
const EmptyOid = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// Decode reads data as git-lfs reads a pointer (its lfs.DecodePointer, which this package
// does not import: that package links lfsapi, whose init runs git in every process): ok when
// git-lfs decodes it without error to an object with an oid. The rules: an empty blob is the
// empty object's pointer; surrounding whitespace is
// ignored; the text names git-lfs, git-media or hawser; non-empty lines are "key value", version,
// then oid, then size, with ext-<digit>-<name> lines anywhere between; the version is one of the
// spec's three URLs; oids are sha256:<64 lowercase hex>; the size a non-negative decimal; extension
// priorities distinct. FuzzDecodePointer holds it to git-lfs's decoder.
func Decode(data []byte) (Pointer, bool) {
	if len(data) == 0 { // git-lfs reads an empty blob as the pointer of the empty object
		return Pointer{Oid: EmptyOid, Size: 0}, true
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || !(bytes.Contains(data, []byte("git-media")) || bytes.Contains(data, []byte("hawser")) ||
		bytes.Contains(data, []byte("git-lfs"))) {
		return Pointer{}, false
	}
	want := []string{"version", "oid", "size"}
	vals := map[string]string{}
	exts := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		key, value, found := strings.Cut(line, " ")
		if !found || len(vals) == len(want) {
			return Pointer{}, false
		}
		switch {
		case key == want[len(vals)]:
			vals[key] = value
		case pointerExtRE.MatchString(key):
			exts[key] = value
		default:
			return Pointer{}, false
		}
	}
	if sc.Err() != nil || !knownVersion(vals["version"]) {
		return Pointer{}, false
	}
	oid, ok := sha256Oid(vals["oid"])
	if !ok {
		return Pointer{}, false
	}
	size, err := strconv.ParseInt(vals["size"], 10, 64)
	if err != nil || size < 0 || !validExtensions(exts) {
		return Pointer{}, false
	}
	return Pointer{Oid: oid, Size: size}, true
}

// Encode is the pointer git-lfs's clean filter writes for p (its Pointer.Encoded): the spec's
// version, oid and size lines, each ending in a newline, and no bytes for the empty object.
func (p Pointer) Encode() []byte {
	if p.Size == 0 {
		return nil
	}
	return []byte("version https://git-lfs.github.com/spec/v1\noid sha256:" + p.Oid + "\nsize " + strconv.FormatInt(p.Size, 10) + "\n")
}

func knownVersion(v string) bool {
	switch v {
	case "https://git-lfs.github.com/spec/v1", "https://hawser.github.com/spec/v1", "http://git-media.io/v/2":
		return true
	}
	return false
}

// sha256Oid is the hex of "sha256:<hex>".
func sha256Oid(v string) (string, bool) {
	typ, oid, ok := strings.Cut(v, ":")
	return oid, ok && typ == "sha256" && lfsobject.ValidOid(oid)
}

// validExtensions: each ext-<priority>-<name> with a sha256 oid, no priority twice.
func validExtensions(exts map[string]string) bool {
	seen := map[int]bool{}
	for key, value := range exts {
		parts := strings.SplitN(key, "-", 3)
		if len(parts) != 3 {
			return false
		}
		prio, err := strconv.Atoi(parts[1])
		if err != nil || prio < 0 || seen[prio] {
			return false
		}
		seen[prio] = true
		if _, ok := sha256Oid(value); !ok {
			return false
		}
	}
	return true
}
