package localshards

import (
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// ShardCacheSubdir is the folder of an endpoint directory that holds the cached shards (xet-core's
// shard.cache_subdir).
const ShardCacheSubdir = "shard-cache"

// Dirs are the directories the cache root is found from, as the caller read them from the
// environment (empty = unset).
type Dirs struct {
	HFXetCache   string // $HF_XET_CACHE
	HFHome       string // $HF_HOME
	XDGCacheHome string // $XDG_CACHE_HOME
	Home         string // the user's home directory
}

// Root returns the cache root, first match wins: HF_XET_CACHE, HF_HOME/xet,
// XDG_CACHE_HOME/huggingface/xet, Home/.cache/huggingface/xet.
func (d Dirs) Root() (string, error) {
	switch {
	case d.HFXetCache != "":
		return d.HFXetCache, nil
	case d.HFHome != "":
		return filepath.Join(d.HFHome, "xet"), nil
	case d.XDGCacheHome != "":
		return filepath.Join(d.XDGCacheHome, "huggingface", "xet"), nil
	case d.Home != "":
		return filepath.Join(d.Home, ".cache", "huggingface", "xet"), nil
	}
	return "", errors.New("shard cache root: no HF_XET_CACHE, HF_HOME or XDG_CACHE_HOME, and no home directory")
}

// EndpointDir returns root/<folder of the CAS endpoint>, named as xet-core names it: the first 16
// characters of endpoint with every non-alphanumeric character replaced by '_', a '-', and the first
// 16 characters of the URL-safe unpadded base64 of hash.Chunk(endpoint).
func EndpointDir(root, endpoint string) string {
	return filepath.Join(root, EndpointFolder(endpoint))
}

// EndpointFolder is the last element of EndpointDir.
func EndpointFolder(endpoint string) string {
	var b strings.Builder
	n := 0
	for _, r := range endpoint {
		if n == 16 {
			break
		}
		n++
		if unicode.IsLetter(r) || unicode.IsNumber(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	h := hash.Chunk([]byte(endpoint))
	b.WriteByte('-')
	b.WriteString(base64.RawURLEncoding.EncodeToString(h[:])[:16])
	return b.String()
}

// DefaultSizeLimit is the soft limit of the shard cache in bytes when Options.SizeLimit sets none
// (xet-core's 16 GB, which HF_XET_SHARD_CACHE_SIZE_LIMIT overrides in its clients).
const DefaultSizeLimit int64 = 16_000_000_000

// ParseSize parses a byte count such as "16000000000", "16GB", "512 MiB".
func ParseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{
		{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
		{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12}, {"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"t", 1e12}, {"b", 1},
	} {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: want a non-negative byte count with an optional unit", s)
	}
	if n > 0 && mult > (1<<63-1)/n {
		return 0, errors.New("size " + strconv.Quote(s) + " overflows")
	}
	return n * mult, nil
}
