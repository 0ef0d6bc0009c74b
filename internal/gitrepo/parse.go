package gitrepo

import "strings"

// Entry is one line of git's config listing: a key as git prints it (section and variable name
// lowercased, a subsection as written) and its value. NoValue marks a key written without "=" (a
// boolean true to git).
type Entry struct {
	Key     string
	Value   string
	NoValue bool
}

// ParseList parses the output of `git config -l -z`: NUL-terminated records, each "key\nvalue",
// or the key alone when it has no value. A value may hold newlines. Empty records are skipped.
func ParseList(out string) []Entry {
	var entries []Entry
	for len(out) > 0 {
		rec, rest, _ := strings.Cut(out, "\x00")
		out = rest
		if rec == "" {
			continue
		}
		k, v, hasValue := strings.Cut(rec, "\n")
		entries = append(entries, Entry{Key: k, Value: v, NoValue: !hasValue})
	}
	return entries
}

// foldKey is the form of key that git prints: the section and the variable name lowercased, the
// middle (a subsection: a remote's name, a URL, a branch) kept as it is. git-lfs folds the same way.
func foldKey(key string) string {
	first := strings.IndexByte(key, '.')
	last := strings.LastIndexByte(key, '.')
	if first < 0 || first == last {
		return strings.ToLower(key)
	}
	return strings.ToLower(key[:first]) + key[first:last] + strings.ToLower(key[last:])
}
