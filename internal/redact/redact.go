// Package redact owns how secrets are kept out of logs, errors and messages. A URL is never shown
// with the password of its user info (https://user:password@host/...; of an http(s) URL, a user
// name alone, which may be a token: https://TOKEN@host/...) or its query, which carries
// the signatures of signed URLs and, on some servers, tokens: URL shows one URL; Text finds the
// URLs in free text (an error message); Writer applies Text to every log line written through it,
// so that a URL no call site redacted (an error of a library, a value an LFS server sent) is
// caught before it is kept. Secrets takes the credentials a request sent out of what its server
// answered; Printable keeps terminal escapes of text from outside from reaching a terminal.
package redact

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// hidden stands for a removed password.
const hidden = "xxxxx"

// URL is s without the password of its user info (replaced by xxxxx, so that one sees there was
// one; of an http(s) URL, a user name without a password too, which may be a token), its query
// and its fragment. Of a string that does not parse as a URL only the scheme is
// kept, when it holds a '@', '?' or '#' (its parts cannot be told apart).
func URL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		if !strings.ContainsAny(s, "@?#") {
			return s
		}
		if i := strings.Index(s, "://"); i >= 0 {
			return s[:i+3] + "…"
		}
		return "(a URL)"
	}
	if u.User != nil {
		_, has := u.User.Password()
		switch scheme := strings.ToLower(u.Scheme); {
		case has:
			u.User = url.UserPassword(u.User.Username(), hidden)
		case scheme == "http" || scheme == "https":
			// A user name alone is how some hosts take a token (https://TOKEN@host/…: Azure
			// DevOps, GitHub); ssh's user (git@) is a name.
			u.User = url.User(hidden)
		}
	}
	u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = "", false, "", ""
	return u.String()
}

// inText matches a URL in free text or in a JSON string: a scheme, "://", and everything up to
// white space, a quote, a backslash (JSON's escape) or an angle bracket, but for punctuation that
// ends a sentence or an error's part (":", ",", ";", ".", ")").
// Compiled on first use: every agent process links this package, and most never log a URL.
var inText = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'\\<>]*[^\s"'\\<>:,;.)]`)
})

// Text is s with every URL in it shown by URL.
func Text(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return inText().ReplaceAllStringFunc(s, URL)
}

// Secrets is s, text a server sent back (an error page that echoes the request's headers), with
// every form of the header values given replaced by "[redacted]": each value whole, the part after
// its scheme ("Bearer ", "Basic "), and the password inside Basic's base64. Parts shorter than 4
// bytes are left alone: they would blank ordinary words.
func Secrets(s string, headerValues ...string) string {
	for _, v := range headerValues {
		scheme, tok, _ := strings.Cut(v, " ")
		parts := []string{v, tok}
		if b, err := base64.StdEncoding.DecodeString(tok); err == nil && strings.EqualFold(scheme, "Basic") {
			if _, pass, ok := strings.Cut(string(b), ":"); ok {
				parts = append(parts, pass)
			}
		}
		for _, p := range parts {
			if len(p) >= 4 {
				s = strings.ReplaceAll(s, p, "[redacted]")
			}
		}
	}
	return s
}

// Printable is s as a terminal may show it: s itself when every rune of it is printable (or a
// tab), else s quoted as a Go string ("a\x1b[2Jb"), as git quotes such paths. For text that comes
// from outside (a path in a cloned repository, a server's error message): a terminal escape in it
// would otherwise act on the user's terminal (rewrite what is shown, set the title, or, with some
// terminals, the clipboard).
func Printable(s string) string {
	for _, r := range s {
		if r != '\t' && (!unicode.IsPrint(r) || r == unicode.ReplacementChar) {
			return strconv.Quote(s)
		}
	}
	return s
}

// Writer returns a writer that writes each Write's bytes to w with their URLs shown by URL (zerolog
// writes one line per Write). It reports len(p) written when w took the redacted line whole.
func Writer(w io.Writer) io.Writer { return writer{w} }

type writer struct{ w io.Writer }

func (r writer) Write(p []byte) (int, error) {
	if !bytes.Contains(p, []byte("://")) {
		return r.w.Write(p)
	}
	if _, err := io.WriteString(r.w, Text(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
